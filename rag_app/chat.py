"""A conversation's turn: the question resolved against the previous one (follow-ups without an
LLM, rag_app/analysis/followup.py; with one, rewritten by it from the last turns,
rag_app/analysis/followup_llm.py, the rules as the fallback), answered as ``ask`` answers it, and
stored with its answer (store/conversations.py)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Protocol

from pydantic import BaseModel, Field

from rag_app.analysis.followup import FollowUpResolver
from rag_app.analysis.followup_llm import LLMFollowUpRewriter
from rag_app.llm_budget import Budget, llm_budget
from rag_app.store.conversations import ConversationStore, Turn
from rag_app.synthesis.citations import TextSink
from rag_app.types import Answer


class AskFn(Protocol):
    """The knowledge base's ask: (question, tenant, top_k, doc_ids), streaming to ``on_text``."""

    def __call__(
        self,
        question: str,
        tenant: str,
        top_k: int,
        doc_ids: Sequence[str] | None,
        *,
        on_text: TextSink | None = None,
        collection_ids: Sequence[str] | None = None,
    ) -> Answer: ...


class ChatTurn(BaseModel):
    """One answered turn of a conversation (typed output of :meth:`ChatService.turn`)."""

    conversation_id: str
    question: str
    resolved_question: str = Field(description="The question as it was understood and asked.")
    followup: str = Field(
        description="standalone | ellipsis | pronoun | llm: how it was resolved (llm: rewritten "
        "by the LLM, differently from the rules)."
    )
    answer: Answer


def _norm(question: str) -> str:
    return question.strip().rstrip("？?。. ")


class ConversationNotFound(LookupError):
    """No such conversation for this tenant and key (or it expired)."""


class ChatService:
    """Answers conversation turns over ``ask`` (the knowledge base's) and keeps them in
    ``store``; one per knowledge base, built once."""

    def __init__(
        self,
        store: ConversationStore,
        ask: AskFn,
        resolver: FollowUpResolver | None = None,
        rewriter: LLMFollowUpRewriter | None = None,
    ) -> None:
        self.store, self.ask = store, ask
        self.resolver = resolver or FollowUpResolver()
        self.rewriter = rewriter

    def _budget(self) -> AbstractContextManager[Budget | None]:
        """The turn's LLM time budget (RAG_LLM_BUDGET; the rewriter exists only with an LLM)."""
        return nullcontext() if self.rewriter is None else llm_budget(self.rewriter.budget)

    def turn(
        self,
        question: str,
        *,
        tenant: str,
        key_id: str,
        conversation_id: str | None = None,
        top_k: int = 5,
        doc_ids: Sequence[str] | None = None,
        on_text: TextSink | None = None,
        collections: Sequence[str] = (),
        reach: Sequence[str] | None = None,
    ) -> ChatTurn:
        """Resolve, answer and store one turn (``on_text``: the answer's text as an LLM writes
        it; ``collections``: the collection ids a new conversation is asked in, kept with it;
        ``doc_ids`` is the scope they give; ``reach``: the collection ids whose annotations
        may answer, None: any of the tenant)."""
        history: list[str] = []
        if conversation_id is not None:
            limit = self.rewriter.history_turns if self.rewriter is not None else 1
            try:
                history = self.store.recent_questions(tenant, key_id, conversation_id, limit)
            except KeyError:
                raise ConversationNotFound(conversation_id) from None
        followup = self.resolver.resolve(question, history[-1] if history else None)
        resolved, rule = followup.resolved, followup.rule
        with self._budget():  # the rewrite and the answer wait on the LLM within one budget
            if self.rewriter is not None and history:  # never for a first turn
                rewritten = self.rewriter.rewrite(question, history)
                if rewritten is not None and _norm(rewritten) != _norm(resolved):
                    resolved, rule = rewritten, "llm"
            answer = self.ask(
                resolved, tenant, top_k, doc_ids, on_text=on_text, collection_ids=reach
            )
        if conversation_id is None:  # created once its first turn is answered
            conversation_id = self.store.create(
                tenant, key_id, title=question.strip(), collections=collections
            )
        self.store.add_turn(
            conversation_id,
            Turn(
                question=question,
                resolved_question=resolved,
                answer=answer.model_dump(mode="json"),
                created_at=time.time(),
            ),
        )
        return ChatTurn(
            conversation_id=conversation_id,
            question=question,
            resolved_question=resolved,
            followup=rule,
            answer=answer,
        )
