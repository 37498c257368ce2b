"""The narrow views of the ledger that the query path depends on (``Ledger`` satisfies them all;
a test or another store can pass anything with these methods)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

from rag_app.types import ChunkInfo, DocumentInfo


class ChunkReader(Protocol):
    """Active (served) chunks and the documents they belong to."""

    def get_document(self, doc_id: str) -> DocumentInfo | None: ...

    def active_chunks_at(self, doc_id: str, indices: Iterable[int]) -> dict[int, ChunkInfo]: ...

    def active_chunks_by_id(
        self, chunk_ids: Iterable[str], tenant: str | None = None
    ) -> dict[str, ChunkInfo]: ...

    def all_active_chunk_ids(self) -> set[str]: ...

    def document_sources(self, doc_ids: Iterable[str]) -> dict[str, tuple[str, str]]: ...

    def only_tenant(self, tenant: str) -> bool: ...


class KeywordSearch(Protocol):
    """The keyword index as the query path sees it: search and term statistics."""

    def keyword_search_ranked(
        self,
        tokens: Sequence[str],
        *,
        tenant: str,
        doc_ids: Sequence[str] | None = None,
        limit: int = 20,
    ) -> list[tuple[str, float]]: ...

    def row_keyword_search_ranked(
        self, tokens: Sequence[str], *, tenant: str, doc_ids: Sequence[str] | None, limit: int
    ) -> list[tuple[str, float]]: ...

    def term_document_frequencies(self, terms: Sequence[str]) -> tuple[dict[str, int], int]: ...

    def keyword_count(self) -> int: ...

    def keyword_index_version(self) -> bytes | None: ...


class RetrievalLedger(ChunkReader, KeywordSearch, Protocol):
    """What retrieval and the answer engine read: chunks and the keyword index."""
