"""`rag eval` end to end on a tiny corpus: ingest into a temporary KB, report, JSON, compare."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from rag_app.cli import app
from rag_app.eval.report import fmt
from rag_app.eval.runner import EvalRun, summarize_run

runner = CliRunner()


def test_eval_ingests_evaluates_and_writes_report_and_json(shared_model, corpus, tmp_path):
    docs, qa = corpus
    report, out = tmp_path / "r" / "report.md", tmp_path / "r" / "run.json"
    args = ["eval", str(qa), "--docs", str(docs), "--report", str(report), "--json", str(out)]
    result = runner.invoke(app, [*args, "--k", "3", "--ragas"])
    assert result.exit_code == 0, result.output

    run = EvalRun.load(out)
    assert run.k == 3 and len(run.records) == 5
    assert run.summary == summarize_run(run.records, 3)
    overall = run.summary["overall"]
    assert overall["n_answerable"] == 4 and overall["n_unanswerable"] == 1
    assert overall["recall_at_k"] is not None and overall["case_pass_rate"] is not None
    assert set(run.summary["categories"]) == {"policy", "table", "faq", "unanswerable"}
    # the chunks came from the temporary KB built from --docs; sources relative to it
    sources = {c.source for r in run.records for c in (*r.retrieved, *r.sources)}
    assert sources <= {"policy/security.md", "travel.md", "faq.txt"}

    assert run.ragas is not None and run.ragas["llm"] is False
    assert run.ragas["overall"]["id_context_recall"] is not None

    text = report.read_text(encoding="utf-8")
    assert "## ragas scores (offline, no LLM" in text and "ragas: " in result.stdout
    assert f"| case pass | {fmt('case_pass_rate', overall['case_pass_rate'])} |" in text
    assert "3 ingested from" in text
    assert "### Gate thresholds on these questions" in text and "| balanced |" in text
    assert all(
        (report.parent / f"report_{p}.png").is_file() for p in ("recall", "refusals", "latency")
    )
    # the terminal summary: one row per category plus "all"
    for name in ("policy", "table", "faq", "unanswerable", "all"):
        assert name in result.stdout


def test_eval_json_to_stdout_retrieve_only_into_a_kept_kb(shared_model, corpus, tmp_path):
    docs, qa = corpus
    kb_dir = tmp_path / "kept"
    args = ["eval", str(qa), "--docs", str(docs), "--kb", str(kb_dir), "--json", "-"]
    result = runner.invoke(app, [*args, "--retrieve-only", "--compact"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert all(r["ask_ms"] is None and r["passed"] is None for r in data["records"])
    assert all(c["text"] == "" for r in data["records"] for c in r["retrieved"])
    assert data["summary"]["overall"]["case_pass_rate"] is None
    assert data["summary"]["overall"]["recall_at_k"] == 1.0
    # with --kb the knowledge base stays for later runs (`rag eval QA --kb DIR` without --docs)
    listed = json.loads(runner.invoke(app, ["docs", "--kb", str(kb_dir), "--json"]).stdout)
    assert len(listed) == 3
    again = runner.invoke(
        app, ["eval", str(qa), "--kb", str(kb_dir), "--json", "-", "--limit", "2"]
    )
    assert again.exit_code == 0 and len(json.loads(again.stdout)["records"]) == 2


def test_eval_calibrates_the_gate_on_its_own_questions(shared_model, corpus, tmp_path):
    """Every asked question records the answer model's probability; the run's JSON holds the
    thresholds for target false-refusal rates and the presets, each with what it refuses, and
    --calibrate prints them. At the run's own threshold they reproduce the run's refusals."""
    docs, qa = corpus
    out = tmp_path / "run.json"
    args = ["eval", str(qa), "--docs", str(docs), "--json", str(out), "--calibrate"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    run = EvalRun.load(out)
    assert all(r.confidence is not None and 0 <= r.confidence <= 1 for r in run.records)
    cal = run.calibration
    assert cal is not None and (cal.answerable, cal.unanswerable) == (4, 1)
    rows = {r.label: r for r in cal.rows}
    assert {"lenient", "balanced", "strict"} <= set(rows)
    used = next(r for r in cal.rows if r.threshold == round(cal.run_threshold, 6))
    assert used.exact
    assert used.false_refusal == run.summary["overall"]["false_refusal_rate"]
    assert used.unanswerable_refused == run.summary["overall"]["no_answer_accuracy"]
    assert "gate thresholds on these questions" in result.stdout
    assert "RAG_GATE_THRESHOLD=" in result.stdout


def test_compare_prints_deltas_and_json(tmp_path):
    from .records import sample_records, sample_run

    a = sample_run().save(tmp_path / "a.json")
    records = sample_records()[:2]
    b = EvalRun(k=5, records=records, summary=summarize_run(records, 5)).save(tmp_path / "b.json")

    human = runner.invoke(app, ["eval", "--compare", str(a), str(b)])
    assert human.exit_code == 0, human.output
    assert "b.json vs a.json" in human.stdout and "-10.0 pp" in human.stdout  # case pass 60 → 50
    assert "policy" in human.stdout and "table" in human.stdout

    machine = runner.invoke(app, ["eval", "--compare", str(a), str(b), "--json", "-"])
    deltas = json.loads(machine.stdout)
    assert deltas["overall"]["case_pass_rate"] == {"a": 0.6, "b": 0.5, "delta": -0.1}
    assert deltas["categories"]["policy"]["n"]["delta"] == 0


def test_usage_errors_exit_2(tmp_path, corpus):
    assert runner.invoke(app, ["eval"]).exit_code == 2
    assert runner.invoke(app, ["eval", str(tmp_path / "missing.jsonl")]).exit_code == 2
    _, qa = corpus
    empty = runner.invoke(app, ["eval", str(qa), "--kb", str(tmp_path / "empty")])
    assert empty.exit_code == 2 and "pass --docs DIR" in " ".join(empty.output.split())
    bad = tmp_path / "bad.json"
    bad.write_text("[]", encoding="utf-8")
    result = runner.invoke(app, ["eval", "--compare", str(bad), str(bad)])
    assert result.exit_code == 2 and "not an evaluation JSON" in " ".join(result.output.split())
