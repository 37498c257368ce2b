"""The Chroma search index: vectors plus filterable metadata (tenant, doc_id, version, chunk_index).

Vectors are always passed in: Chroma embeds text itself (and tries to download a model) whenever an
add or query carries text without embeddings, so no text is ever handed to it for embedding.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import chromadb
from chromadb.config import Settings as ChromaSettings

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class VectorHit:
    chunk_id: str
    score: float  # cosine similarity, 1 - distance
    metadata: dict[str, Any]


class VectorStore:
    """A Chroma collection in cosine space, local (persistent) or remote (``chroma run``)."""

    def __init__(
        self, *, path: Path | None = None, url: str | None = None, collection: str
    ) -> None:
        chroma_settings = ChromaSettings(anonymized_telemetry=False, allow_reset=False)
        if url:
            parsed = urlparse(url)
            if not parsed.hostname:
                raise ValueError(f"RAG_CHROMA_URL must look like http://host:port, got {url!r}")
            self.client: Any = chromadb.HttpClient(
                host=parsed.hostname,
                port=parsed.port or 8000,
                ssl=parsed.scheme == "https",
                settings=chroma_settings,
            )
        else:
            if path is None:
                raise ValueError("a local Chroma index needs a path")
            path.mkdir(parents=True, exist_ok=True)
            self.client = chromadb.PersistentClient(path=str(path), settings=chroma_settings)
        self.collection = self.client.get_or_create_collection(
            name=collection,
            embedding_function=None,
            configuration={"hnsw": {"space": "cosine"}},
        )
        self._max_batch = int(getattr(self.client, "get_max_batch_size", lambda: 5000)() or 5000)

    def count(self) -> int:
        return int(self.collection.count())

    def upsert(
        self,
        ids: Sequence[str],
        embeddings: Sequence[Sequence[float]],
        metadatas: Sequence[dict[str, Any]],
    ) -> None:
        if not (len(ids) == len(embeddings) == len(metadatas)):
            raise ValueError("ids, embeddings and metadatas must have the same length")
        step = max(1, min(self._max_batch, 4000))
        for start in range(0, len(ids), step):
            end = start + step
            self.collection.upsert(
                ids=list(ids[start:end]),
                embeddings=[list(map(float, e)) for e in embeddings[start:end]],
                metadatas=list(metadatas[start:end]),
            )

    def query(
        self, embedding: Sequence[float], n_results: int, where: dict[str, Any] | None = None
    ) -> list[VectorHit]:
        if n_results <= 0:
            return []
        result = self.collection.query(
            query_embeddings=[list(map(float, embedding))],
            n_results=n_results,
            where=where or None,
            include=["metadatas", "distances"],
        )
        ids = result["ids"][0] if result["ids"] else []
        distances = (result.get("distances") or [[]])[0]
        metas = (result.get("metadatas") or [[]])[0]
        return [
            VectorHit(chunk_id=i, score=1.0 - float(d), metadata=dict(m or {}))
            for i, d, m in zip(ids, distances, metas, strict=False)
        ]

    def delete_document(self, doc_id: str, keep_version: int | None = None) -> None:
        """Remove a document's vectors (all versions, or all but ``keep_version``)."""
        where: dict[str, Any] = {"doc_id": doc_id}
        if keep_version is not None:
            where = {"$and": [{"doc_id": doc_id}, {"version": {"$ne": keep_version}}]}
        self.collection.delete(where=where)

    def delete_ids(self, ids: Sequence[str]) -> None:
        for start in range(0, len(ids), 4000):
            self.collection.delete(ids=list(ids[start : start + 4000]))

    def all_ids(self) -> set[str]:
        ids: set[str] = set()
        offset, page = 0, 5000
        while True:
            got = self.collection.get(include=[], limit=page, offset=offset)
            batch = got["ids"]
            ids.update(batch)
            if len(batch) < page:
                return ids
            offset += page
