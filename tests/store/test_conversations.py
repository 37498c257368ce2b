"""ConversationStore: conversations idle past their keep-days are gone when listed or read,
and pruning (a write) runs at most once an hour, not on every list."""

from __future__ import annotations

import time
from pathlib import Path

from sqlalchemy import update

from rag_app.store.conversations import ConversationStore
from rag_app.store.ledger import Ledger
from rag_app.store.schema import conversations


def test_an_idle_conversation_is_neither_listed_nor_read_and_is_pruned(tmp_path: Path) -> None:
    ledger = Ledger(f"sqlite:///{tmp_path / 'ledger.db'}")
    store = ConversationStore(ledger.engine, keep_days=1)
    kept = store.create("t", "k", "kept")
    idle = store.create("t", "k", "idle")
    store.list("t", "k")  # the first list prunes (nothing is old yet)
    with ledger.engine.begin() as conn:
        conn.execute(
            update(conversations)
            .where(conversations.c.conversation_id == idle)
            .values(updated_at=time.time() - 2 * 86400)
        )
    # no prune due for an hour, yet the idle one is gone to its reader
    assert [c.conversation_id for c in store.list("t", "k")] == [kept]
    assert store.get("t", "k", idle) is None and store.get("t", "k", kept) is not None
    assert store.collections_of("t", "k", idle) is None  # so /api/chat cannot continue it
    assert store.prune() == 1
    ledger.close()
