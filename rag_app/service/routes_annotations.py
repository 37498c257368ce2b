"""/api/annotations: an editor's answer to a question (人工标注) — the right answer, optionally
cited to a chunk, or "should be refused" — answered first when a later question matches it
(rag_app/annotations.py). Readers list; editors write. A key limited to some collections lists
and writes only the annotations of those (never tenant-wide ones)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Query, Response, status
from pydantic import AfterValidator, BaseModel, Field, StringConstraints

from rag_app.service.access import can_read, feedback_filter, usable
from rag_app.service.auth import KeyInfo
from rag_app.service.deps import EditorDep, KeyDep, ServiceState, StateDep
from rag_app.service.json_body import body_schema, json_body
from rag_app.service.schemas import CollectionName
from rag_app.store.annotations import (
    ANSWER_MAX_CHARS,
    QUESTION_MAX_CHARS,
    Annotation,
    AnnotationChange,
    CitedChunk,
)

router = APIRouter(prefix="/api", tags=["annotations"])


def _no_nul(text: str) -> str:
    if "\x00" in text:  # PostgreSQL's text can't hold it: a 422 here, not a 500 there
        raise ValueError("text must not contain NUL characters")
    return text


Question = Annotated[
    str,
    StringConstraints(strip_whitespace=True, min_length=1, max_length=QUESTION_MAX_CHARS),
    AfterValidator(_no_nul),
]
AnswerText = Annotated[str, StringConstraints(max_length=ANSWER_MAX_CHARS), AfterValidator(_no_nul)]
ChunkId = Annotated[str, StringConstraints(min_length=1, max_length=96)]


class AnnotationIn(BaseModel):
    question: Question | None = Field(
        None, description="The question it answers (default: the feedback's, with feedback_id)."
    )
    answer: AnswerText = Field("", description="The right answer, as it should be given.")
    should_refuse: bool = Field(False, description="The knowledge base should refuse it.")
    collection: CollectionName | None = Field(
        None, description="Answer it in this collection only (default: the whole tenant; a "
        "key limited to some collections must name one of them).",
    )  # fmt: skip
    chunk_id: ChunkId | None = Field(None, description="The chunk that says so (cited).")
    feedback_id: int | None = Field(
        None, ge=1, description="Annotate this feedback: its question, and its expected answer "
        "or refusal unless given here.",
    )  # fmt: skip


class AnnotationPatch(BaseModel):
    """The fields given replace the annotation's."""

    question: Question | None = None
    answer: AnswerText | None = None
    should_refuse: bool | None = None
    collection: CollectionName | None = Field(None, description="Move it to this collection.")
    tenant_wide: bool = Field(False, description="Move it to the whole tenant (all keys).")
    chunk_id: ChunkId | None = None
    clear_chunk: bool = Field(False, description="Cite no chunk.")


class AnnotationOut(Annotation):
    collection: str | None = Field(None, description="Its collection's name; None: tenant-wide.")
    citation: str | None = Field(
        None, description="current, updated (re-parsed since) or deleted; None: cites none."
    )


class AnnotationList(BaseModel):
    annotations: list[AnnotationOut]


AnnotationBody = Annotated[AnnotationIn, Depends(json_body(AnnotationIn))]
PatchBody = Annotated[AnnotationPatch, Depends(json_body(AnnotationPatch))]


def _out(state: ServiceState, annotation: Annotation) -> AnnotationOut:
    name = None
    if annotation.collection_id is not None:
        names = state.kb.collections.names(annotation.tenant, [annotation.collection_id])
        name = names[0] if names else None
    citation = None
    if annotation.cited is not None:
        citation = state.kb.annotations.store.citation_state(annotation.cited)
    return AnnotationOut(**annotation.model_dump(), collection=name, citation=citation)


def _collection_id(state: ServiceState, key: KeyInfo, name: str | None) -> str | None:
    """The collection an annotation goes to: a named one the key may use (404 / 403), or the
    whole tenant, which a limited key may not write to (403)."""
    if name is not None:
        return usable(state, key, name).collection_id
    if key.collections is not None:
        raise HTTPException(
            status.HTTP_403_FORBIDDEN,
            "this key is limited to some collections: name one of them (collection)",
        )
    return None


def _cite(state: ServiceState, key: KeyInfo, chunk_id: str) -> CitedChunk:
    cited = state.kb.annotations.store.cite(key.tenant, chunk_id)
    if cited is None or not can_read(state, key, cited.doc_id):
        raise HTTPException(422, f"no current chunk {chunk_id} this key can read")
    return cited


def _mine(state: ServiceState, key: KeyInfo, annotation_id: int) -> Annotation:
    found = state.kb.annotations.store.get(key.tenant, annotation_id)
    if found is None or (
        key.collections is not None and found.collection_id not in key.collections
    ):
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no annotation {annotation_id}")
    return found


def _author(key: KeyInfo) -> dict[str, str]:
    return {"author_key_id": key.key_id, "author": key.name or key.key_id}


@router.get("/annotations", response_model=AnnotationList)
def list_annotations(
    key: KeyDep,
    state: StateDep,
    collection: Annotated[str | None, Query(max_length=64)] = None,
    limit: Annotated[int, Query(ge=1, le=10000)] = 500,
) -> AnnotationList:
    """The annotations of your tenant, the latest edited first (``collection``: of that one
    only; a key limited to some collections: of those)."""
    if collection is not None:
        chosen: list[str] | None = [usable(state, key, collection).collection_id]
    else:
        chosen = list(key.collections) if key.collections is not None else None
    found = state.kb.annotations.store.list(
        key.tenant, collections=chosen, tenant_wide=False, limit=limit
    )
    return AnnotationList(annotations=[_out(state, a) for a in found])


@router.post(
    "/annotations",
    status_code=status.HTTP_201_CREATED,
    response_model=AnnotationOut,
    openapi_extra=body_schema(AnnotationIn),
)
def add_annotation(key: EditorDep, body: AnnotationBody, state: StateDep) -> AnnotationOut:
    """Annotate a question: its right ``answer`` (optionally citing ``chunk_id``) or
    ``should_refuse``. From then on it, and close paraphrases stating the same numbers, codes
    and names, are answered with it (``annotation`` in the answer says so)."""
    question, answer, refuse = body.question, body.answer.strip(), body.should_refuse
    if body.feedback_id is not None:
        record = state.kb.feedback.get(key.tenant, body.feedback_id)
        if record is None or not feedback_filter(state, key)(record):
            raise HTTPException(status.HTTP_404_NOT_FOUND, f"no feedback {body.feedback_id}")
        question = question or record.resolved_question[:QUESTION_MAX_CHARS]
        if not answer and not refuse and record.expected is not None:
            answer, refuse = record.expected.answer.strip(), record.expected.refuse
    if not question:
        raise HTTPException(422, "give the question (or feedback_id)")
    if not answer and not refuse:
        raise HTTPException(422, "give the answer, or should_refuse: true")
    annotation = Annotation(
        tenant=key.tenant,
        collection_id=_collection_id(state, key, body.collection),
        question=question,
        answer=answer,
        should_refuse=refuse,
        cited=_cite(state, key, body.chunk_id) if body.chunk_id else None,
        **_author(key),
    )
    return _out(state, state.kb.annotations.add(annotation))


@router.patch(
    "/annotations/{annotation_id}",
    response_model=AnnotationOut,
    openapi_extra=body_schema(AnnotationPatch),
)
def edit_annotation(
    annotation_id: int, key: EditorDep, body: PatchBody, state: StateDep
) -> AnnotationOut:
    """Change an annotation (the fields given); you become its author."""
    current = _mine(state, key, annotation_id)
    change = AnnotationChange(
        question=body.question,
        answer=body.answer.strip() if body.answer is not None else None,
        should_refuse=body.should_refuse,
        cited=_cite(state, key, body.chunk_id) if body.chunk_id else None,
        clear_cited=body.clear_chunk,
        **_author(key),
    )
    if body.collection is not None:
        change.collection_id = _collection_id(state, key, body.collection)
    elif body.tenant_wide:
        _collection_id(state, key, None)  # 403 for a limited key
        change.move_to_tenant = True
    answer = current.answer if change.answer is None else change.answer
    refuse = current.should_refuse if change.should_refuse is None else change.should_refuse
    if not answer and not refuse:
        raise HTTPException(422, "an annotation needs an answer or should_refuse: true")
    updated = state.kb.annotations.edit(key.tenant, annotation_id, change)
    if updated is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no annotation {annotation_id}")
    return _out(state, updated)


@router.delete("/annotations/{annotation_id}", status_code=status.HTTP_204_NO_CONTENT)
def delete_annotation(annotation_id: int, key: EditorDep, state: StateDep) -> Response:
    """Remove an annotation: its question is answered from the documents again."""
    _mine(state, key, annotation_id)
    state.kb.annotations.delete(key.tenant, annotation_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
