"""TermStatistics: document frequencies of index terms, cached per version of the keyword index.

One instance per knowledge base (built with it, shared by its retriever, reranker and answer
step); its cache is guarded by a lock, so service threads share it safely. A term's frequency is
looked up once per index version: every write to the index changes the version, so cached
figures are never stale.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from typing import Any


def idf_weights(tokens: Sequence[str], freqs: dict[str, int], total: int) -> dict[str, float]:
    """BM25-style IDF per token (unknown tokens get the maximum)."""
    n = max(total, 1)
    return {t: math.log(1 + (n - freqs.get(t, 0) + 0.5) / (freqs.get(t, 0) + 0.5)) for t in tokens}


class TermStatistics:
    MAX_TERMS = 50_000

    def __init__(self, ledger: Any | None) -> None:
        """``ledger``: anything with ``term_document_frequencies`` (and, to cache,
        ``keyword_index_version`` and ``keyword_count``); None gives weight 1.0 to every term."""
        self.ledger = ledger
        self._lock = threading.Lock()
        self._version: object = None
        self._total = 0
        self._known: dict[str, int] = {}

    def frequencies(self, terms: Sequence[str]) -> tuple[dict[str, int], int]:
        """(term -> chunks holding it, chunks indexed)."""
        if self.ledger is None:
            return {}, 0
        index_version = getattr(self.ledger, "keyword_index_version", None)
        version = index_version() if index_version is not None else None
        if version is None:
            freqs: dict[str, int]
            freqs, total = self.ledger.term_document_frequencies(list(terms))
            return freqs, total
        with self._lock:
            if version != self._version:
                self._version, self._known = version, {}
                self._total = self.ledger.keyword_count()
            unknown = [t for t in dict.fromkeys(terms) if t not in self._known]
            known = {t: self._known[t] for t in terms if t in self._known}
            total = self._total
        if unknown:
            found, _ = self.ledger.term_document_frequencies(unknown)
            with self._lock:
                if self._version == version:
                    if len(self._known) + len(unknown) > self.MAX_TERMS:
                        self._known = {}
                    self._known.update({t: found.get(t, 0) for t in unknown})
            known.update({t: found.get(t, 0) for t in unknown})
        return {t: known.get(t, 0) for t in terms}, total

    def weights(self, terms: Sequence[str]) -> dict[str, float]:
        """IDF of each term in the keyword index (1.0 each without a ledger)."""
        return self.idf(terms, *self.frequencies(terms))

    def idf(self, terms: Sequence[str], freqs: dict[str, int], total: int) -> dict[str, float]:
        """:meth:`weights` from frequencies already read (of ``terms`` or more)."""
        if self.ledger is None:
            return dict.fromkeys(terms, 1.0)
        return idf_weights(list(terms), freqs, total)
