"""HybridRetriever: dense (Chroma) and keyword (BM25 over jieba tokens) under one scope, fused.

Both branches see the same :class:`Scope` (tenant, optional documents) *inside* their query, and
both return only chunks that are active in the ledger, so fusion never sees another tenant's or a
stale chunk.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Literal

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from rag_app.retrieval.fusion import reciprocal_rank_fusion, weighted_score_fusion
from rag_app.retrieval.prf import expansion_terms, feedback_chunks
from rag_app.retrieval.record import ChunkRecord, chunk_node
from rag_app.retrieval.scope import Scope
from rag_app.retrieval.stats import TermStatistics
from rag_app.retrieval.timing import stage
from rag_app.store.postings import single_term
from rag_app.store.protocols import RetrievalLedger
from rag_app.store.vectors import VectorStore
from rag_app.text.tokenizer import label_tokens, query_tokens, with_number_variants
from rag_app.types import ChunkInfo

Mode = Literal["hybrid", "dense", "keyword"]

# Runs the keyword branch of hybrid queries beside the dense branch (threads start on demand).
_BRANCHES = ThreadPoolExecutor(max_workers=8, thread_name_prefix="rag-keyword")


def chunk_to_node(chunk: ChunkInfo, source: str, tenant: str, extra: dict[str, Any]) -> TextNode:
    """The retrieved node of ``chunk``: its :class:`ChunkRecord` (with the branches' ``extra``
    ranks and scores) written once, read downstream through :func:`record_of`."""
    record = ChunkRecord.of_chunk(chunk, source=source, tenant=tenant, **extra)
    return chunk_node(record, chunk.text)


def keyword_query_tokens(
    tokens: list[str], freqs: dict[str, int], total: int, budget: int = 0
) -> list[str]:
    """The question tokens worth sending to the keyword index.

    Always dropped (the ranking can't change): single terms no indexed chunk contains (they match
    nothing), and terms in more than half of the chunks (BM25's IDF of such a term is zero in
    FTS5: it only adds rows to score). With ``budget`` > 0 (an approximation, off by default),
    the most common terms are also dropped while the summed posting-list lengths exceed the
    budget, so the cost of the OR query stays bounded however large the corpus grows: the rarest
    terms, which carry most of BM25's weight, are kept. At least one term the index knows is
    always kept.
    Phrases (see :func:`single_term`) are always kept.
    """
    if total <= 0:
        return tokens
    kept = [t for t in tokens if not single_term(t) or 0 < freqs.get(t, 0) <= total / 2]
    if not kept:  # only very common terms: the rarest of them still ranks (a tiny KB)
        present = [t for t in tokens if freqs.get(t, 0) > 0]
        return [min(present, key=lambda t: freqs[t])] if present else []
    if budget <= 0:
        return kept
    single = sorted((t for t in kept if single_term(t)), key=lambda t: freqs.get(t, 0))
    dropped: set[str] = set()
    postings = sum(freqs.get(t, 0) for t in single)
    while postings > budget and len(single) - len(dropped) > 1:
        common = single[len(single) - 1 - len(dropped)]
        dropped.add(common)
        postings -= freqs.get(common, 0)
    return [t for t in kept if t not in dropped]


class HybridRetriever(BaseRetriever):
    """Dense ∥ keyword retrieval within a scope, fused by (weighted) reciprocal rank."""

    def __init__(
        self,
        *,
        ledger: RetrievalLedger,
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
        keyword_posting_budget: int = 0,
        stats: TermStatistics | None = None,
        prf_docs: int = 0,
        prf_terms: int = 8,
        prf_weight: float = 0.5,
        row_weight: float = 0.0,
    ) -> None:
        """``row_weight`` > 0: chunks ranked by their best table row (a second keyword index,
        ingestion/row_entries.py) are fused as a third branch with this weight."""
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
        self.weights = {"dense": dense_weight, "keyword": keyword_weight, "rows": row_weight}
        self.label_dense_factor = label_dense_factor
        self.candidates = max(candidates, top_k)
        self.keyword_posting_budget = keyword_posting_budget
        self.stats = stats if stats is not None else TermStatistics(ledger)
        self.prf_docs, self.prf_terms, self.prf_weight = prf_docs, prf_terms, prf_weight
        self.last_timings: dict[str, float] = {}
        self.last_expansion: list[str] = []  # the feedback terms of the last question

    # ----- branches ----------------------------------------------------------------------
    def dense(self, question: str, n: int) -> list[tuple[str, float]]:
        """Active chunks in scope by cosine similarity, best first."""
        return self._dense(question, n)[0]

    def _dense(
        self, question: str, n: int, bundle: QueryBundle | None = None
    ) -> tuple[list[tuple[str, float]], dict[str, ChunkInfo]]:
        """``dense`` plus the active chunks it read from the ledger (by id). The question's
        vector is ``bundle.embedding`` when set; else it is computed and left there (as
        LlamaIndex's vector retrievers do), so the caller can reuse it."""
        if self.scope.doc_ids is not None and not self.scope.doc_ids:
            return [], {}  # an empty document list is an empty scope (Chroma rejects `$in: []`)
        if bundle is not None and bundle.embedding is not None:
            query = list(bundle.embedding)
        else:
            with stage("embed"):
                query = self.embed_model.get_query_embedding(question)
            if bundle is not None:
                bundle.embedding = query
        fetch = n * 2
        if self.scope.doc_ids is None and self.ledger.only_tenant(self.scope.tenant):
            # Chroma's metadata filter costs far more than the search (it reads the metadata of
            # every vector that matches; ~25 ms at 5k chunks, growing with the collection). When
            # the ledger holds no other tenant the filter can't remove anything the ledger check
            # below doesn't: the search runs unfiltered. Tenant isolation never depends on it:
            # the ledger check keeps only this tenant's active chunks, and when that leaves too
            # few (vectors the ledger doesn't serve crowd the top), the filtered search decides.
            kept, active, exhausted = self._dense_query(query, fetch, None)
            if len(kept) >= n or exhausted:
                return kept[:n], active
        where = self.scope.chroma_where()
        while True:
            kept, active, exhausted = self._dense_query(query, fetch, where)
            if len(kept) >= n or exhausted or fetch >= 4096:
                return kept[:n], active
            fetch *= 4

    def _dense_query(
        self, query: list[float], fetch: int, where: dict[str, Any] | None
    ) -> tuple[list[tuple[str, float]], dict[str, ChunkInfo], bool]:
        """(active in-scope hits, their chunks, whether the collection had fewer than ``fetch``)."""
        with stage("chroma"):
            hits = self.vectors.query(query, fetch, where=where, include_metadata=False)
        with stage("dense_filter"):
            active = self.ledger.active_chunks_by_id(
                [h.chunk_id for h in hits], tenant=self.scope.tenant
            )
        kept = [(h.chunk_id, h.score) for h in hits if h.chunk_id in active]
        return kept, active, len(hits) < fetch

    def _keyword_tokens(self, tokens: list[str]) -> list[str]:
        """The question's tokens worth sending to the keyword index (:func:`keyword_query_tokens`
        under this retriever's posting budget), a month or day number with its twin (3, 03:
        :func:`with_number_variants`)."""
        if not tokens:
            return tokens
        tokens = with_number_variants(tokens)
        freqs, total = self.stats.frequencies(tokens)
        return keyword_query_tokens(tokens, freqs, total, self.keyword_posting_budget)

    def keyword(self, question: str, n: int) -> list[tuple[str, float]]:
        """Active chunks in scope by keyword (BM25), best first."""
        return self._ranked("keyword", question, n, self.ledger.keyword_search_ranked)

    def rows(self, question: str, n: int) -> list[tuple[str, float]]:
        """Active chunks in scope by their best table row (the row keyword index), best first."""
        return self._ranked("rows", question, n, self.ledger.row_keyword_search_ranked)

    def _ranked(
        self, name: str, question: str, n: int, search: Callable[..., list[tuple[str, float]]]
    ) -> list[tuple[str, float]]:
        """One keyword index's ranking of the question's pruned tokens, within the scope."""
        with stage(name):
            tokens = self._keyword_tokens(list(query_tokens(question)))
            if not tokens:
                return []
            return search(tokens, tenant=self.scope.tenant, doc_ids=self.scope.doc_ids, limit=n)

    def _timed_keyword(
        self, question: str, timings: dict[str, float]
    ) -> tuple[list[tuple[str, float]], list[tuple[str, float]]]:
        """(the keyword ranking, the table-row ranking: empty unless ``row_weight`` > 0)."""
        t0 = time.perf_counter()
        keyword = self.keyword(question, self.candidates)
        rows = self.rows(question, self.candidates) if self.weights["rows"] > 0 else []
        timings["keyword_ms"] = (time.perf_counter() - t0) * 1000
        return keyword, rows

    # ----- fusion ------------------------------------------------------------------------
    def _fuse(
        self, branches: dict[str, list[tuple[str, float]]], weights: dict[str, float]
    ) -> list[tuple[str, float]]:
        if self.fusion == "weighted":
            return weighted_score_fusion({b: dict(r) for b, r in branches.items()}, weights)
        return reciprocal_rank_fusion(
            {b: [c for c, _ in r] for b, r in branches.items()}, k=self.rrf_k, weights=weights
        )

    def _feedback(
        self, question: str, fused: list[tuple[str, float]], known: dict[str, ChunkInfo]
    ) -> list[tuple[str, float]]:
        """The keyword ranking of the question plus feedback terms (see rag_app.retrieval.prf)."""
        feedback = feedback_chunks(self.ledger, self.scope, fused, known, self.prf_docs)
        tokens = list(query_tokens(question))
        terms = expansion_terms(tokens, feedback, self.stats.weights, terms=self.prf_terms)
        self.last_expansion = [t for t, _ in terms]
        if not terms:
            return []
        return self.ledger.keyword_search_ranked(
            [*self._keyword_tokens(tokens), *self.last_expansion],
            tenant=self.scope.tenant,
            doc_ids=self.scope.doc_ids,
            limit=self.candidates,
        )

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        question = query_bundle.query_str.strip()
        if not question:
            raise ValueError("question is empty")
        timings: dict[str, float] = {}
        dense: list[tuple[str, float]] = []
        dense_chunks: dict[str, ChunkInfo] = {}
        keyword: list[tuple[str, float]] = []
        rows: list[tuple[str, float]] = []
        pending: Future[tuple[list[tuple[str, float]], list[tuple[str, float]]]] | None = None
        if self.mode == "hybrid":
            # the keyword branch (SQLite, which runs without the GIL) beside the dense one
            pending = _BRANCHES.submit(
                contextvars.copy_context().run, self._timed_keyword, question, timings
            )
        if self.mode in ("hybrid", "dense"):
            t0 = time.perf_counter()
            dense, dense_chunks = self._dense(question, self.candidates, query_bundle)
            timings["dense_ms"] = (time.perf_counter() - t0) * 1000
        if pending is not None:
            with stage("keyword_wait"):  # what the keyword branch added to the dense one
                keyword, rows = pending.result()
        elif self.mode == "keyword":
            keyword, rows = self._timed_keyword(question, timings)
        with stage("fuse_nodes"):
            weights = dict(self.weights)
            if label_tokens(question):
                # "…第三十三条…": an exact look-up; the dense branch can't read article numbers
                weights["dense"] *= self.label_dense_factor
            branches = {"dense": dense, "keyword": keyword}
            if rows:
                branches["rows"] = rows
            fused = self._fuse(branches, weights)
        if self.prf_docs > 0 and self.mode != "dense" and not label_tokens(question):
            # an exact 第X条 look-up needs no bridge; a question in its own words may
            with stage("prf"):
                prf = self._feedback(question, fused, dense_chunks)
            if prf:
                fused = self._fuse({**branches, "prf": prf}, {**weights, "prf": self.prf_weight})
        with stage("fuse_nodes"):
            top = fused[: self.top_k]
            # the dense branch read its hits from the ledger already (active, in the tenant);
            # keyword-only hits are read now
            chunks = {c: dense_chunks[c] for c, _ in top if c in dense_chunks}
            missing = [c for c, _ in top if c not in chunks]
            if missing:
                chunks.update(self.ledger.active_chunks_by_id(missing, tenant=self.scope.tenant))
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
                out.append(
                    NodeWithScore(node=chunk_to_node(chunk, path, tenant, extra), score=score)
                )
        self.last_timings = timings
        return out
