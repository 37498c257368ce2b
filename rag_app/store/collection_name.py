"""Each knowledge base's Chroma collection name, kept in the ledger's ``kb_meta``.

With one shared default name, two knowledge bases on one Chroma server wrote into the same
collection, and ``rag doctor`` on one deleted the other's vectors as orphans (issue 16). A new
knowledge base now gets a name of its own (``rag_<16 hex>``) at creation, stored in the ledger so
every later open (and every process: API, workers, CLI) uses it. A knowledge base created before
that keeps ``rag_chunks``, where its vectors are. An explicit ``RAG_COLLECTION`` always wins (and
a new knowledge base opened with one remembers it).
"""

from __future__ import annotations

import uuid

from sqlalchemy import insert, select
from sqlalchemy.exc import IntegrityError

from rag_app.store.ledger import Ledger
from rag_app.store.schema import documents, meta_table

META_KEY = "collection"
LEGACY_COLLECTION = "rag_chunks"  # the one default name before per-KB names


def new_collection_name() -> str:
    return f"rag_{uuid.uuid4().hex[:16]}"


def collection_for(ledger: Ledger, configured: str | None) -> str:
    """The collection this knowledge base uses: ``configured``, else the stored name, else a
    name chosen now (the legacy one for a knowledge base that was opened before)."""
    stored = ledger.get_meta(META_KEY)
    if stored is not None:
        return configured or stored
    with ledger.engine.connect() as conn:
        existing = (
            conn.execute(select(meta_table.c.key).where(meta_table.c.key == "embedding")).first()
            or conn.execute(select(documents.c.doc_id).limit(1)).first()
        )
    chosen = configured or (LEGACY_COLLECTION if existing else new_collection_name())
    try:  # first writer wins: processes opening a new KB at once agree on one name
        with ledger.engine.begin() as conn:
            conn.execute(insert(meta_table).values(key=META_KEY, value=chosen))
    except IntegrityError:
        return configured or str(ledger.get_meta(META_KEY))
    return chosen
