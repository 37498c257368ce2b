"""``rag annotations``: an editor's answers to questions (人工标注), given before retrieval when a
question matches (the same or a light paraphrase stating the same numbers, codes and names).
They write the ledger only, so they also work beside a running ``rag serve``, which sees them
within seconds."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

import typer

from rag_app.cli.common import JsonOpt, KbOpt, emit_json, err, open_kb, out

annotations_app = typer.Typer(
    help="Annotations (人工标注): the right answer to a question, or 'should refuse', given "
    "first when a question matches it. Add one (rag annotations add '年假有几天？' -a '十天'), "
    "list, edit, delete.",
    no_args_is_help=True,
)

IdArg = Annotated[int, typer.Argument(help="The annotation's number (rag annotations list).")]
AnswerOpt = Annotated[
    str | None, typer.Option("--answer", "-a", help="The right answer, as it should be given.")
]
CollectionName = Annotated[
    str | None,
    typer.Option("--collection", "-c", help="Only in this collection (default: the tenant)."),
]
ChunkOpt = Annotated[
    str | None, typer.Option("--chunk", help="Cite this chunk (its id: rag chunks DOC).")
]
TenantOpt = Annotated[str, typer.Option("--tenant", "-t", help="The tenant it answers in.")]


def _fail(message: str, code: int = 2) -> typer.Exit:
    err.print(f"[red]error:[/red] {message}", soft_wrap=True)
    return typer.Exit(code)


def _collection_id(base: Any, tenant: str, name: str | None) -> str | None:
    from rag_app.store.collections import CollectionNotFound

    if name is None:
        return None
    try:
        return str(base.collections.ids(tenant, [name])[0])
    except CollectionNotFound as exc:
        raise _fail(f"{exc} in tenant {tenant!r} (see `rag collections list`)") from exc


def _cite(base: Any, tenant: str, chunk_id: str) -> Any:
    cited = base.annotations.store.cite(tenant, chunk_id)
    if cited is None:
        raise _fail(f"no current chunk {chunk_id} in tenant {tenant!r}")
    return cited


def _check_text(question: str | None, answer: str | None) -> None:
    from rag_app.store.annotations import ANSWER_MAX_CHARS, QUESTION_MAX_CHARS

    if question is not None and not 0 < len(question.strip()) <= QUESTION_MAX_CHARS:
        raise _fail(f"the question must have 1 to {QUESTION_MAX_CHARS} characters")
    if answer is not None and len(answer) > ANSWER_MAX_CHARS:
        raise _fail(f"the answer may have at most {ANSWER_MAX_CHARS} characters")


@annotations_app.command("list")
def list_annotations(
    kb: KbOpt = None,
    tenant: Annotated[
        str | None, typer.Option("--tenant", "-t", help="One tenant's (default: all).")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """The annotations, the latest edited first."""
    with open_kb(kb, read_only=True) as base:
        found = base.annotations.store.list(tenant)
        names = {
            a.collection_id: (base.collections.names(a.tenant, [a.collection_id]) or ["?"])[0]
            for a in found
            if a.collection_id is not None
        }
    if as_json:
        emit_json([a.model_dump() for a in found])
        return
    if not found:
        out.print("no annotations yet (add one: rag annotations add QUESTION --answer TEXT)")
    for a in found:
        where = f"collection {names[a.collection_id]}" if a.collection_id else "whole tenant"
        when = datetime.fromtimestamp(a.updated_at).astimezone().strftime("%Y-%m-%d %H:%M")
        out.print(f"#{a.annotation_id} ({a.tenant}, {where}) {a.question}", markup=False)
        out.print(f"   {'(should refuse)' if a.should_refuse else a.answer}", markup=False)
        cited = f" · cites {a.cited.chunk_id}" if a.cited else ""
        out.print(
            f"   {a.author or a.author_key_id or '-'} · {when}{cited}", style="dim", markup=False
        )


@annotations_app.command("add")
def add(
    question: Annotated[str, typer.Argument(help="The question it answers.")],
    answer: AnswerOpt = None,
    refuse: Annotated[bool, typer.Option("--refuse", help="It should be refused.")] = False,
    collection: CollectionName = None,
    chunk: ChunkOpt = None,
    author: Annotated[str, typer.Option("--author", help="Who says so.")] = "cli",
    kb: KbOpt = None,
    tenant: TenantOpt = "default",
    as_json: JsonOpt = False,
) -> None:
    """Annotate a question with its right answer (--answer, optionally --chunk) or --refuse."""
    from rag_app.store.annotations import Annotation

    if (answer is None or not answer.strip()) == (not refuse):
        raise _fail("give one of --answer TEXT, --refuse")
    _check_text(question, answer)
    with open_kb(kb, read_only=True) as base:
        annotation = Annotation(
            tenant=tenant, collection_id=_collection_id(base, tenant, collection),
            question=question.strip(), answer=(answer or "").strip(), should_refuse=refuse,
            cited=_cite(base, tenant, chunk) if chunk else None, author=author,
        )  # fmt: skip
        added = base.annotations.store.add(annotation)  # its vector: computed where it is read
    if as_json:
        emit_json(added.model_dump())
    else:
        err.print(f"annotation #{added.annotation_id} added")


@annotations_app.command("edit")
def edit(
    annotation_id: IdArg,
    question: Annotated[str | None, typer.Option("--question", "-q", help="New question.")] = None,
    answer: AnswerOpt = None,
    refuse: Annotated[
        bool | None, typer.Option("--refuse/--no-refuse", help="Should it be refused?")
    ] = None,
    chunk: ChunkOpt = None,
    no_chunk: Annotated[bool, typer.Option("--no-chunk", help="Cite no chunk.")] = False,
    author: Annotated[str | None, typer.Option("--author", help="Who says so.")] = None,
    kb: KbOpt = None,
) -> None:
    """Change an annotation (the options given)."""
    from rag_app.store.annotations import AnnotationChange

    _check_text(question, answer)
    with open_kb(kb, read_only=True) as base:
        current = base.annotations.store.get(None, annotation_id)
        if current is None:
            raise _fail(f"no annotation #{annotation_id} (rag annotations list)", 1)
        final_answer = current.answer if answer is None else answer.strip()
        final_refuse = current.should_refuse if refuse is None else refuse
        if not final_answer and not final_refuse:
            raise _fail("an annotation needs an answer or --refuse")
        change = AnnotationChange(
            question=question.strip() if question is not None else None,
            answer=answer.strip() if answer is not None else None, should_refuse=refuse,
            cited=_cite(base, current.tenant, chunk) if chunk else None, clear_cited=no_chunk,
            author=author,
        )  # fmt: skip
        base.annotations.store.edit(None, annotation_id, change)
    err.print(f"annotation #{annotation_id} changed")


@annotations_app.command("delete")
def delete(annotation_id: IdArg, kb: KbOpt = None) -> None:
    """Remove an annotation: its question is answered from the documents again."""
    with open_kb(kb, read_only=True) as base:
        if not base.annotations.store.delete(None, annotation_id):
            raise _fail(f"no annotation #{annotation_id} (rag annotations list)", 1)
    err.print(f"annotation #{annotation_id} deleted")
