"""``rag chat``: an interactive conversation with a knowledge base, loaded once."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer

from rag_app.cli.common import (
    CollectionOpt,
    JsonOpt,
    KbOpt,
    TenantOpt,
    check_collections,
    emit_json,
    err,
    filename,
    open_kb,
    out,
    warn_if_empty,
)
from rag_app.cli_output import answer_score_name, sources_json

if TYPE_CHECKING:
    from rag_app.kb import KnowledgeBase
    from rag_app.types import Answer

HELP = (
    "/sources: the last answer's sources in full · /up, /down [comment]: feedback on it · "
    "/new: a new conversation · /quit (or Ctrl-D)"
)


def chat(
    kb: KbOpt = None,
    tenant: TenantOpt = "default",
    top_k: Annotated[int, typer.Option("--top-k", "-k", min=1, max=50)] = 5,
    collection: CollectionOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Ask questions in a conversation: a follow-up takes what it lacks from the previous
    question (那SKU-1024呢？ after SKU-1023的库存是多少？ asks SKU-1024的库存是多少？).

    Reads one question per line from the terminal (or standard input: `rag chat < questions`);
    the knowledge base and its models are loaded once. Commands: /sources (the last answer's
    sources in full), /up or /down with an optional comment (feedback on the last answer, kept
    as the API's is: rag feedback list), /new (start over: the next question stands on its
    own), /quit. With --json, one JSON object per answer (JSON Lines) with the resolved
    question. The conversation itself is not stored (the service's /api/chat keeps them).
    """
    from rag_app.analysis.followup import FollowUpResolver
    from rag_app.cli.query import print_answer

    resolver = FollowUpResolver()
    previous: str | None = None
    asked = ""  # the last question as typed
    last: tuple[Answer, list[dict[str, Any]]] | None = None
    interactive = sys.stdin.isatty()
    with open_kb(kb, read_only=True) as base:
        warn_if_empty(base, tenant)
        check_collections(base, tenant, collection)
        score_name = answer_score_name(base.settings)
        if interactive and not as_json:
            err.print(f"[dim]{HELP}[/dim]")
        while True:
            try:
                line = input("问> " if interactive else "")
            except (EOFError, KeyboardInterrupt):
                break
            text = line.strip()
            if not text:
                continue
            if text in ("/quit", "/exit", "/q"):
                break
            if text == "/new":
                previous, last = None, None
                err.print("[dim]new conversation[/dim]")
                continue
            if text == "/sources":
                _show_sources(last)
                continue
            word, _, comment = text.partition(" ")
            if word in ("/up", "/down"):
                _feedback_on(base, tenant, collection, asked, last, word[1:], comment.strip())
                continue
            if text.startswith("/"):
                err.print(f"[yellow]unknown command {text}[/yellow] ({HELP})")
                continue
            followup = resolver.resolve(text, previous)
            answer = base.ask(followup.resolved, tenant=tenant, top_k=top_k, collections=collection)
            rows = sources_json(answer.sources, lambda doc_id: filename(base, doc_id))
            previous, asked, last = followup.resolved, text, (answer, rows)
            if as_json:
                record = {**answer.model_dump(), "sources": rows}
                emit_json({"question": text, "resolved_question": followup.resolved,
                           "followup": followup.rule, **record}, line=True)  # fmt: skip
                continue
            if followup.inherited:
                out.print(f"[dim]（理解为：{followup.resolved}）[/dim]")
            print_answer(answer, rows, score_name, show_context=False)
            out.print()


def _feedback_on(
    base: KnowledgeBase,
    tenant: str,
    collection: list[str] | None,
    asked: str,
    last: tuple[Answer, list[dict[str, Any]]] | None,
    rating: str,
    comment: str,
) -> None:
    """Record 👍/👎 on the last answer as /api/feedback does (key ``cli``)."""
    from rag_app.store.feedback import FeedbackRecord

    if last is None:
        err.print("[yellow]no answer yet[/yellow]")
        return
    answer, rows = last
    record = FeedbackRecord(
        tenant=tenant,
        key_id="cli",
        rating="up" if rating == "up" else "down",
        comment=comment,
        question=asked,
        resolved_question=answer.question,
        answer=answer.answer,
        sources=[
            {"doc_id": r["doc_id"], "chunk_id": r["chunk_id"], "filename": r["filename"]}
            for r in rows
        ],
        confidence=answer.confidence,
        settings={**base.answer_settings(), "collections": list(collection or [])},
    )
    feedback_id = base.feedback.add(record)
    err.print(f"[dim]feedback #{feedback_id} recorded ({'👍' if rating == 'up' else '👎'})[/dim]")


def _show_sources(last: tuple[Answer, list[dict[str, Any]]] | None) -> None:
    if last is None:
        err.print("[yellow]no answer yet[/yellow]")
        return
    answer, rows = last
    for n, (src, row) in enumerate(zip(answer.sources, rows, strict=True), start=1):
        out.print(f"[bold cyan][{n}][/bold cyan] {row['filename']} · {src.title_path}")
        out.print(f"[dim]{src.text}[/dim]\n")


feedback_app = typer.Typer(
    help="Feedback on answers (👍/👎 from the API and UI): list it, say what a 👎'd answer "
    "should have been, export it as cases for rag eval.",
    no_args_is_help=True,
)
RatingOpt = Annotated[str | None, typer.Option("--rating", help="up or down (default: both).")]


def _feedback(kb: KbOpt, tenant: str | None, rating: str | None) -> list[Any]:
    if rating not in (None, "up", "down"):
        err.print("[red]error:[/red] --rating is up or down")
        raise typer.Exit(2)
    with open_kb(kb, read_only=True) as base:
        return base.feedback.list(tenant, rating=rating, limit=100_000)  # type: ignore[arg-type]


@feedback_app.command("list")
def feedback_list(
    kb: KbOpt = None,
    tenant: Annotated[
        str | None, typer.Option("--tenant", "-t", help="One tenant's (default: all).")
    ] = None,
    rating: RatingOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """The feedback, latest first: rating, question, comment and the answer's first line."""
    records = _feedback(kb, tenant, rating)
    if as_json:
        emit_json([r.model_dump() for r in records])
        return
    if not records:
        out.print("no feedback yet")
    for r in records:
        mark = "👍" if r.rating == "up" else "👎"
        out.print(f"{mark} #{r.feedback_id} [{r.tenant}] {r.resolved_question}")
        if r.comment:
            out.print(f"   [bold]comment:[/bold] {r.comment}")
        out.print(f"   [dim]{r.answer.splitlines()[0] if r.answer else ''}[/dim]")
        if r.expected is not None:
            right = "should refuse" if r.expected.refuse else r.expected.answer
            out.print(f"   [bold]expected:[/bold] {right}")


@feedback_app.command("correct")
def feedback_correct(
    feedback_id: Annotated[int, typer.Argument(help="The feedback's number (rag feedback list).")],
    answer: Annotated[
        str | None, typer.Option("--answer", "-a", help="The right answer (its key facts).")
    ] = None,
    refuse: Annotated[
        bool, typer.Option("--refuse", help="The knowledge base should refuse the question.")
    ] = False,
    clear: Annotated[bool, typer.Option("--clear", help="Forget what was expected.")] = False,
    kb: KbOpt = None,
) -> None:
    """Say what the answer should have been: the right answer, or that it should be refused.
    The export then makes the case expect it (rag feedback export; rag eval)."""
    from rag_app.store.feedback import Expected

    if sum((answer is not None, refuse, clear)) != 1:
        err.print("[red]error:[/red] give one of --answer TEXT, --refuse, --clear")
        raise typer.Exit(2)
    if answer is not None and not answer.strip():
        err.print("[red]error:[/red] --answer is empty")
        raise typer.Exit(2)
    expected = None if clear else Expected(answer=(answer or "").strip(), refuse=refuse)
    # the ledger only (no vectors): beside a running server, as rag chat's /down is
    with open_kb(kb, read_only=True) as base:
        if not base.feedback.set_expected(None, feedback_id, expected):
            err.print(f"[red]error:[/red] no feedback #{feedback_id} (rag feedback list)")
            raise typer.Exit(1)
    err.print(f"feedback #{feedback_id}: " + ("cleared" if clear else "expectation recorded"))


@feedback_app.command("export")
def feedback_export(
    path: Annotated[
        typer.FileTextWrite, typer.Argument(help="Question file to write ('-': stdout).")
    ],
    kb: KbOpt = None,
    tenant: Annotated[
        str | None, typer.Option("--tenant", "-t", help="One tenant's (default: all).")
    ] = None,
    rating: Annotated[str | None, typer.Option("--rating", help="up or down.")] = "down",
    annotations: Annotated[
        bool, typer.Option("--annotations/--no-annotations", help="Add the annotations' cases.")
    ] = True,
) -> None:
    """Write the feedback (default: the 👎) as a question file `rag eval` runs (rag eval FILE
    --kb KB). A 👎 fails while its answer's first line comes back (not_answer); it must also
    hold the right answer, or be refused, when `rag feedback correct` or the comment ("应该拒答",
    "should be refused") says so; its sources are not gold. A 👍 expects its first line again,
    its sources' documents as gold. The comment stays with the case. Each annotation (rag
    annotations) adds a case expecting its answer, or a refusal."""
    import json

    records: list[Any] = _feedback(kb, tenant, rating)
    cases = [record.as_question() for record in records]
    if annotations:
        with open_kb(kb, read_only=True) as base:
            store = base.annotations.store
            cases += [store.as_case(a) for a in store.list(tenant)]
    for case in cases:
        path.write(json.dumps(case, ensure_ascii=False) + "\n")
    name = str(getattr(path, "name", ""))
    name = name if name and not name.startswith("<") else "FILE"  # '-': <stdout>
    target = f"--kb {kb}" if kb is not None else "(the same --kb)"
    err.print(
        f"wrote {len(cases)} case(s); evaluate them: rag eval {name} {target} (read-only, "
        "also beside a running rag serve; or --server URL --api-key KEY)",
        soft_wrap=True,
    )
