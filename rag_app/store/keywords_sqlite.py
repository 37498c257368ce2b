"""The keyword index on SQLite: jieba tokens (space separated) in an FTS5 table, ranked by FTS5's
BM25 (or in memory from cached posting lists, store/postings.py, which gives the same scores).

``chunk_fts`` holds the tokens; ``chunk_fts_rows`` each FTS5 row's rowid under an index on
(doc_id, version), so deletes look rowids up instead of scanning FTS5's UNINDEXED columns.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine

from rag_app.store.bm25 import bm25_top
from rag_app.store.postings import (
    PostingCache,
    Postings,
    PostingState,
    RowFacts,
    ranked_search,
)
from rag_app.store.schema import (
    FTS_ROWS_FILLED,
    fts_ddl,
    fts_rows_ddl,
    fts_vocab_ddl,
    get_meta,
    set_meta,
    stream_rows,
)

# rows of chunk_fts (or of its rowid index, ``{t}``) whose (document, version) is not active
_NOT_ACTIVE = (
    "NOT EXISTS (SELECT 1 FROM documents d WHERE d.doc_id = {t}.doc_id AND d.version = {t}.version)"
)


def _fts_phrase(token: str) -> str:
    return '"' + token.replace('"', '""') + '"'


class SqliteKeywordIndex:
    """The FTS5 keyword index (see the module docstring)."""

    def __init__(self, engine: Engine, *, cache_postings: int, table: str = "chunk_fts") -> None:
        """``table``: ``chunk_fts`` (a row per chunk) or ``row_fts`` (a row per table row, each
        naming its chunk: several rows may name one chunk; searches return each chunk once)."""
        self.engine = engine
        self.table = table
        self._fts_total: tuple[int, float] | None = None
        # ranks keyword searches in memory, as FTS5 would (0 = FTS5 ranks every time)
        self.source = Fts5Postings(table)
        self.postings = PostingCache(engine.connect, cache_postings, source=self.source)

    # ----- schema --------------------------------------------------------------------------
    def create(self, conn: Connection) -> None:
        conn.execute(text(fts_ddl(self.table)))
        conn.execute(text(fts_vocab_ddl(self.table)))
        for ddl in fts_rows_ddl(self.table):
            conn.execute(text(ddl))

    def upgrade(self) -> None:
        if self.table != "chunk_fts":  # created with its rowid table from the start
            return
        with self.engine.connect() as conn:
            filled = get_meta(conn, FTS_ROWS_FILLED)
        if filled is None:
            with self.engine.begin() as conn:
                # OR IGNORE: two processes opening an old ledger at once both fill it
                conn.execute(
                    text(
                        "INSERT OR IGNORE INTO chunk_fts_rows (rowid, doc_id, version) "
                        "SELECT rowid, doc_id, version FROM chunk_fts"
                    )
                )
                set_meta(conn, FTS_ROWS_FILLED, "1")  # in the fill's transaction

    # ----- writes (inside the ledger's transactions) ---------------------------------------
    def insert(self, conn: Connection, rows: Sequence[dict[str, Any]]) -> None:
        # explicit rowids after the highest in use (docsize's key: an index look-up), so that
        # {self.table}_rows can name them; the caller's write transaction keeps them ours
        top = conn.execute(text(f"SELECT max(id) FROM {self.table}_docsize")).scalar() or 0
        numbered = [r | {"rowid": top + i} for i, r in enumerate(rows, start=1)]
        conn.execute(
            text(
                f"INSERT INTO {self.table} (rowid, tokens, chunk_id, doc_id, tenant, version) "
                "VALUES (:rowid, :tokens, :chunk_id, :doc_id, :tenant, :version)"
            ),
            numbered,
        )
        conn.execute(
            text(
                f"INSERT INTO {self.table}_rows (rowid, doc_id, version) "
                "VALUES (:rowid, :doc_id, :version)"
            ),
            numbered,
        )

    def delete_version(self, conn: Connection, doc_id: str, version: int) -> None:
        _delete_fts_rows(
            conn, self.table, "doc_id = :d AND version = :v", {"d": doc_id, "v": version}
        )

    def delete_inactive(self, conn: Connection, doc_id: str) -> None:
        _delete_fts_rows(
            conn,
            self.table,
            "doc_id = :d AND version != (SELECT version FROM documents WHERE doc_id = :d)",
            {"d": doc_id},
        )

    def delete_document(self, conn: Connection, doc_id: str) -> None:
        _delete_fts_rows(conn, self.table, "doc_id = :d", {"d": doc_id})

    def delete_all(self, conn: Connection) -> None:
        conn.execute(text(f"DELETE FROM {self.table}"))
        conn.execute(text(f"DELETE FROM {self.table}_rows"))

    def chunk_ids(self, conn: Connection) -> set[str]:
        """The chunks the index holds rows of (a scan: for the rare whole-index rewrite)."""
        return {
            str(r[0]) for r in conn.execute(text(f"SELECT DISTINCT chunk_id FROM {self.table}"))
        }

    def count_inactive(self, conn: Connection) -> int:
        fts_where = _NOT_ACTIVE.format(t=self.table)
        return int(
            conn.execute(text(f"SELECT count(*) FROM {self.table} WHERE {fts_where}")).scalar_one()
        )

    def purge_inactive(self, conn: Connection) -> None:
        # a full scan of the FTS5 table itself (this is the repair path), and of its rowids
        fts_where = _NOT_ACTIVE.format(t=self.table)
        conn.execute(text(f"DELETE FROM {self.table} WHERE {fts_where}"))
        rows_where = _NOT_ACTIVE.format(t=f"{self.table}_rows")
        conn.execute(text(f"DELETE FROM {self.table}_rows WHERE {rows_where}"))

    def active_rows(self, conn: Connection) -> Iterator[list[dict[str, Any]]]:
        fts = text(
            "SELECT f.chunk_id, f.doc_id, f.tenant, CAST(f.version AS INTEGER) AS version, "
            f"f.tokens FROM {self.table} AS f JOIN documents AS d "
            "ON d.doc_id = f.doc_id AND d.version = f.version ORDER BY f.rowid"
        )
        yield from stream_rows(conn, fts)

    # ----- reads ---------------------------------------------------------------------------
    def search(
        self, tokens: Sequence[str], *, tenant: str, doc_ids: Sequence[str] | None, limit: int
    ) -> list[tuple[str, float]]:
        params: dict[str, Any] = {
            "q": " OR ".join(_fts_phrase(t) for t in tokens),
            "tenant": tenant,
            # row_fts: several rows may name one chunk (each chunk is kept once, below)
            "limit": limit if self.table == "chunk_fts" else 8 * limit,
        }
        doc_filter = ""
        if doc_ids is not None:
            if not doc_ids:
                return []
            # one JSON parameter, not one per document: a collection may pass SQLite's
            # 32,766 variables per statement
            doc_filter = " AND f.doc_id IN (SELECT value FROM json_each(:doc_ids))"
            params["doc_ids"] = json.dumps(list(doc_ids))
        sql = text(
            f"SELECT f.chunk_id, -bm25({self.table}) AS score FROM {self.table} AS f "
            "JOIN documents AS d ON d.doc_id = f.doc_id AND d.version = f.version "
            f"WHERE {self.table} MATCH :q AND f.tenant = :tenant{doc_filter} "
            f"ORDER BY bm25({self.table}) LIMIT :limit"
        )
        with self.engine.connect() as conn:
            best: dict[str, float] = {}
            for chunk_id, score in conn.execute(sql, params).all():
                best.setdefault(chunk_id, float(score))
        return list(best.items())[:limit]

    def search_ranked(
        self, tokens: Sequence[str], *, tenant: str, doc_ids: Sequence[str] | None, limit: int
    ) -> list[tuple[str, float]]:
        """What :meth:`search` returns (same ids, scores and order), cheaper.

        ``search`` reads every matching row's columns and joins it to ``documents`` before
        ranking; here the matches are ranked alone (``bm25()`` only, ties in rowid order as
        there), in memory by :class:`~rag_app.store.postings.PostingCache` when it can, else by
        FTS5; then only the best rows are read and kept when active and in scope, widening the
        window until ``limit`` rows are kept or the matches run out. A search scoped to
        documents is ranked in memory once the cache holds the document map (``prewarm``), else
        by ``search`` (its SQL filter beats ranking everything).
        """
        if doc_ids is not None and not doc_ids:
            return []
        query = " OR ".join(_fts_phrase(t) for t in tokens)
        rank_sql = text(
            f"SELECT rowid, bm25({self.table}) FROM {self.table} WHERE {self.table} MATCH :q "
            f"ORDER BY bm25({self.table}) LIMIT :m"
        )

        def rank(conn: Connection, window: int) -> list[tuple[int, float]] | None:
            ranked = self.postings.rank(conn, tokens, window, doc_ids)
            if ranked is None and doc_ids is None:  # a phrase, or the index changed meanwhile
                ranked = [(r[0], r[1]) for r in conn.execute(rank_sql, {"q": query, "m": window})]
            return ranked  # None with documents: FTS5 with the SQL document filter, below

        return ranked_search(
            self.engine,
            tenant=tenant,
            doc_ids=doc_ids,
            limit=limit,
            rank=rank,
            describe=self._describe,
            fallback=lambda: self.search(tokens, tenant=tenant, doc_ids=doc_ids, limit=limit),
        )

    def _describe(self, conn: Connection, rowids: list[int]) -> dict[int, RowFacts]:
        names = {f"r{i}": rowid for i, rowid in enumerate(rowids)}
        rows = conn.execute(
            text(
                "SELECT f.rowid, f.chunk_id, f.doc_id, f.tenant, f.version, d.version "
                f"FROM {self.table} AS f LEFT JOIN documents AS d ON d.doc_id = f.doc_id "
                f"WHERE f.rowid IN ({', '.join(':' + n for n in names)})"
            ),
            names,
        ).all()
        return {r[0]: (r[1], r[2], r[3], int(r[4]), r[5]) for r in rows}

    def term_document_frequencies(self, terms: Sequence[str]) -> tuple[dict[str, int], int]:
        names = {f"t{i}": t for i, t in enumerate(dict.fromkeys(terms))}
        sql = text(
            f"SELECT term, doc FROM {self.table}_vocab WHERE term IN "
            f"({', '.join(':' + n for n in names)})"
        )
        with self.engine.connect() as conn:
            freqs = {r[0]: int(r[1]) for r in conn.execute(sql, names).all()}
            now, cached = time.monotonic(), self._fts_total  # a local: writes reset the attribute
            # the total only scales IDF: a count up to 30 s old is fine and saves a table scan
            if cached is None or now - cached[1] > 30:
                total = int(conn.execute(text(f"SELECT count(*) FROM {self.table}")).scalar_one())
                cached = self._fts_total = (total, now)
        return freqs, cached[0]

    def count(self) -> int:
        with self.engine.connect() as conn:
            return int(conn.execute(text(f"SELECT count(*) FROM {self.table}")).scalar_one())

    def version(self) -> bytes | None:
        """FTS5's structure record, whose cookie every write transaction to the index bumps."""
        with self.engine.connect() as conn:
            return self.source.version(conn)

    def changed(self) -> None:
        self._fts_total = None


def vocab_instance_ddl(table: str) -> str:
    return (
        f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{table}_instances "
        f"USING fts5vocab(main, {table}, 'instance')"
    )


def _varint(blob: bytes) -> int:
    """The first SQLite varint of ``blob`` (FTS5's docsize record: one per column)."""
    value = 0
    for i, byte in enumerate(blob):
        if i == 8:
            return (value << 8) | byte
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            return value
    return value


def _count_runs(occurrences: NDArray[np.int64]) -> tuple[NDArray[np.int32], NDArray[np.uint16]]:
    """(rows, count in each) of a term's occurrences, one row id per occurrence."""
    if len(occurrences) > 1 and bool((occurrences[1:] < occurrences[:-1]).any()):
        occurrences = np.sort(occurrences)  # FTS5 yields them by row; never relied on
    starts = np.flatnonzero(np.diff(occurrences, prepend=-1))
    counts = np.diff(np.append(starts, len(occurrences)))
    # 6 bytes a posting: rowid int32 (FTS5 rowids of this ledger stay far below 2**31), count
    # uint16 (clipped; a term can't occur 65,535 times in one chunk)
    return occurrences[starts].astype(np.int32), np.minimum(counts, 65535).astype(np.uint16)


class Fts5Postings:
    """Posting lists, row lengths and versions of an FTS5 table, for
    :class:`~rag_app.store.postings.PostingCache`: lists from an ``fts5vocab`` *instance* table,
    lengths from FTS5's ``docsize`` table, the version from its structure record."""

    def __init__(self, table: str) -> None:
        self.table = table

    def version(self, conn: Any) -> bytes | None:
        """FTS5's structure record of the table: every write transaction to the index bumps
        its cookie (``Ledger.keyword_index_version``)."""
        row = conn.exec_driver_sql(f"SELECT block FROM {self.table}_data WHERE id = 10").first()
        return None if row is None else bytes(row[0])

    def max_rowid(self, conn: Any) -> int:
        return int(conn.exec_driver_sql(f"SELECT max(id) FROM {self.table}_docsize").scalar() or 0)

    def row_lengths(self, conn: Any) -> tuple[NDArray[np.int64], NDArray[np.uint32]]:
        cursor = conn.connection.cursor()  # the DB-API cursor: plain tuples, fast for many rows
        try:
            sizes = cursor.execute(f"SELECT id, sz FROM {self.table}_docsize").fetchall()
        finally:
            cursor.close()
        rowids = np.fromiter((r for r, _ in sizes), dtype=np.int64, count=len(sizes))
        lengths = np.fromiter((_varint(bytes(b)) for _, b in sizes), np.uint32, len(sizes))
        return rowids, lengths

    def read(self, conn: Any, term: str) -> tuple[NDArray[np.int32], NDArray[np.uint16]]:
        """The rows holding ``term`` and its count in each: the instance table's rowids (one per
        occurrence), joined into one string by SQLite and counted in numpy (about 5x faster
        than a row per posting through ``GROUP BY doc``, which at a million chunks made a
        question's first-use reads the slowest part of its keyword search)."""
        cursor = conn.connection.cursor()
        try:
            cursor.execute(vocab_instance_ddl(self.table))  # temp: once per pooled connection
            row = cursor.execute(
                f"SELECT group_concat(doc, ' ') FROM temp.{self.table}_instances WHERE term = ?",
                (term,),
            ).fetchone()
        finally:
            cursor.close()
        return _count_runs(np.array((row[0] or "").split(), dtype=np.int64))

    def top(
        self,
        terms: Sequence[str],
        lists: list[Postings],
        state: PostingState,
        limit: int,
        allowed: NDArray[np.int32] | None,
    ) -> list[tuple[int, float]]:
        return bm25_top(terms, lists, state, limit, allowed)  # lists: sorted by row (read)

    def doc_rows(self, conn: Any) -> list[tuple[int, str]]:
        cursor = conn.connection.cursor()
        try:
            return [
                (r[0], r[1])
                for r in cursor.execute(f"SELECT rowid, doc_id FROM {self.table}").fetchall()
            ]
        finally:
            cursor.close()

    def common_terms(self, conn: Any, min_rows: int) -> list[str]:
        total = conn.exec_driver_sql(f"SELECT count(*) FROM {self.table}_docsize").scalar()
        return [
            r[0]
            for r in conn.exec_driver_sql(
                f"SELECT term FROM {self.table}_vocab WHERE doc <= ? AND doc >= ? "
                "ORDER BY doc DESC",
                ((total or 0) // 2, min_rows),
            )
        ]


def _delete_fts_rows(conn: Connection, table: str, where: str, params: dict[str, Any]) -> None:
    """Delete the rows of FTS5 ``table`` (and their ``<table>_rows`` entries) that match
    ``where`` on ``<table>_rows``' columns (doc_id, version): rowids looked up by index, not by
    a scan."""
    conn.execute(
        text(f"DELETE FROM {table} WHERE rowid IN (SELECT rowid FROM {table}_rows WHERE {where})"),
        params,
    )
    conn.execute(text(f"DELETE FROM {table}_rows WHERE {where}"), params)
