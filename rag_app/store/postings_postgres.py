"""Posting lists of PostgreSQL's ``chunk_keywords`` for the in-memory ranking (store/postings.py),
and PostgreSQL's IDF-weighted ``ts_rank`` computed in numpy exactly as PostgreSQL computes it.

:class:`PgPostings` reads a term's rows through the GIN index with its count in each recovered
from ``ts_rank('{1,1,1,1}', tsv, term)`` (the count is not stored anywhere else), and scores
the lists as :meth:`~rag_app.store.keywords_postgres.PostgresKeywordIndex.search` asks
PostgreSQL to (same IDF groups and weights: :func:`_idf`, :func:`_idf_groups`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import func, select, text

from rag_app.store.bm25 import top
from rag_app.store.postings import Postings, PostingState
from rag_app.store.schema import chunk_keywords, keyword_version

# ts_rank's position labels, lowest first (its weights array is in this order)
_LABELS = ("D", "C", "B", "A")


def _idf(df: int, total: int) -> float:
    """BM25's IDF (as FTS5 and the reranker compute it)."""
    return math.log(1 + (max(total, df) - df + 0.5) / (df + 0.5))


def _idf_groups(idf: dict[str, float], n: int = len(_LABELS)) -> list[list[str]]:
    """Lexemes in at most ``n`` groups of similar IDF (cut at the largest gaps), highest first."""
    ranked = sorted(idf, key=lambda lx: (-idf[lx], lx))
    if len(ranked) <= n:
        return [[lx] for lx in ranked]
    gaps = sorted(range(1, len(ranked)), key=lambda i: (idf[ranked[i - 1]] - idf[ranked[i]], -i))[
        len(ranked) - n :
    ]
    bounds = [0, *sorted(gaps), len(ranked)]
    return [ranked[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]


class PgPostings:
    """Posting lists, row lengths and versions of ``chunk_keywords``, for
    :class:`~rag_app.store.postings.PostingCache`: a term's rows through the GIN index, its count
    in each read off the row's tsvector; the version from ``keyword_version``; row ids are
    ``rid``. Scores are :meth:`PostgresKeywordIndex.search`'s IDF-weighted ``ts_rank``,
    computed as PostgreSQL computes it (single precision, its order of operations), so the
    memory and the SQL ranking agree (the lengths, ``n_tokens``, are not needed by it)."""

    def version(self, conn: Any) -> bytes | None:
        value = conn.execute(
            select(keyword_version.c.version).where(keyword_version.c.id == 1)
        ).scalar_one_or_none()
        return None if value is None else str(value).encode()

    def max_rowid(self, conn: Any) -> int:
        return int(conn.execute(select(func.max(chunk_keywords.c.rid))).scalar() or 0)

    def row_lengths(self, conn: Any) -> tuple[NDArray[np.int64], NDArray[np.uint32]]:
        pairs = _fetch(conn, "SELECT rid, n_tokens FROM chunk_keywords", ())
        return pairs[:, 0], np.clip(pairs[:, 1], 0, 2**32 - 1).astype(np.uint32)

    def read(self, conn: Any, term: str) -> Postings | None:
        """The rows the GIN index finds, each with the term's count read off its tsvector:
        ``ts_rank`` with unit weights gives ``sum(1/i^2, i=1..count) / (pi^2/6)`` for a query of
        one lexeme (PostgreSQL's ``calc_rank_or``), which is inverted here; four times cheaper
        than splitting each row's tokens, which PostgreSQL must first decompress. A tsvector
        keeps at most 255 positions of a lexeme (so ``ts_rank`` counts no more). None for a term
        PostgreSQL parses into several lexemes (a phrase: ``search`` ranks it)."""
        cursor = conn.connection.cursor()
        try:
            cursor.execute("SELECT numnode(phraseto_tsquery('simple', %s))", (term,))
            row = cursor.fetchone()
            if row is None or row[0] != 1:
                return None
            cursor.execute(
                "SELECT rid, ts_rank('{1,1,1,1}'::float4[], tsv, phraseto_tsquery('simple', %s)) "
                "FROM chunk_keywords WHERE tsv @@ phraseto_tsquery('simple', %s)",
                (term, term),
            )
            rows = cursor.fetchall()
        finally:
            cursor.close()
        rids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        ranks = np.fromiter((r[1] for r in rows), dtype=np.float64, count=len(rows))
        return rids.astype(np.int32), _counts_of_ranks(ranks)

    def top(
        self,
        terms: Sequence[str],
        lists: list[Postings],
        state: PostingState,
        limit: int,
        allowed: NDArray[np.int32] | None,
    ) -> list[tuple[int, float]]:
        return top(self.scores(terms, lists, state), limit, allowed)

    def scores(
        self, terms: Sequence[str], lists: list[Postings], state: PostingState
    ) -> NDArray[np.float64]:
        """``ts_rank(weights, setweight(tsv, …), query)`` of every row, as
        :meth:`PostgresKeywordIndex.search` asks PostgreSQL for it: IDF from the lists' lengths
        and the rows in the index, lexemes in at most four groups of similar IDF, each group's
        mean IDF (over the highest) its weight; per lexeme of the row ``weight * sum(1/i^2,
        i=1..count)`` in single precision, over pi^2/6, summed in PostgreSQL's order (lexemes
        sorted by their bytes), divided by the query's lexemes."""
        lists_of = dict(zip(terms, lists, strict=True))
        idf = {t: _idf(len(rows), state.rows) for t, (rows, _) in lists_of.items()}
        scores = np.zeros(len(state.lengths), dtype=np.float32)
        if not idf:
            return scores.astype(np.float64)
        highest = max(idf.values()) or 1.0
        weight: dict[str, np.float32] = {}
        for group in _idf_groups(idf):
            w = max(min(sum(idf[t] for t in group) / len(group) / highest, 1.0), 1e-6)
            weight.update(dict.fromkeys(group, np.float32(w)))
        for term in sorted(lists_of, key=lambda t: t.encode()):
            rows, counts = lists_of[term]
            if not len(rows):
                continue
            term_rank = _pg_term_ranks(weight[term])
            scores[rows] = (scores[rows].astype(np.float64) + term_rank[counts - 1]).astype(
                np.float32
            )
        return (scores / np.float32(len(lists_of))).astype(np.float64)

    def doc_rows(self, conn: Any) -> list[tuple[int, str]]:
        cursor = conn.connection.cursor()
        try:
            cursor.execute("SELECT rid, doc_id FROM chunk_keywords")
            return [(int(r[0]), str(r[1])) for r in cursor.fetchall()]
        finally:
            cursor.close()

    def common_terms(self, conn: Any, min_rows: int) -> list[str]:
        """From ``ts_stat`` (one pass over every tsvector: seconds at a million rows; it runs in
        the background prewarm)."""
        total = int(conn.execute(select(func.count()).select_from(chunk_keywords)).scalar_one())
        rows = conn.execute(
            text(
                "SELECT word FROM ts_stat('SELECT tsv FROM chunk_keywords') "
                "WHERE ndoc <= :most AND ndoc >= :least ORDER BY ndoc DESC, word"
            ),
            {"most": total // 2, "least": min_rows},
        )
        return [str(r[0]) for r in rows]


def _pg_term_ranks(weight: np.float32) -> NDArray[np.float64]:
    """What PostgreSQL's ``calc_rank_or`` adds for a lexeme at ``count`` = 1..256 positions of
    label weight ``weight``: ``resj += w / (j + 1)^2`` in single precision, then
    ``(wjm + resj - wjm / 1) / 1.64493406685`` in double (wjm = w: every position has one label)."""
    squares = (np.arange(1, 257, dtype=np.int64) ** 2).astype(np.float32)
    resj = np.add.accumulate(weight / squares, dtype=np.float32)
    return ((weight + resj) - weight).astype(np.float64) / 1.64493406685


# ts_rank('{1,1,1,1}', tsv, term) for counts 1..256 (as float4), and the midpoints between them
_PG_RANKS = _pg_term_ranks(np.float32(1.0)).astype(np.float32).astype(np.float64)
_PG_RANK_CUTS = (_PG_RANKS[1:] + _PG_RANKS[:-1]) / 2


def _counts_of_ranks(ranks: NDArray[np.float64]) -> NDArray[np.uint16]:
    """Term counts (1..256) from ``ts_rank('{1,1,1,1}', tsv, term)`` values (the neighbours'
    gap, 9e-6 at 256, is far above a float4's rounding; the table is computed as PostgreSQL
    computes the rank, so its own rounding drift is the same)."""
    return (np.searchsorted(_PG_RANK_CUTS, ranks.astype(np.float32)) + 1).astype(np.uint16)


def _fetch(conn: Any, sql: str, params: tuple[Any, ...]) -> NDArray[np.int64]:
    """Rows of two integers as an (n, 2) array, through the DB-API cursor (fast for many rows)."""
    cursor = conn.connection.cursor()
    try:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    finally:
        cursor.close()
    return np.array([(a, b or 0) for a, b in rows], dtype=np.int64).reshape(-1, 2)
