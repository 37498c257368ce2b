"""The keyword index: jieba tokens of each active chunk, searched by BM25-like ranking.

One protocol, :class:`KeywordIndex`, with one implementation per backend: SQLite's FTS5 table
(store/keywords_sqlite.py) and PostgreSQL's ``tsvector`` (store/keywords_postgres.py). The ledger
writes keyword rows inside its own transactions (the ``conn`` arguments), so the index can never
disagree with the chunk rows; searches and statistics open their own connections.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Protocol

from sqlalchemy.engine import Connection, Engine

from rag_app.store.keywords_postgres import PostgresKeywordIndex
from rag_app.store.keywords_sqlite import SqliteKeywordIndex
from rag_app.store.postings import PostingCache


class KeywordIndex(Protocol):
    """What the ledger and the query path need of a keyword index."""

    postings: PostingCache  # in-memory BM25 over cached posting lists (disabled: no source)

    def create(self, conn: Connection) -> None:
        """Create the index's tables (inside the ledger's schema transaction)."""

    def upgrade(self) -> None:
        """Bring an index written by an older release up to date (once; after ``create``)."""

    def insert(self, conn: Connection, rows: Sequence[dict[str, Any]]) -> None:
        """Add rows (chunk_id, doc_id, tenant, version, tokens) inside the caller's transaction."""

    def delete_version(self, conn: Connection, doc_id: str, version: int) -> None: ...

    def delete_inactive(self, conn: Connection, doc_id: str) -> None:
        """Rows of the document's versions that are not its active one."""

    def delete_document(self, conn: Connection, doc_id: str) -> None: ...

    def delete_all(self, conn: Connection) -> None:
        """Every row (the index is about to be written again: store/retokenize.py)."""

    def count_inactive(self, conn: Connection) -> int:
        """Rows whose (document, version) is not active (left by a crash)."""

    def purge_inactive(self, conn: Connection) -> None: ...

    def active_rows(self, conn: Connection) -> Iterator[list[dict[str, Any]]]:
        """Rows (chunk_id, doc_id, tenant, version, tokens) of the active chunks, in batches."""

    def search(
        self, tokens: Sequence[str], *, tenant: str, doc_ids: Sequence[str] | None, limit: int
    ) -> list[tuple[str, float]]:
        """(chunk id, score) of active chunks in scope, best first (``tokens`` non-empty)."""

    def search_ranked(
        self, tokens: Sequence[str], *, tenant: str, doc_ids: Sequence[str] | None, limit: int
    ) -> list[tuple[str, float]]:
        """What ``search`` returns, by the cheapest way the backend has."""

    def term_document_frequencies(self, terms: Sequence[str]) -> tuple[dict[str, int], int]:
        """(term -> indexed chunks containing it, total indexed chunks); ``terms`` non-empty."""

    def count(self) -> int: ...

    def version(self) -> bytes | None:
        """A marker that changes whenever the index changes (None: nothing to cache by)."""

    def changed(self) -> None:
        """This process wrote keyword rows: cached statistics are out of date."""


class NoKeywordIndex:
    """A ledger on a backend that is neither SQLite nor PostgreSQL: no keyword index."""

    def __init__(self, engine: Engine) -> None:
        self.postings = PostingCache(engine.connect, 0)

    def create(self, conn: Connection) -> None:
        pass

    def upgrade(self) -> None:
        pass

    def insert(self, conn: Connection, rows: Sequence[dict[str, Any]]) -> None:
        pass

    def delete_version(self, conn: Connection, doc_id: str, version: int) -> None:
        pass

    def delete_inactive(self, conn: Connection, doc_id: str) -> None:
        pass

    def delete_document(self, conn: Connection, doc_id: str) -> None:
        pass

    def delete_all(self, conn: Connection) -> None:
        pass

    def count_inactive(self, conn: Connection) -> int:
        return 0

    def purge_inactive(self, conn: Connection) -> None:
        pass

    def active_rows(self, conn: Connection) -> Iterator[list[dict[str, Any]]]:
        return iter(())

    def search(
        self, tokens: Sequence[str], *, tenant: str, doc_ids: Sequence[str] | None, limit: int
    ) -> list[tuple[str, float]]:
        raise NotImplementedError("keyword search needs a SQLite or PostgreSQL ledger")

    def search_ranked(
        self, tokens: Sequence[str], *, tenant: str, doc_ids: Sequence[str] | None, limit: int
    ) -> list[tuple[str, float]]:
        return self.search(tokens, tenant=tenant, doc_ids=doc_ids, limit=limit)

    def term_document_frequencies(self, terms: Sequence[str]) -> tuple[dict[str, int], int]:
        return {}, 0

    def count(self) -> int:
        return 0

    def version(self) -> bytes | None:
        return None

    def changed(self) -> None:
        pass


def keyword_index(
    engine: Engine, *, sqlite: bool, postgres: bool, cache_postings: int
) -> KeywordIndex:
    """The keyword index of the ledger on ``engine``."""
    if sqlite:
        return SqliteKeywordIndex(engine, cache_postings=cache_postings)
    if postgres:
        return PostgresKeywordIndex(engine, cache_postings=cache_postings)
    return NoKeywordIndex(engine)
