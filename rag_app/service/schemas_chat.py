"""The request and response bodies of /api/chat and /api/conversations."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field, StringConstraints

from rag_app.service.schemas import AnswerOut, AskIn
from rag_app.time_format import EpochTime

ConversationId = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{16}$")]


class ChatIn(AskIn):
    """/api/ask's request, in a conversation."""

    conversation_id: ConversationId | None = Field(
        None, description="Continue this conversation (yours); omitted: start a new one."
    )


class ChatOut(AnswerOut):
    """The turn's answer (the fields of /api/ask) and how its question was understood."""

    conversation_id: str
    resolved_question: str = Field(
        description="The question as asked of the knowledge base: a follow-up completed from "
        "the previous turn (那SKU-1024呢？ → SKU-1024的库存是多少？), else as written."
    )
    collections: list[str] = Field(
        default_factory=list,
        description="The collections the conversation is asked in (set by its first turn; "
        "a later turn without `collection` stays there); empty: the whole tenant.",
    )
    followup: str = Field(
        description="standalone | ellipsis | pronoun | llm (rewritten by the LLM, "
        "RAG_LLM_BASE_URL, differently from the rules)"
    )


class ConversationSummary(BaseModel):
    conversation_id: str
    title: str = Field(description="Its first question.")
    turns: int
    created_at: EpochTime = Field(description="ISO 8601, UTC.")
    updated_at: EpochTime = Field(description="Its last turn's time (ISO 8601, UTC).")


class ConversationList(BaseModel):
    conversations: list[ConversationSummary]


class TurnOut(BaseModel):
    question: str
    resolved_question: str
    answer: AnswerOut = Field(description="As /api/chat answered it (sources with file names).")
    created_at: EpochTime


class ConversationOut(BaseModel):
    conversation_id: str
    title: str
    created_at: EpochTime
    updated_at: EpochTime
    collections: list[str] = Field(
        default_factory=list, description="The collections it is asked in (empty: all)."
    )
    turns: list[TurnOut]
