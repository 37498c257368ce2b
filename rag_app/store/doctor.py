"""``rag doctor``: reconcile the vector and keyword indexes with the ledger (the source of
truth) after a crash, and check (optionally repair) the vectors' self-recall."""

from __future__ import annotations

from collections.abc import Callable

from llama_index.core.base.embeddings.base import BaseEmbedding

from rag_app.store.ledger import Ledger
from rag_app.store.vector_health import rebuild, self_recall
from rag_app.store.vectors import VectorStore


def doctor(
    ledger: Ledger,
    vectors: VectorStore,
    embed_model: Callable[[], BaseEmbedding],
    repair: bool = True,
    *,
    sample: int = 200,
    rebuild_vectors: bool = False,
    min_recall: float = 0.99,
) -> dict[str, float]:
    """Reconcile the vector and keyword indexes with the ledger (the source of truth).

    Removes vectors of chunks that are not active, and ledger/keyword rows of versions that
    are not active (what a crash between the steps of an ingestion or a delete leaves).
    Then measures the self-recall of ``sample`` active chunks (store/vector_health.py);
    ``rebuild_vectors`` (with ``repair``) re-creates the collection when it is below
    ``min_recall`` and measures again.
    """
    result: dict[str, float] = dict(reconcile(ledger, vectors, repair))
    health = self_recall(vectors, ledger, sample=sample)
    result["self_recall"] = health.recall
    result["self_recall_sampled"] = health.sampled
    result["rebuilt_vectors"] = 0
    if repair and rebuild_vectors and health.recall < min_recall:
        done = rebuild(vectors, ledger, embed_model())
        result["rebuilt_vectors"] = done["vectors"]
        result["reembedded_vectors"] = done["reembedded"]
        result["self_recall"] = self_recall(vectors, ledger, sample=sample).recall
    return result


def reconcile(ledger: Ledger, vectors: VectorStore, repair: bool) -> dict[str, int]:
    stale_chunks, stale_keywords = ledger.purge_inactive(repair=repair)
    active = ledger.all_active_chunk_ids()
    indexed = vectors.all_ids()
    orphans = sorted(indexed - active)
    missing = sorted(active - indexed)
    if repair and orphans:
        vectors.delete_ids(orphans)
    return {
        "active_chunks": len(active),
        "vectors": len(indexed),
        "orphan_vectors": len(orphans),
        "missing_vectors": len(missing),
        "inactive_chunk_rows": stale_chunks,
        "stale_keyword_rows": stale_keywords,
        "repaired": (len(orphans) + stale_chunks + stale_keywords) if repair else 0,
    }
