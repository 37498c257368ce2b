"""HybridRetriever: dense (Chroma) and keyword (BM25 over jieba tokens) under one scope, fused.

Both branches see the same :class:`Scope` (tenant, optional documents) *inside* their query, and
both return only chunks that are active in the ledger, so fusion never sees another tenant's or a
stale chunk.
"""

from __future__ import annotations

import time
from typing import Any, Literal

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from rag_app.retrieval.fusion import reciprocal_rank_fusion, weighted_score_fusion
from rag_app.retrieval.scope import Scope
from rag_app.retrieval.tokenizer import label_tokens, query_tokens
from rag_app.store.ledger import Ledger
from rag_app.store.vectors import VectorStore
from rag_app.types import ChunkInfo

Mode = Literal["hybrid", "dense", "keyword"]


def chunk_to_node(chunk: ChunkInfo, source: str, tenant: str, extra: dict[str, Any]) -> TextNode:
    return TextNode(
        id_=chunk.chunk_id,
        text=chunk.text,
        metadata={
            "doc_id": chunk.doc_id,
            "chunk_id": chunk.chunk_id,
            "chunk_index": chunk.chunk_index,
            "version": chunk.version,
            "title_path": chunk.title_path,
            "start_char": chunk.start_char,
            "end_char": chunk.end_char,
            "prefix_chars": chunk.prefix_chars,
            "suffix_chars": chunk.suffix_chars,
            "block_types": chunk.block_types,
            "source": source,
            "tenant": tenant,
            **extra,
        },
    )


class HybridRetriever(BaseRetriever):
    """Dense ∥ keyword retrieval within a scope, fused by (weighted) reciprocal rank."""

    def __init__(
        self,
        *,
        ledger: Ledger,
        vectors: VectorStore,
        embed_model: BaseEmbedding,
        scope: Scope,
        top_k: int = 5,
        mode: Mode = "hybrid",
        fusion: Literal["rrf", "weighted"] = "rrf",
        rrf_k: int = 60,
        dense_weight: float = 1.0,
        keyword_weight: float = 1.0,
        candidates: int = 30,
        label_dense_factor: float = 0.1,
    ) -> None:
        super().__init__()
        if top_k <= 0:
            raise ValueError("top_k must be positive")
        self.ledger = ledger
        self.vectors = vectors
        self.embed_model = embed_model
        self.scope = scope
        self.top_k = top_k
        self.mode = mode
        self.fusion = fusion
        self.rrf_k = rrf_k
        self.weights = {"dense": dense_weight, "keyword": keyword_weight}
        self.label_dense_factor = label_dense_factor
        self.candidates = max(candidates, top_k)
        self.last_timings: dict[str, float] = {}

    # ----- branches ----------------------------------------------------------------------
    def dense(self, question: str, n: int) -> list[tuple[str, float]]:
        """Active chunks in scope by cosine similarity, best first."""
        if self.scope.doc_ids is not None and not self.scope.doc_ids:
            return []  # an empty document list is an empty scope (Chroma rejects `$in: []`)
        query = self.embed_model.get_query_embedding(question)
        where = self.scope.chroma_where()
        fetch = n * 2
        while True:
            hits = self.vectors.query(query, fetch, where=where)
            active = self.ledger.active_chunks_by_id(
                [h.chunk_id for h in hits], tenant=self.scope.tenant
            )
            kept = [(h.chunk_id, h.score) for h in hits if h.chunk_id in active]
            if len(kept) >= n or len(hits) < fetch or fetch >= 4096:
                return kept[:n]
            fetch *= 4

    def keyword(self, question: str, n: int) -> list[tuple[str, float]]:
        return self.ledger.keyword_search(
            query_tokens(question), tenant=self.scope.tenant, doc_ids=self.scope.doc_ids, limit=n
        )

    # ----- fusion ------------------------------------------------------------------------
    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        question = query_bundle.query_str.strip()
        if not question:
            raise ValueError("question is empty")
        timings: dict[str, float] = {}
        dense: list[tuple[str, float]] = []
        keyword: list[tuple[str, float]] = []
        if self.mode in ("hybrid", "dense"):
            t0 = time.perf_counter()
            dense = self.dense(question, self.candidates)
            timings["dense_ms"] = (time.perf_counter() - t0) * 1000
        if self.mode in ("hybrid", "keyword"):
            t0 = time.perf_counter()
            keyword = self.keyword(question, self.candidates)
            timings["keyword_ms"] = (time.perf_counter() - t0) * 1000
        weights = dict(self.weights)
        if label_tokens(question):
            # "…第三十三条…": an exact look-up; the dense branch can't read article numbers
            weights["dense"] *= self.label_dense_factor
        if self.fusion == "weighted":
            fused = weighted_score_fusion({"dense": dict(dense), "keyword": dict(keyword)}, weights)
        else:
            fused = reciprocal_rank_fusion(
                {"dense": [c for c, _ in dense], "keyword": [c for c, _ in keyword]},
                k=self.rrf_k,
                weights=weights,
            )
        top = fused[: self.top_k]
        chunks = self.ledger.active_chunks_by_id([c for c, _ in top], tenant=self.scope.tenant)
        sources = self.ledger.document_sources(ch.doc_id for ch in chunks.values())
        dense_rank = {c: i for i, (c, _) in enumerate(dense, start=1)}
        keyword_rank = {c: i for i, (c, _) in enumerate(keyword, start=1)}
        dense_score, keyword_score = dict(dense), dict(keyword)
        out: list[NodeWithScore] = []
        for chunk_id, score in top:
            chunk = chunks.get(chunk_id)
            if chunk is None:  # deactivated between the branch query and now
                continue
            path, tenant = sources.get(chunk.doc_id, ("", self.scope.tenant))
            extra = {
                "dense_rank": dense_rank.get(chunk_id, 0),
                "keyword_rank": keyword_rank.get(chunk_id, 0),
                "dense_score": round(dense_score.get(chunk_id, 0.0), 6),
                "keyword_score": round(keyword_score.get(chunk_id, 0.0), 6),
            }
            out.append(NodeWithScore(node=chunk_to_node(chunk, path, tenant, extra), score=score))
        self.last_timings = timings
        return out
