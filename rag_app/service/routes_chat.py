"""/api/chat and /api/conversations: questions in a conversation, follow-ups resolved from the
previous turn, kept per tenant and API key (visible to no other key)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, status
from fastapi.responses import StreamingResponse

from rag_app.chat import ConversationNotFound
from rag_app.service.access import as_names, scope_for
from rag_app.service.deps import KeyDep, StateDep
from rag_app.service.json_body import body_schema, json_body
from rag_app.service.routes_query import STREAMED, answer_out
from rag_app.service.schemas import AnswerOut
from rag_app.service.schemas_chat import (
    ChatIn,
    ChatOut,
    ConversationId,
    ConversationList,
    ConversationOut,
    ConversationSummary,
    TurnOut,
)
from rag_app.service.streaming import AnswerStream
from rag_app.synthesis.citations import TextSink
from rag_app.types import Answer

router = APIRouter(prefix="/api", tags=["chat"])

ChatBody = Annotated[ChatIn, Depends(json_body(ChatIn))]


def _not_found(conversation_id: str) -> HTTPException:
    return HTTPException(status.HTTP_404_NOT_FOUND, f"no conversation {conversation_id}")


@router.post("/chat", response_model=ChatOut, openapi_extra=body_schema(ChatIn), responses=STREAMED)
def chat(key: KeyDep, body: ChatBody, state: StateDep) -> ChatOut | StreamingResponse:
    """Ask within a conversation: a follow-up (那SKU-1024呢？, 犹豫期呢？, 它的保费呢？) takes what
    it lacks from the previous turn; the answer is /api/ask's, with ``conversation_id`` and the
    ``resolved_question``. Omit ``conversation_id`` to start a conversation. With
    ``stream: true``, server-sent events as for /api/ask."""
    if not body.question.strip():
        raise HTTPException(422, "question is empty")
    stored: list[str] = []  # a conversation stays in the collections it was started in
    if body.conversation_id is not None:
        found = state.kb.chat.store.collections_of(key.tenant, key.key_id, body.conversation_id)
        if found is None:
            raise _not_found(body.conversation_id)
        # a deleted collection no longer scopes it (the conversation then shows, and asks, all)
        alive = {c.collection_id for c in state.kb.collections.all(key.tenant, only=found)}
        stored = [i for i in found if i in alive]
    names = as_names(body.collection)
    scope = scope_for(state, key, names, body.doc_ids, ids=[] if names else stored)
    chosen = state.kb.collections.ids(key.tenant, names) if names else stored

    def produce(on_text: TextSink | None = None) -> ChatOut:
        try:
            turn = state.kb.chat.turn(
                body.question,
                tenant=key.tenant,
                key_id=key.key_id,
                conversation_id=body.conversation_id,
                top_k=body.top_k,
                doc_ids=scope,
                on_text=on_text,
                collections=chosen,
                reach=chosen or key.collections,
            )
        except ConversationNotFound:
            raise _not_found(body.conversation_id or "") from None
        return answer_out(
            state,
            turn.answer,
            ChatOut,
            conversation_id=turn.conversation_id,
            resolved_question=turn.resolved_question,
            followup=turn.followup,
            collections=state.kb.collections.names(key.tenant, chosen),
        )

    return AnswerStream(produce).response() if body.stream else produce()


@router.get("/conversations", response_model=ConversationList)
def list_conversations(key: KeyDep, state: StateDep) -> ConversationList:
    """Your conversations (this key's), the latest first."""
    found = state.kb.chat.store.list(key.tenant, key.key_id)
    return ConversationList(
        conversations=[
            ConversationSummary(
                conversation_id=c.conversation_id,
                title=c.title,
                turns=c.turn_count,
                created_at=c.created_at,
                updated_at=c.updated_at,
            )
            for c in found
        ]
    )


@router.get("/conversations/{conversation_id}", response_model=ConversationOut)
def get_conversation(
    conversation_id: ConversationId, key: KeyDep, state: StateDep
) -> ConversationOut:
    """A conversation's turns, each with its question as understood and its answer."""
    found = state.kb.chat.store.get(key.tenant, key.key_id, conversation_id)
    if found is None:
        raise _not_found(conversation_id)
    return ConversationOut(
        conversation_id=found.conversation_id,
        title=found.title,
        created_at=found.created_at,
        updated_at=found.updated_at,
        collections=state.kb.collections.names(key.tenant, found.collections),
        turns=[
            TurnOut(
                question=t.question,
                resolved_question=t.resolved_question,
                answer=answer_out(state, Answer.model_validate(t.answer), AnswerOut),
                created_at=t.created_at,
            )
            for t in found.turns
        ],
    )


@router.delete("/conversations/{conversation_id}", status_code=status.HTTP_204_NO_CONTENT)
def delete_conversation(conversation_id: ConversationId, key: KeyDep, state: StateDep) -> None:
    """Delete a conversation of yours and its turns."""
    if not state.kb.chat.store.delete(key.tenant, key.key_id, conversation_id):
        raise _not_found(conversation_id)
