"""Conversations of ``/api/chat`` in the ledger: each belongs to one tenant and one API key, and
is visible to no other; bounded by turns kept per conversation and days kept since its last turn.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import and_, delete, desc, func, insert, select, update
from sqlalchemy.engine import Engine

from rag_app.store.schema import conversation_turns, conversations

PRUNE_EVERY_S = 3600.0


@dataclass(frozen=True)
class Turn:
    question: str
    resolved_question: str
    answer: dict[str, Any]  # the Answer as JSON
    created_at: float


@dataclass(frozen=True)
class Conversation:
    conversation_id: str
    title: str
    created_at: float
    updated_at: float
    turns: list[Turn] = field(default_factory=list)
    turn_count: int = 0
    collections: list[str] = field(default_factory=list)  # ids it was started in


class ConversationStore:
    """Create, extend, list, read and delete conversations of one (tenant, key)."""

    def __init__(self, engine: Engine, *, max_turns: int = 50, keep_days: float = 30.0) -> None:
        self.engine = engine
        self.max_turns = max_turns
        self.keep_days = keep_days
        self._pruned_at = -PRUNE_EVERY_S  # monotonic time of the last prune (none yet)

    def _cutoff(self) -> float:
        """Conversations idle since before this time are gone (listed, read or not)."""
        return time.time() - self.keep_days * 86400

    def _prune_due(self) -> None:
        """Prune at most once every ``PRUNE_EVERY_S`` (a list is a read: no write each time)."""
        now = time.monotonic()
        if now - self._pruned_at >= PRUNE_EVERY_S:
            self._pruned_at = now
            self.prune()

    def _owned(self, tenant: str, key_id: str, conversation_id: str) -> Any:
        """That conversation of (tenant, key), unless idle past ``keep_days`` (gone, pruned
        or not: it is neither read nor continued)."""
        return and_(
            conversations.c.conversation_id == conversation_id,
            conversations.c.tenant == tenant,
            conversations.c.key_id == key_id,
            conversations.c.updated_at >= self._cutoff(),
        )

    def create(self, tenant: str, key_id: str, title: str, collections: Sequence[str] = ()) -> str:
        """A new conversation; ``collections``: the collection ids it is asked in (kept: its
        later turns stay there)."""
        now = time.time()
        conversation_id = secrets.token_hex(8)
        with self.engine.begin() as conn:
            conn.execute(
                insert(conversations).values(
                    conversation_id=conversation_id,
                    tenant=tenant,
                    key_id=key_id,
                    title=title[:200],
                    created_at=now,
                    updated_at=now,
                    collections=json.dumps(list(collections)),
                )
            )
        return conversation_id

    def exists(self, tenant: str, key_id: str, conversation_id: str) -> bool:
        """Whether the conversation is there and this owner's."""
        return self.collections_of(tenant, key_id, conversation_id) is not None

    def collections_of(self, tenant: str, key_id: str, conversation_id: str) -> list[str] | None:
        """The collection ids the conversation was started in ([]: the whole tenant); None when
        it is not there or not this owner's."""
        with self.engine.connect() as conn:
            found = conn.execute(
                select(conversations.c.collections).where(
                    self._owned(tenant, key_id, conversation_id)
                )
            ).first()
        return None if found is None else list(json.loads(found[0] or "[]"))

    def recent_questions(
        self, tenant: str, key_id: str, conversation_id: str, limit: int = 3
    ) -> list[str]:
        """The resolved questions of the conversation's last ``limit`` turns, oldest first
        (empty: no turn yet). ``KeyError`` when the conversation is not this owner's."""
        if not self.exists(tenant, key_id, conversation_id):
            raise KeyError(conversation_id)
        with self.engine.connect() as conn:
            latest = conn.execute(
                select(conversation_turns.c.resolved_question)
                .where(conversation_turns.c.conversation_id == conversation_id)
                .order_by(desc(conversation_turns.c.turn_id))
                .limit(limit)
            ).scalars()
            return list(latest)[::-1]

    def add_turn(self, conversation_id: str, turn: Turn) -> None:
        """Append a turn, dropping the oldest beyond ``max_turns``."""
        with self.engine.begin() as conn:
            conn.execute(
                insert(conversation_turns).values(
                    conversation_id=conversation_id,
                    question=turn.question,
                    resolved_question=turn.resolved_question,
                    answer=json.dumps(turn.answer, ensure_ascii=False),
                    created_at=turn.created_at,
                )
            )
            conn.execute(
                update(conversations)
                .where(conversations.c.conversation_id == conversation_id)
                .values(updated_at=turn.created_at)
            )
            kept = (
                select(conversation_turns.c.turn_id)
                .where(conversation_turns.c.conversation_id == conversation_id)
                .order_by(desc(conversation_turns.c.turn_id))
                .limit(self.max_turns)
            )
            conn.execute(
                delete(conversation_turns).where(
                    and_(
                        conversation_turns.c.conversation_id == conversation_id,
                        conversation_turns.c.turn_id.not_in(kept.scalar_subquery()),
                    )
                )
            )

    def list(self, tenant: str, key_id: str, limit: int = 50) -> list[Conversation]:
        self._prune_due()
        counts = (
            select(func.count())
            .where(conversation_turns.c.conversation_id == conversations.c.conversation_id)
            .scalar_subquery()
        )
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(conversations, counts.label("turn_count"))
                .where(
                    and_(
                        conversations.c.tenant == tenant,
                        conversations.c.key_id == key_id,
                        conversations.c.updated_at >= self._cutoff(),
                    )
                )
                .order_by(desc(conversations.c.updated_at))
                .limit(limit)
            ).mappings()
            return [
                Conversation(
                    conversation_id=r["conversation_id"],
                    title=r["title"],
                    created_at=r["created_at"],
                    updated_at=r["updated_at"],
                    turn_count=int(r["turn_count"]),
                )
                for r in rows
            ]

    def get(self, tenant: str, key_id: str, conversation_id: str) -> Conversation | None:
        with self.engine.connect() as conn:
            row = (
                conn.execute(
                    select(conversations).where(self._owned(tenant, key_id, conversation_id))
                )
                .mappings()
                .first()
            )
            if row is None:
                return None
            turns = [
                Turn(
                    question=t["question"],
                    resolved_question=t["resolved_question"],
                    answer=json.loads(t["answer"]),
                    created_at=t["created_at"],
                )
                for t in conn.execute(
                    select(conversation_turns)
                    .where(conversation_turns.c.conversation_id == conversation_id)
                    .order_by(conversation_turns.c.turn_id)
                ).mappings()
            ]
        return Conversation(
            conversation_id=row["conversation_id"],
            title=row["title"],
            created_at=row["created_at"],
            updated_at=row["updated_at"],
            turns=turns,
            turn_count=len(turns),
            collections=list(json.loads(row["collections"] or "[]")),
        )

    def delete(self, tenant: str, key_id: str, conversation_id: str) -> bool:
        with self.engine.begin() as conn:
            gone = conn.execute(
                delete(conversations).where(self._owned(tenant, key_id, conversation_id))
            ).rowcount
            if gone:
                conn.execute(
                    delete(conversation_turns).where(
                        conversation_turns.c.conversation_id == conversation_id
                    )
                )
        return bool(gone)

    def prune(self) -> int:
        """Delete the conversations idle for more than ``keep_days``; returns how many."""
        cutoff = self._cutoff()
        with self.engine.begin() as conn:
            old = list(
                conn.execute(
                    select(conversations.c.conversation_id).where(
                        conversations.c.updated_at < cutoff
                    )
                ).scalars()
            )
            if old:
                conn.execute(
                    delete(conversation_turns).where(conversation_turns.c.conversation_id.in_(old))
                )
                conn.execute(delete(conversations).where(conversations.c.conversation_id.in_(old)))
        return len(old)
