"""``rag retrieve`` and ``rag ask``: questions to a knowledge base, answered on the terminal
or as JSON."""

from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from rag_app.cli.common import (
    ApiKeyOpt,
    CollectionOpt,
    JsonOpt,
    KbOpt,
    ServerOpt,
    TenantOpt,
    check_collections,
    emit_json,
    err,
    filename,
    open_kb,
    out,
    remote_kb,
    resume_collection,
    start_one_shot,
    warn_if_empty,
)
from rag_app.cli_output import (
    answer_score_name,
    cited_numbers,
    confidence_line,
    fmt_score,
    retrieval_score_name,
    sources_json,
)

if TYPE_CHECKING:
    from rag_app.types import Answer


def retrieve(
    question: Annotated[str, typer.Argument(help="The question, e.g. '密码多久修改一次？'")],
    kb: KbOpt = None,
    tenant: TenantOpt = "default",
    top_k: Annotated[int, typer.Option("--top-k", "-k", min=1, max=100)] = 5,
    collection: CollectionOpt = None,
    server: ServerOpt = None,
    api_key: ApiKeyOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Show the chunks that best match a question, with their sources and spans.

    Scores are the retrieval's: "fused" (dense + BM25 by reciprocal-rank fusion, small numbers
    such as 0.03) unless RAG_RETRIEVAL_MODE picks one branch ("dense", "bm25").
    """
    from rag_app.config import Settings

    remote = remote_kb(server, api_key)
    if remote is not None:
        from rag_app.cli.remote import RemoteError

        try:
            hits, rows = remote.retrieve(question, top_k, collection)
        except RemoteError as exc:
            err.print(f"[red]error:[/red] {exc}", soft_wrap=True)
            raise typer.Exit(2) from exc
        settings = Settings()
    else:
        with open_kb(kb, read_only=True, settings=start_one_shot(1)) as base:
            warn_if_empty(base, tenant)
            check_collections(base, tenant, collection)
            try:
                hits = base.retrieve(question, top_k=top_k, tenant=tenant, collections=collection)
                rows = sources_json(hits, lambda doc_id: filename(base, doc_id))
            except ValueError as exc:
                err.print(f"[red]error:[/red] {exc}")
                raise typer.Exit(2) from exc
        settings = base.settings
    if as_json:
        emit_json(rows)
        return
    score_name = retrieval_score_name(settings)
    out.print(f"[bold]Q:[/bold] {question}")
    if not hits:
        out.print("[yellow]no matching chunks (is the knowledge base empty?)[/yellow]")
    for rank, (hit, row) in enumerate(zip(hits, rows, strict=True), start=1):
        name = row["filename"] or Path(hit.source).name
        where = f"{name} · chunk {hit.chunk_index} · chars {hit.start_char}-{hit.end_char}"
        out.print(f"\n[bold cyan][{rank}][/bold cyan] {fmt_score(score_name, hit.score)} · {where}")
        if hit.title_path:
            out.print(f"    [dim]{hit.title_path}[/dim]")
        snippet = " ".join(hit.text.split())
        out.print(f"    {snippet[:240]}{'…' if len(snippet) > 240 else ''}")


def ask(
    question: Annotated[
        str | None, typer.Argument(help="The question, e.g. '密码多久修改一次？'")
    ] = None,
    kb: KbOpt = None,
    tenant: TenantOpt = "default",
    top_k: Annotated[int, typer.Option("--top-k", "-k", min=1, max=50)] = 5,
    collection: CollectionOpt = None,
    questions: Annotated[
        Path | None,
        typer.Option(
            "--questions",
            "-q",
            help="A file of questions, one per line ('-': standard input), answered with the "
            "models loaded once; with --json, one JSON object per line (JSON Lines).",
        ),
    ] = None,
    show_context: Annotated[
        bool,
        typer.Option(
            "--show-context", help=r"Print each cited chunk (its \[n] is in the answer) in full."
        ),
    ] = False,
    server: ServerOpt = None,
    api_key: ApiKeyOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Answer from the knowledge base with numbered citations, or refuse.

    Without RAG_LLM_BASE_URL the answer is extractive (sentences and table rows picked from
    the evidence); with it, an OpenAI-compatible model writes the answer, and markers it
    invents are removed; with RAG_LLM_REVIEW=lenient it also reads the refusals whose
    confidence reaches the lenient threshold, and answers them or lets them stand. Sources
    always come from the retrieval backend. Their scores are the reranker's ("rerank";
    "fused" with RAG_RERANK=none). The refusal threshold is RAG_GATE (strict, balanced,
    lenient, off).

    Many questions: rag ask --questions questions.txt --json > answers.jsonl loads the models
    once (start-up is most of one question's wall time), or, with a `rag serve` running,
    --server URL --api-key KEY (or RAG_SERVER, RAG_API_KEY) asks it: no start-up at all.
    """
    if (question is None) == (questions is None):
        err.print("[red]error:[/red] give a question or --questions FILE (not both)")
        raise typer.Exit(2)
    asked = [question] if question is not None else _read_questions(questions)

    def emit(i: int, answer: Answer, rows: list[dict[str, Any]], score_name: str) -> None:
        if as_json:
            emit_json({**answer.model_dump(), "sources": rows}, line=questions is not None)
            return
        if i:
            out.print()
        print_answer(answer, rows, score_name, show_context)

    remote = remote_kb(server, api_key)
    if remote is not None:
        from rag_app.cli.remote import RemoteError
        from rag_app.config import Settings

        score_name = answer_score_name(Settings())
        for i, text in enumerate(asked):
            try:
                emit(i, *remote.ask(text, top_k, collection), score_name)
            except RemoteError as exc:
                err.print(f"[red]error:[/red] {exc}", soft_wrap=True)
                raise typer.Exit(2) from exc
            resume_collection()
        return
    with open_kb(kb, read_only=True, settings=start_one_shot(len(asked))) as base:
        warn_if_empty(base, tenant)
        check_collections(base, tenant, collection)
        score_name = answer_score_name(base.settings)
        for i, text in enumerate(asked):
            try:
                answer = base.ask(text, tenant=tenant, top_k=top_k, collections=collection)
                rows = sources_json(answer.sources, lambda doc_id: filename(base, doc_id))
            except ValueError as exc:
                err.print(f"[red]error:[/red] {exc}")
                raise typer.Exit(2) from exc
            emit(i, answer, rows, score_name)
            resume_collection()


def _read_questions(path: Path | None) -> list[str]:
    try:
        raw = sys.stdin.read() if str(path) == "-" else Path(str(path)).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        err.print(f"[red]error:[/red] cannot read questions from {path}: {exc}")
        raise typer.Exit(2) from exc
    lines = [line.strip() for line in raw.splitlines() if line.strip()]
    if not lines:
        err.print(f"[red]error:[/red] no questions in {path}")
        raise typer.Exit(2)
    return lines


def print_answer(
    answer: Answer, rows: list[dict[str, Any]], score_name: str, show_context: bool
) -> None:
    out.print(f"[bold]Q:[/bold] {answer.question}")
    if answer.refused:
        out.print(f"[bold yellow]{answer.answer}[/bold yellow]")
        out.print(
            f"[yellow]{answer.explanation or ''}[/yellow] [dim](reason: {answer.reason})[/dim]"
        )
        for unit in answer.closest:  # the nearest the evidence has, quoted as such
            out.print(f"最接近的内容：{escape(unit.text)} [{unit.source}]", highlight=False)
    elif answer.outcome == "qualified":  # the first line says what the knowledge base lacks
        first, _, rest = answer.answer.partition("\n")
        out.print(f"[bold yellow]{escape(first)}[/bold yellow]", highlight=False)
        if rest:
            out.print(rest)
    else:
        out.print(answer.answer)
    if answer.sources:
        title = "最接近的资料 (closest sources)" if answer.refused else "Sources"
        out.print(f"\n[bold]{title}[/bold]")
    cited = cited_numbers(answer.answer, len(answer.sources))
    for n, (src, row) in enumerate(zip(answer.sources, rows, strict=True), start=1):
        name = row["filename"] or Path(src.source).name
        out.print(
            f"[bold cyan][{n}][/bold cyan] {name} · {src.title_path or '(no heading)'}"
            f" · chunk {src.chunk_index} · chars {src.start_char}-{src.end_char}"
            f" · {fmt_score(score_name, src.score)}"
        )
        if show_context and n in cited:
            out.print(f"[dim]{src.text}[/dim]\n")
    if show_context and not cited:
        out.print("[dim](--show-context: the answer cites no source)[/dim]")
    if answer.annotation is not None:  # an editor's answer, not the documents'
        a = answer.annotation
        when = datetime.fromtimestamp(a.updated_at).astimezone().strftime("%Y-%m-%d %H:%M")
        out.print(
            f"人工标注 #{a.annotation_id} · {a.author or '-'} · {when}", style="dim", markup=False
        )
    out.print(f"[dim]{confidence_line(answer.confidence, answer.threshold, answer.reviewed)}[/dim]")
    if answer.llm_error:
        err.print(f"[yellow]note:[/yellow] {escape(answer.llm_error)} (answered without the LLM)")
    timing = ", ".join(f"{k} {v:.0f}" for k, v in answer.timings.items())
    out.print(f"[dim]{answer.mode}; {timing}[/dim]")
