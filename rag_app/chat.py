"""A conversation's turn: the question resolved against the previous one (follow-ups without an
LLM, rag_app/analysis/followup.py), answered as ``ask`` answers it, and stored with its answer
(store/conversations.py)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from pydantic import BaseModel, Field

from rag_app.analysis.followup import FollowUpResolver
from rag_app.store.conversations import ConversationStore, Turn
from rag_app.types import Answer

AskFn = Callable[[str, str, int, Sequence[str] | None], Answer]


class ChatTurn(BaseModel):
    """One answered turn of a conversation (typed output of :meth:`ChatService.turn`)."""

    conversation_id: str
    question: str
    resolved_question: str = Field(description="The question as it was understood and asked.")
    followup: str = Field(description="standalone | ellipsis | pronoun: how it was resolved.")
    answer: Answer


class ConversationNotFound(LookupError):
    """No such conversation for this tenant and key (or it expired)."""


class ChatService:
    """Answers conversation turns over ``ask`` (the knowledge base's) and keeps them in
    ``store``; one per knowledge base, built once."""

    def __init__(
        self, store: ConversationStore, ask: AskFn, resolver: FollowUpResolver | None = None
    ) -> None:
        self.store, self.ask = store, ask
        self.resolver = resolver or FollowUpResolver()

    def turn(
        self,
        question: str,
        *,
        tenant: str,
        key_id: str,
        conversation_id: str | None = None,
        top_k: int = 5,
        doc_ids: Sequence[str] | None = None,
    ) -> ChatTurn:
        previous = None
        if conversation_id is not None:
            try:
                previous = self.store.last_question(tenant, key_id, conversation_id)
            except KeyError:
                raise ConversationNotFound(conversation_id) from None
        followup = self.resolver.resolve(question, previous)
        answer = self.ask(followup.resolved, tenant, top_k, doc_ids)
        if conversation_id is None:  # created once its first turn is answered
            conversation_id = self.store.create(tenant, key_id, title=question.strip())
        self.store.add_turn(
            conversation_id,
            Turn(
                question=question,
                resolved_question=followup.resolved,
                answer=answer.model_dump(mode="json"),
                created_at=time.time(),
            ),
        )
        return ChatTurn(
            conversation_id=conversation_id,
            question=question,
            resolved_question=followup.resolved,
            followup=followup.rule,
            answer=answer,
        )
