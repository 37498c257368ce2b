"""The Markdown report, its plots, and run comparison — numbers checked against the JSON."""

from __future__ import annotations

import re

import pytest

from rag_app.eval.report import (
    compare,
    fmt,
    load_summary,
    refusal_matrix,
    render_compare_markdown,
    write_report,
)
from rag_app.eval.runner import METRICS, EvalRun, summarize_run

from .records import sample_records, sample_run

PNG = b"\x89PNG\r\n\x1a\n"


def table_rows(markdown: str, heading: str) -> list[list[str]]:
    """The body rows of the first table after ``heading``."""
    section = markdown.split(heading, 1)[1]
    rows = []
    for line in section.splitlines()[1:]:
        if line.startswith("| ") and not line.startswith("| ---"):
            rows.append([c.strip() for c in line.strip().strip("|").split(" | ")])
        elif rows and not line.startswith("|"):
            break
    return rows[1:]  # drop the header row


@pytest.fixture
def written(tmp_path):
    run = sample_run()
    json_path = run.save(tmp_path / "out" / "run.json")
    path = write_report(run, tmp_path / "out" / "report.md", title="Tiny")
    return run, json_path, path, path.read_text(encoding="utf-8")


def test_plots_are_pngs_next_to_the_report_and_linked(written):
    _, _, path, text = written
    for name in ("recall", "refusals", "latency"):
        png = path.parent / f"report_{name}.png"
        assert png.read_bytes()[:8] == PNG
        assert png.stat().st_size > 2000  # something was drawn
        assert f"![{name}](report_{name}.png)" in text


def test_overall_table_matches_the_json(written):
    _, json_path, _, text = written
    overall = load_summary(json_path)["overall"]
    rows = {r[0]: r[1] for r in table_rows(text, "## Overall")}
    assert len(rows) == len(METRICS)
    for key in METRICS:
        label = next(k for k in rows if k.replace("@5", "@k") == METRICS[key])
        assert rows[label] == fmt(key, overall[key]), key
    # and the hand-computed values themselves
    assert rows["case pass"] == "60.0%" and rows["Recall@5"] == "66.7%"
    assert rows["MRR@5"] == "0.500" and rows["false refusal"] == "25.0%"
    assert rows["retrieve ms p95"] == "90"


def test_category_table_matches_the_json(written):
    _, json_path, _, text = written
    summary = load_summary(json_path)
    rows = table_rows(text, "## Per category")
    assert [r[0] for r in rows] == ["policy", "table", "unanswerable", "**all**"]
    policy = rows[0]
    cats = summary["categories"]
    assert policy[1] == str(cats["policy"]["n"])
    assert policy[2] == fmt("case_pass_rate", cats["policy"]["case_pass_rate"]) == "50.0%"
    assert rows[2][3] == "–"  # no Recall for unanswerable questions


def test_refusal_matrix_counts_and_table(written):
    run, _, _, text = written
    assert refusal_matrix(run.records) == {
        "answerable": {"answered": 3, "refused": 1},
        "unanswerable": {"answered": 0, "refused": 1},
    }
    assert table_rows(text, "## Refusals") == [["answerable", "3", "1"], ["unanswerable", "0", "1"]]


def test_failed_cases_are_listed_with_the_reason(written):
    _, _, _, text = written
    assert "## Failed cases (2)" in text
    assert re.search(r"\| q2 \| policy \| refused \(attribute_missing\) \|", text)
    assert re.search(r"\| q3 \| table \| answer lacks the reference values \|", text)


def test_ragas_scores_are_rendered_when_present(tmp_path):
    run = sample_run()
    run.ragas = {
        "metrics": ["chrf"],
        "llm": False,
        "overall": {"chrf": 0.25},
        "categories": {"policy": {"chrf": 0.5}},
    }
    text = write_report(run, tmp_path / "r.md").read_text(encoding="utf-8")
    assert "## ragas scores (offline, no LLM" in text
    assert table_rows(text, "## ragas scores") == [["policy", "0.500"], ["**all**", "0.250"]]


class TestCompare:
    def test_deltas_per_metric_and_category(self):
        a = sample_run()
        records = sample_records()
        records[1].refused, records[1].answer = False, "每90天修改一次。"  # q2 now answered
        from rag_app.eval.runner import judge

        judge(records[1])
        b = EvalRun(k=5, records=records, summary=summarize_run(records, 5))
        deltas = compare(a, b)
        assert deltas["overall"]["case_pass_rate"] == {"a": 0.6, "b": 0.8, "delta": 0.2}
        assert deltas["overall"]["false_refusal_rate"]["delta"] == -0.25
        assert deltas["categories"]["policy"]["case_pass_rate"]["delta"] == 0.5
        assert deltas["categories"]["table"]["case_pass_rate"]["delta"] == 0.0
        assert deltas["categories"]["unanswerable"]["recall_at_k"]["delta"] is None
        text = render_compare_markdown(deltas, "a", "b")
        assert "+20.0 pp" in text and "-25.0 pp" in text

    def test_a_category_in_one_run_only_has_no_deltas(self):
        a = sample_run()
        b = EvalRun(k=5, records=a.records[:2], summary=summarize_run(a.records[:2], 5))
        deltas = compare(a, b)
        assert deltas["categories"]["table"]["case_pass_rate"] == {
            "a": 0.5,
            "b": None,
            "delta": None,
        }

    def test_load_summary_rejects_other_json(self, tmp_path):
        bad = tmp_path / "x.json"
        bad.write_text('{"hello": 1}', encoding="utf-8")
        with pytest.raises(ValueError, match="not an evaluation JSON"):
            load_summary(bad)
