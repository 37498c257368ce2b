"""Vector health: can each chunk be found by its own vector? And the repair when it can't.

Chroma's HNSW index loses reachability after many deletes and re-inserts (a KB re-parsed often);
nothing fails, dense recall just decays. ``self_recall`` samples active chunks, queries the
collection with each chunk's stored vector and counts how many come back in their own top-k (a
chunk without a vector counts as lost). ``rebuild`` re-creates the collection: the vectors of
the active chunks read back from Chroma, the missing ones re-embedded from the ledger's text
(heading path + text, as the ingestion pipeline embeds them), written to a fresh collection that
then takes the old one's name.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.schema import MetadataMode, TextNode

from rag_app.chunking.nodes import restrict_embed_metadata
from rag_app.store.protocols import ChunkReader
from rag_app.store.vectors import VectorStore

__all__ = ["VectorHealth", "rebuild", "self_recall"]

_PAGE = 256


@dataclass
class VectorHealth:
    sampled: int = 0
    found: int = 0
    missing: int = 0  # sampled chunks with no vector at all
    lost: list[str] = field(default_factory=list)  # sampled chunks not in their own top-k

    @property
    def recall(self) -> float:
        return round(self.found / self.sampled, 4) if self.sampled else 1.0


def _stored(vectors: VectorStore, ids: Sequence[str]) -> dict[str, tuple[Any, dict[str, Any]]]:
    """id -> (vector, metadata) of those of ``ids`` that Chroma holds."""
    out: dict[str, tuple[Any, dict[str, Any]]] = {}
    for start in range(0, len(ids), _PAGE):
        got = vectors.collection.get(
            ids=list(ids[start : start + _PAGE]), include=["embeddings", "metadatas"]
        )
        for i, vector, meta in zip(got["ids"], got["embeddings"], got["metadatas"], strict=True):
            out[i] = (vector, dict(meta or {}))
    return out


def self_recall(
    vectors: VectorStore, ledger: ChunkReader, *, sample: int = 200, top_k: int = 10, seed: int = 0
) -> VectorHealth:
    """Query with ``sample`` random active chunks' own vectors; count those in their top-k."""
    active = sorted(ledger.all_active_chunk_ids())
    chosen = random.Random(seed).sample(active, min(sample, len(active)))
    stored = _stored(vectors, chosen)
    health = VectorHealth(sampled=len(chosen))
    for chunk_id in chosen:
        if chunk_id not in stored:
            health.missing += 1
            health.lost.append(chunk_id)
            continue
        hits = vectors.query(stored[chunk_id][0], top_k, include_metadata=False)
        if any(hit.chunk_id == chunk_id for hit in hits):
            health.found += 1
        else:
            health.lost.append(chunk_id)
    return health


def _embed_text(text: str, title_path: str) -> str:
    node = TextNode(text=text, metadata={"title_path": title_path})
    restrict_embed_metadata(node)
    return node.get_content(metadata_mode=MetadataMode.EMBED)


def rebuild(
    vectors: VectorStore, ledger: ChunkReader, embed_model: BaseEmbedding
) -> dict[str, int]:
    """Re-create the collection from the active chunks' vectors (re-embedding missing ones)."""
    active = sorted(ledger.all_active_chunk_ids())
    stored = _stored(vectors, active)
    missing = [c for c in active if c not in stored]
    if missing:
        infos = ledger.active_chunks_by_id(missing)
        tenants: dict[str, str] = {}
        texts, metas = [], []
        for chunk_id in missing:
            info = infos[chunk_id]
            if info.doc_id not in tenants:
                doc = ledger.get_document(info.doc_id)
                tenants[info.doc_id] = doc.tenant if doc is not None else ""
            texts.append(_embed_text(info.text, info.title_path))
            metas.append(
                {
                    "tenant": tenants[info.doc_id],
                    "doc_id": info.doc_id,
                    "version": info.version,
                    "chunk_index": info.chunk_index,
                }
            )
        for chunk_id, vector, meta in zip(
            missing, embed_model.get_text_embedding_batch(texts), metas, strict=True
        ):
            stored[chunk_id] = (vector, meta)
    fresh = vectors.replace_collection(
        active,
        [stored[c][0] for c in active],
        [stored[c][1] for c in active],
    )
    return {"vectors": fresh, "reembedded": len(missing)}
