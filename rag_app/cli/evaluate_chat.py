"""``rag eval`` of a conversations file (data/eval/followup_conversations.jsonl): each follow-up
turn's resolution and each turn's answer (rag_app/eval/conversations.py)."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from rag_app.cli.common import emit_json, err, out


def is_conversation_file(path: Path) -> bool:
    """Whether a question file holds conversations (records with ``turns``)."""
    try:
        with path.open(encoding="utf-8") as f:
            first = next((line for line in f if line.strip()), "")
        return "turns" in json.loads(first) if first else False
    except (OSError, ValueError):
        return False


def eval_conversations(
    path: Path,
    *,
    docs: Path | None,
    kb: Path | None,
    tenant: str,
    k: int,
    json_out: str | None,
) -> None:
    from rag_app.eval.conversations import load_conversations, run_conversations, summarize
    from rag_app.eval.pipeline import eval_kb

    try:
        cases = load_conversations(path)
    except ValueError as exc:
        err.print(f"[red]error:[/red] {path}: {exc}")
        raise typer.Exit(2) from exc
    try:
        with eval_kb(docs, kb, tenant=tenant) as target:
            base = target.kb
            results = run_conversations(
                cases, ask=lambda q: base.ask(q, tenant=tenant, top_k=k).answer
            )
    except (ValueError, FileNotFoundError) as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc
    split_of = {c.id: c.split for c in cases}
    by_split = {
        s: summarize([r for r in results if split_of[r.conversation] == s])
        for s in sorted(set(split_of.values()))
    }
    overall = summarize(results)
    data = {"file": str(path), "overall": overall, "splits": by_split,
            "turns": [r.model_dump() for r in results]}  # fmt: skip
    if json_out == "-":
        emit_json(data)
        return
    if json_out:
        Path(json_out).write_text(json.dumps(data, ensure_ascii=False, indent=2) + "\n")
    for name, summary in [("all", overall), *by_split.items()]:
        out.print(
            f"{name:6} follow-ups resolved {summary['resolution_accuracy']:.1%} "
            f"of {summary['follow_up_turns']} · answers {summary['answer_accuracy']:.1%} "
            f"of {summary['answered_turns']} turns"
        )
    for r in results:
        if not r.resolved_ok or r.answer_ok is False:
            what = "resolution" if not r.resolved_ok else "answer"
            out.print(
                f"[yellow]{what}[/yellow] {r.conversation}#{r.turn}: {r.question} → {r.resolved}"
            )
