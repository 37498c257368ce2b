"""/api/feedback: 👍/👎 and a comment on an answer (of /api/ask, or a turn of /api/chat), kept
with the question, answer, sources, confidence and the settings that answered it."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, HTTPException, Query, status
from pydantic import BaseModel, Field

from rag_app.service.access import (
    as_names,
    can_read,
    feedback_filter,
    sources_within_reach,
)
from rag_app.service.auth import KeyInfo
from rag_app.service.deps import EditorDep, KeyDep, ServiceState, StateDep
from rag_app.service.json_body import body_schema, json_body
from rag_app.service.routes_query import filenames
from rag_app.service.schemas import CollectionScope
from rag_app.service.schemas_chat import ConversationId
from rag_app.store.feedback import Expected, FeedbackRecord

router = APIRouter(prefix="/api", tags=["feedback"])


class SourceRef(BaseModel):
    doc_id: str = Field(max_length=128)
    chunk_id: str = Field(max_length=128)
    filename: str = Field("", max_length=1000)


class FeedbackIn(BaseModel):
    rating: Literal["up", "down"]
    comment: str = Field("", max_length=2000)
    conversation_id: ConversationId | None = Field(
        None, description="A turn of your conversation: its question, answer and sources."
    )
    turn: int | None = Field(None, ge=0, strict=True, description="Default: the last turn.")
    question: str | None = Field(None, max_length=2000, description="Without a conversation.")
    answer: str | None = Field(None, max_length=20000)
    sources: list[SourceRef] = Field(default_factory=list, max_length=50)
    confidence: float | None = Field(None, ge=0, le=1)
    collection: CollectionScope | None = Field(
        None, description="The collection(s) the question was asked in, if any."
    )
    expected_answer: str = Field(
        "", max_length=4000, description="The right answer (its key facts), if you know it."
    )
    should_refuse: bool = Field(False, description="The knowledge base should refuse this.")


class ExpectedIn(BaseModel):
    """What the answer should have been: its key facts, or a refusal (both empty: clear it)."""

    expected_answer: str = Field("", max_length=4000)
    should_refuse: bool = False


class FeedbackCreated(BaseModel):
    feedback_id: int


class FeedbackList(BaseModel):
    feedback: list[FeedbackRecord]


FeedbackBody = Annotated[FeedbackIn, Depends(json_body(FeedbackIn))]
ExpectedBody = Annotated[ExpectedIn, Depends(json_body(ExpectedIn))]


def _expected(answer: str, refuse: bool) -> Expected | None:
    expected = Expected(answer=answer.strip(), refuse=refuse)
    return expected if expected.given else None


def _from_turn(state: ServiceState, key: KeyInfo, body: FeedbackIn) -> dict[str, Any]:
    found = state.kb.chat.store.get(key.tenant, key.key_id, body.conversation_id or "")
    if found is None or not found.turns:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no conversation {body.conversation_id}")
    index = len(found.turns) - 1 if body.turn is None else body.turn
    if index >= len(found.turns):
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no turn {index} in the conversation")
    turn = found.turns[index]
    answer = turn.answer
    return {
        "question": turn.question,
        "resolved_question": turn.resolved_question,
        "answer": str(answer.get("answer", "")),
        "sources": [  # as the turn cited them, less documents gone (or moved out of reach) since
            {"doc_id": s.get("doc_id", ""), "chunk_id": s.get("chunk_id", "")}
            for s in answer.get("sources", [])
            if can_read(state, key, str(s.get("doc_id", "")))
        ],
        "confidence": answer.get("confidence"),
    }


@router.post(
    "/feedback",
    status_code=status.HTTP_201_CREATED,
    response_model=FeedbackCreated,
    openapi_extra=body_schema(FeedbackIn),
)
def add_feedback(key: KeyDep, body: FeedbackBody, state: StateDep) -> FeedbackCreated:
    """👍/👎 (``rating``) and an optional comment on a turn of your conversation
    (``conversation_id``, ``turn``) or on an answer you pass (``question``, ``answer``,
    ``sources``, ``confidence``). Stored with the settings that answered it."""
    if body.conversation_id is not None:
        what = _from_turn(state, key, body)
    elif body.question and body.question.strip() and body.answer is not None:
        what = {
            "question": body.question,
            "resolved_question": body.question,
            "answer": body.answer,
            "sources": [s.model_dump() for s in body.sources],
            "confidence": body.confidence,
        }
        foreign = sorted({s.doc_id for s in body.sources if not can_read(state, key, s.doc_id)})
        if foreign:  # another tenant's, another collection's or no document: told apart nowhere
            raise HTTPException(
                422,
                f"{len(foreign)} of the sources cite documents this key cannot read: "
                "cite only documents of your answers",
            )
    else:
        raise HTTPException(
            422,
            "give conversation_id (a turn of yours), or question and answer",
        )
    names = filenames(state, (s["doc_id"] for s in what["sources"]), key.tenant)
    for source in what["sources"]:
        source["filename"] = names[source["doc_id"]]
    record = FeedbackRecord(
        tenant=key.tenant,
        key_id=key.key_id,
        rating=body.rating,
        comment=body.comment,
        settings={**state.kb.answer_settings(), "collections": as_names(body.collection)},
        conversation_id=body.conversation_id,
        expected=_expected(body.expected_answer, body.should_refuse),
        **what,
    )
    return FeedbackCreated(feedback_id=state.kb.feedback.add(record))


@router.get("/feedback", response_model=FeedbackList)
def list_feedback(
    key: EditorDep,
    state: StateDep,
    rating: Literal["up", "down"] | None = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    collection: Annotated[
        str | None,
        Query(
            max_length=64,
            description="Only feedback on questions asked in this collection or citing one of "
            "its documents.",
        ),
    ] = None,
) -> FeedbackList:
    """Your tenant's feedback, the latest first (``rating=down``: the answers to fix); a key
    limited to some collections sees the feedback of those."""
    if collection is None and key.collections is None:
        return FeedbackList(feedback=state.kb.feedback.list(key.tenant, rating=rating, limit=limit))
    visible = feedback_filter(state, key, collection)
    found = [
        record
        for record in state.kb.feedback.list(key.tenant, rating=rating, limit=10 * limit)
        if visible(record)
    ]
    return FeedbackList(feedback=sources_within_reach(state, key, found[:limit]))


@router.patch(
    "/feedback/{feedback_id}", response_model=FeedbackRecord, openapi_extra=body_schema(ExpectedIn)
)
def correct_feedback(
    feedback_id: int, key: EditorDep, body: ExpectedBody, state: StateDep
) -> FeedbackRecord:
    """Say what the answer should have been (``expected_answer``, or ``should_refuse``; both
    empty clears it): `rag feedback export` turns it into the case's expectation."""
    record = state.kb.feedback.get(key.tenant, feedback_id)
    if record is None or not feedback_filter(state, key)(record):
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no feedback {feedback_id}")
    state.kb.feedback.set_expected(
        key.tenant, feedback_id, _expected(body.expected_answer, body.should_refuse)
    )
    updated = state.kb.feedback.get(key.tenant, feedback_id)
    assert updated is not None
    return sources_within_reach(state, key, [updated])[0]
