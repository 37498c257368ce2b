"""``rag eval``: evaluate a knowledge base on a question file, or compare two saved runs."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from rag_app.cli.common import (
    ApiKeyOpt,
    KbOpt,
    ServerOpt,
    TenantOpt,
    emit_json,
    err,
    out,
    remote_kb,
)

# short column labels of the eval summary and --compare tables
_EVAL_COLUMNS = {
    "case_pass_rate": "pass",
    "recall_at_k": "R@k",
    "mrr_at_k": "MRR",
    "source_hit_rate": "src",
    "keyword_hit_rate": "kw",
    "no_answer_accuracy": "noA",
    "false_refusal_rate": "fRef",
    "misleading_rate": "misl",
    "qualified_rate": "qual",
    "avg_context_chars": "ctx",
    "retrieve_ms_p50": "ret",
    "ask_ms_p50": "ask",
}


def eval_cmd(
    qa: Annotated[
        Path | None, typer.Argument(help="Questions (JSONL, the shared evaluation schema).")
    ] = None,
    docs: Annotated[
        Path | None,
        typer.Option("--docs", help="Ingest this folder first, into a temporary KB (or --kb)."),
    ] = None,
    kb: KbOpt = None,
    tenant: TenantOpt = "default",
    k: Annotated[int, typer.Option("--k", "-k", min=1, max=100, help="Top k.")] = 5,
    limit: Annotated[
        int | None, typer.Option("--limit", min=1, help="Only the first N questions.")
    ] = None,
    report: Annotated[
        Path | None, typer.Option("--report", help="Write a Markdown report (+ PNG plots).")
    ] = None,
    json_out: Annotated[
        str | None,
        typer.Option(
            "--json", help="Write the run (with --compare: the deltas) as JSON; '-' = stdout."
        ),
    ] = None,
    ragas: Annotated[
        bool, typer.Option("--ragas", help="Also score with ragas (offline; LLM if configured).")
    ] = False,
    retrieve_only: Annotated[
        bool, typer.Option("--retrieve-only", help="Skip `ask`: retrieval metrics only.")
    ] = False,
    compact: Annotated[
        bool, typer.Option("--compact", help="Leave chunk texts out of the JSON.")
    ] = False,
    compare: Annotated[
        tuple[Path, Path] | None,
        typer.Option("--compare", help="Compare two saved runs: --compare A.json B.json."),
    ] = None,
    calibrate: Annotated[
        bool,
        typer.Option(
            "--calibrate",
            help="Also print gate thresholds for 1/3/6/10 % false refusals on these questions "
            "and what each refuses (the JSON always has them). Exact at or above the run's "
            "threshold; for lower ones run with RAG_GATE_THRESHOLD=0.0001.",
        ),
    ] = False,
    server: ServerOpt = None,
    api_key: ApiKeyOpt = None,
) -> None:
    """Evaluate the knowledge base on a question file, overall and per category.

    Example: rag eval data/eval/sample_qa.jsonl --docs data/knowledge --report out/report.md
    --json out/run.json. Compare two runs: rag eval --compare base.json new.json. Fit the
    refusal threshold to your own questions: rag eval my_qa.jsonl --calibrate. A file of
    conversations (records with "turns", e.g. data/eval/followup_conversations.jsonl) is scored
    per turn: follow-up resolution and answers.

    Beside a running `rag serve`: without --docs the knowledge base is opened read-only (no
    writer lock), or evaluate the server itself: --server URL --api-key KEY (the key's tenant).
    A file of feedback (rag feedback export) lists its cases that failed, with why.
    """
    from rag_app.eval import report as report_mod

    if compare:
        try:
            a, b = (report_mod.load_summary(p) for p in compare)
        except (OSError, ValueError) as exc:
            err.print(f"[red]error:[/red] {exc}")
            raise typer.Exit(2) from exc
        deltas = report_mod.compare(a, b)
        if json_out == "-":
            emit_json(deltas)
            return
        if json_out:
            Path(json_out).write_text(json.dumps(deltas, ensure_ascii=False, indent=2) + "\n")
        _print_compare(deltas, compare[0].name, compare[1].name)
        return
    if qa is None:
        err.print("[red]error:[/red] give a question file (or --compare A.json B.json)")
        raise typer.Exit(2)
    if not qa.is_file():
        err.print(f"[red]error:[/red] question file {qa} does not exist")
        raise typer.Exit(2)
    from rag_app.cli.evaluate_chat import eval_conversations, is_conversation_file

    if is_conversation_file(qa):  # follow-up resolution and answers per turn
        eval_conversations(qa, docs=docs, kb=kb, tenant=tenant, k=k, json_out=json_out)
        return

    from rag_app.cli.evaluate_served import (
        ServedKB,
        announce_local,
        busy_message,
        print_feedback_cases,
    )
    from rag_app.cli.remote import RemoteError
    from rag_app.embeddings import EmbeddingLoadError
    from rag_app.eval.pipeline import evaluate
    from rag_app.kb import KnowledgeBaseError
    from rag_app.store.writer_lock import KnowledgeBaseBusy

    remote = remote_kb(server, api_key)
    served = ServedKB(remote) if remote is not None else None
    if served is not None:
        try:
            served.check()
        except RemoteError as exc:
            err.print(f"[red]error:[/red] {exc}", soft_wrap=True)
            raise typer.Exit(2) from exc
        err.print(
            f"[dim]evaluating through the server at {served.remote.url} (its API)[/dim]",
            soft_wrap=True,
        )
    elif (problem := announce_local(kb, docs)) is not None:
        err.print(f"[red]error:[/red] {problem}", soft_wrap=True)
        raise typer.Exit(2)

    progress = Progress(
        TextColumn("[bold]{task.fields[stage]}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
        console=err,
        transient=True,
    )
    ingest_task = progress.add_task("", total=None, stage="ingesting", visible=docs is not None)
    eval_task = progress.add_task("", total=None, stage="evaluating", visible=False)
    passed = [0, 0]

    def on_file(result: Any, done: int, total: int) -> None:
        progress.update(
            ingest_task, completed=done, total=total, description=Path(result.path).name
        )

    def on_question(rec: Any, done: int, total: int) -> None:
        if rec.passed is not None:
            passed[0] += bool(rec.passed)
            passed[1] += 1
        rate = f" · pass {passed[0]}/{passed[1]}" if passed[1] else ""
        progress.update(
            eval_task, visible=True, completed=done, total=total, description=f"{rec.id}{rate}"
        )

    try:
        with progress:
            run = evaluate(
                qa,
                docs=docs,
                kb_dir=kb,
                k=k,
                tenant=tenant,
                limit=limit,
                ask=not retrieve_only,
                ragas=ragas,
                report=report,
                json_path=json_out if json_out not in (None, "-") else None,
                json_texts=not compact,
                progress=on_question,
                ingest_progress=on_file,
                served=served,
            )
    except KnowledgeBaseBusy as exc:
        err.print(f"[red]error:[/red] {busy_message(kb)}", soft_wrap=True)
        raise typer.Exit(2) from exc
    except (
        KnowledgeBaseError,
        EmbeddingLoadError,
        ValueError,
        FileNotFoundError,
        RemoteError,
    ) as exc:
        err.print(f"[red]error:[/red] {exc}", soft_wrap=True)
        raise typer.Exit(2) from exc
    if json_out == "-":
        sys.stdout.write(run.to_json(texts=not compact) + "\n")
        return
    _print_eval(run)
    print_feedback_cases(run)
    if calibrate:
        _print_calibration(run)
    if report:
        out.print(f"report: {report}")
        if report_mod.cjk_font() is None:
            err.print(f"[yellow]warning:[/yellow] {report_mod.NO_CJK_FONT}")
    if json_out:
        out.print(f"json: {json_out}")


def _print_eval(run: Any) -> None:
    from rich import box

    from rag_app.eval.report import fmt

    short = {k: v for k, v in _EVAL_COLUMNS.items() if k != "retrieve_ms_p50"}
    short["recall_at_k"] = f"R@{run.k}"

    def cell(key: str, value: Any) -> str:
        if value is None:
            return "–"
        if key == "mrr_at_k":
            return f"{value:.2f}"
        if key in ("avg_context_chars", "ask_ms_p50"):
            return f"{value:.0f}"
        return f"{value * 100:.0f}%"

    table = Table(box=box.SIMPLE_HEAD, padding=(0, 1, 0, 0), title_justify="left")
    table.title = f"rag eval · k={run.k} · {run.overall.get('n', 0)} questions"
    table.add_column("category", no_wrap=True, overflow="ellipsis", max_width=20)
    table.add_column("n", justify="right", no_wrap=True, min_width=3)
    for m in short:
        table.add_column(short[m], justify="right", no_wrap=True, min_width=4)
    for name, s in [*run.categories.items(), ("all", run.overall)]:
        style = "bold" if name == "all" else None
        table.add_row(name, str(s.get("n", 0)), *[cell(m, s.get(m)) for m in short], style=style)
    out.print(table)
    out.print(
        "[dim]pass = case pass rate, R/MRR = Recall/MRR@k of retrieve, src/kw = source/keyword "
        "hit, noA = no-answer accuracy, fRef = false-refusal rate, misl = unanswerable "
        "answered with no first-line caveat, qual = answerable answered with one, ctx = context "
        "chars, ask = p50 ms[/dim]"
    )
    o = run.overall
    out.print(
        "latency ms: "
        + ", ".join(
            f"{name} avg {fmt('x_ms_avg', o.get(f'{name}_ms_avg'))} "
            f"p50 {fmt('x_p50', o.get(f'{name}_ms_p50'))} "
            f"p95 {fmt('x_p95', o.get(f'{name}_ms_p95'))}"
            for name in ("retrieve", "ask")
        )
    )
    if o.get("errors"):
        out.print(f"[red]{o['errors']} questions raised errors (see the JSON)[/red]")
    if run.ragas:
        scores = run.ragas
        out.print(
            "ragas: "
            + ", ".join(f"{n} {v:.3f}" for n, v in scores["overall"].items() if v is not None)
        )


def _print_calibration(run: Any) -> None:
    from rich import box

    cal = run.calibration
    if cal is None or not cal.rows:
        err.print("[yellow]no calibration: the run has no answerable question with an answer[/]")
        return

    def pct(v: float | None) -> str:
        return "–" if v is None else f"{v * 100:.0f}%"

    table = Table(box=box.SIMPLE_HEAD, padding=(0, 1, 0, 0), title_justify="left")
    table.title = (
        f"gate thresholds on these questions ({cal.answerable} answerable, "
        f"{cal.unanswerable} unanswerable; this run used {cal.run_threshold:g})"
    )
    for col in ("threshold", "for", "false refusals", "unanswerable refused"):
        table.add_column(col, justify="left" if col == "for" else "right", no_wrap=True)
    for row in cal.rows:
        mark = "" if row.exact else " *"
        table.add_row(
            f"{row.threshold:.4g}{mark}",
            row.label,
            pct(row.false_refusal),
            pct(row.unanswerable_refused),
        )
    out.print(table)
    if any(not r.exact for r in cal.rows):
        out.print(
            "[dim]* not exact: a question this run did not read (refused unread, or the gate "
            "off) may score lower there; run with RAG_GATE_THRESHOLD=0.0001 for exact "
            "figures[/dim]"
        )
    pick = cal.suggested(0.03)
    if pick is not None:
        out.print(
            f"to refuse about 3 % of answerable questions: RAG_GATE_THRESHOLD={pick.threshold:g}"
        )


def _print_compare(deltas: dict[str, Any], a_name: str, b_name: str) -> None:
    from rich import box

    from rag_app.eval.report import fmt, fmt_delta, improved, label
    from rag_app.eval.runner import METRICS

    def colored(key: str, text: str, delta: Any) -> str:
        better = improved(key, delta)
        color = None if better is None else ("green" if better else "red")
        return f"[{color}]{text}[/{color}]" if color else text

    overall = Table(box=box.SIMPLE_HEAD, title=f"{b_name} vs {a_name} (delta = b - a)")
    for col in ("metric", a_name, b_name, "delta"):
        overall.add_column(col, justify="left" if col == "metric" else "right", overflow="fold")
    for m in ["n", *METRICS]:
        cell = deltas["overall"][m]
        delta_text = str(cell["delta"]) if m == "n" else fmt_delta(m, cell["delta"])
        overall.add_row(
            label(m), fmt(m, cell["a"]), fmt(m, cell["b"]), colored(m, delta_text, cell["delta"])
        )
    out.print(overall)

    short = dict(_EVAL_COLUMNS)

    def compact(key: str, delta: Any) -> str:
        if delta is None:
            return "–"
        if key == "mrr_at_k":
            text = f"{delta:+.2f}"
        elif key in ("avg_context_chars", "retrieve_ms_p50", "ask_ms_p50"):
            text = f"{delta:+.0f}"
        else:
            text = f"{delta * 100:+.0f}"
        return colored(key, text, delta)

    table = Table(box=box.SIMPLE_HEAD, padding=(0, 1, 0, 0), title_justify="left")
    table.title = "delta per category (rates in percentage points)"
    table.add_column("category", no_wrap=True, overflow="ellipsis", max_width=20)
    for m in short:
        table.add_column(short[m], justify="right", no_wrap=True)
    for name, block in [*deltas["categories"].items(), ("all", deltas["overall"])]:
        table.add_row(
            name,
            *[compact(m, block[m]["delta"]) for m in short],
            style="bold" if name == "all" else None,
        )
    out.print(table)
