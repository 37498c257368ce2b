"""BM25 ranking of a keyword index in memory, with the scores FTS5's ``bm25()`` gives.

FTS5 answers ``"a" OR "b" ORDER BY bm25() LIMIT n`` by calling ``bm25()`` on every row that holds
any of the terms and sorting them all: at 100k chunks a typical question's terms match tens of
thousands of rows and the query takes ~100 ms (p95 ~230 ms). :class:`PostingCache` keeps, per
term, the rows holding it and the term's count in each (read once from FTS5 through an
``fts5vocab`` *instance* table) and every row's length (FTS5's ``docsize`` table), and scores
with numpy (store/bm25.py: the same formula over the same counts), so ids, order (ties by rowid)
and scores equal FTS5's (tested). A warm query takes 1-3 ms at 100k chunks.

Consistency: everything cached belongs to one version of the index (``Ledger.keyword_index_version``,
bumped by every write transaction to it). A changed version drops the cache; a version that
changes while postings are read makes :meth:`PostingCache.rank` return None and the caller asks
FTS5. Memory is bounded by ``max_postings`` (least recently used terms are dropped first).
Only single terms are ranked here (what FTS5's ``unicode61`` tokenizer keeps as one token);
a query holding a phrase (``C++``, ``陈 某某``) returns None as well.

Where the lists, lengths and versions come from is a :class:`PostingSource`: FTS5's tables
(``Fts5Postings`` in store/keywords_sqlite.py) or PostgreSQL's ``chunk_keywords``
(``PgPostings`` in store/postings_postgres.py, which scores as PostgreSQL's ``ts_rank`` does).
:func:`ranked_search` turns ranked rows into active chunks in scope, for both.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

logger = logging.getLogger(__name__)

# after a write, the terms held before are read again once the index was quiet this long
REWARM_DELAY_S = 5.0
# prewarm skips terms in fewer rows than this: reading one on first use costs well under 1 ms
PREWARM_MIN_ROWS = 64
# rowids index an array of row lengths (4 bytes each): beyond this FTS5 ranks instead
MAX_ROWID = 2**27


def single_term(token: str) -> bool:
    """A token FTS5's ``unicode61`` tokenizer keeps as one lower-case term: letters, digits and
    CJK only. Others ("C++", "12.5", "陈 某某") are phrases of several terms."""
    return token.isalnum() and token == token.lower()


Postings = tuple[NDArray[np.int32], NDArray[np.uint16]]  # row ids, the term's count in each


class PostingSource(Protocol):
    """Where a :class:`PostingCache` reads from (``conn``: a SQLAlchemy connection)."""

    def version(self, conn: Any) -> bytes | None:
        """A marker every write transaction to the index changes (None: no caching)."""

    def max_rowid(self, conn: Any) -> int:
        """The highest row id in use (an early way out before reading every row's length)."""

    def row_lengths(self, conn: Any) -> tuple[NDArray[np.int64], NDArray[np.uint32]]:
        """(row ids, their lengths in tokens) of every row, read by one statement."""

    def read(self, conn: Any, term: str) -> tuple[NDArray[np.int32], NDArray[np.uint16]] | None:
        """The rows holding ``term`` and its count in each (None: a term the cache can't rank;
        the index ranks queries holding it)."""

    def top(
        self,
        terms: Sequence[str],
        lists: list[Postings],
        state: PostingState,
        limit: int,
        allowed: NDArray[np.int32] | None,
    ) -> list[tuple[int, float]]:
        """The ``limit`` best rows (only of ``allowed`` when given; ties by row id) for the OR
        of ``terms``, whose posting lists are ``lists``: (row id, -score), best first."""

    def doc_rows(self, conn: Any) -> list[tuple[int, str]]:
        """(row id, document id) of every row."""

    def common_terms(self, conn: Any, min_rows: int) -> list[str]:
        """Terms in at least ``min_rows`` rows and at most half of them, most common first."""


@dataclass
class PostingState:
    version: bytes
    lengths: NDArray[np.uint32]  # row length (tokens) by rowid; 0 for absent rows
    rows: int  # N: rows in the index
    avg_length: float
    terms: OrderedDict[str, tuple[NDArray[np.int32], NDArray[np.uint16]]] = field(
        default_factory=OrderedDict
    )
    cached: int = 0  # postings held in ``terms``
    # document id -> its rows; read on demand (prewarm, then after each change) for scoped search
    doc_rows: dict[str, NDArray[np.int32]] | None = None
    # per row k1 * (1 - b + b * length / avgdl), made by store/bm25.py on first use
    norms: NDArray[np.float64] | None = None


class PostingCache:
    """Per-version posting lists and row lengths of the FTS5 keyword index (see module doc).

    ``connect``: opens a connection to the ledger (``engine.connect``); used by the background
    threads of :meth:`prewarm` and of the re-warm after the index changed. ``source``: where
    postings are read (None: nothing is cached, :meth:`rank` always returns None)."""

    def __init__(
        self,
        connect: Callable[[], Any] | None = None,
        max_postings: int = 8_000_000,
        *,
        source: PostingSource | None = None,
    ) -> None:
        self.connect = connect
        self.source = source
        self.max_postings = max_postings if source is not None else 0
        self.rewarm_delay_s = REWARM_DELAY_S
        self._lock = threading.Lock()
        self._state: PostingState | None = None

    @property
    def cached_postings(self) -> int:
        state = self._state
        return 0 if state is None else state.cached

    def _current(self, conn: Any, version: bytes) -> PostingState | None:
        """The state of ``version`` (call with the lock held). Replacing an older state re-reads
        the terms it held, most recently used first, in a background thread once the index has
        stayed unchanged for ``rewarm_delay_s`` (while documents are being written it would only
        read lists the next write drops): a write to the index doesn't leave every following
        query to read the common terms again."""
        state = self._state
        if state is not None and state.version == version:
            return state
        new = self._state = self._load_state(conn, version)
        if new is not None and state is not None and self.connect is not None:
            hot = list(reversed(state.terms))
            with_docs = state.doc_rows is not None
            if hot or with_docs:
                threading.Thread(
                    target=self._rewarm, args=(new, hot, with_docs), daemon=True
                ).start()
        return new

    def _read_doc_rows(self, conn: Any, state: PostingState) -> None:
        """Fill ``state.doc_rows`` (unless the index changed meanwhile): one scan of the index's
        rows (~0.5 s at 100k chunks), so only long-lived processes ask for it."""
        assert self.source is not None
        grouped: dict[str, list[int]] = {}
        for rowid, doc_id in self.source.doc_rows(conn):
            grouped.setdefault(doc_id, []).append(rowid)
        if self.version(conn) == state.version:
            state.doc_rows = {d: np.array(r, dtype=np.int32) for d, r in grouped.items()}

    def _rewarm(self, state: PostingState, terms: Sequence[str], doc_rows: bool) -> None:
        time.sleep(self.rewarm_delay_s)
        if self._state is state:  # no write since: the index is quiet
            try:
                self._fill(terms, 0, doc_rows, create=False)
            except Exception as exc:  # a warm-up only: the ledger may be gone (closed, dropped)
                logger.debug("posting re-warm stopped: %s", exc)

    def _fill(
        self, terms: Sequence[str], budget: int, doc_rows: bool = False, *, create: bool = True
    ) -> int:
        """Read the postings of ``terms`` in order into the current state, up to ``budget``
        postings (0: up to ``max_postings``), after the document map when ``doc_rows``; stops
        when the index changes. ``create=False``: only into a state that is already current.
        Returns how many postings it read."""
        if self.connect is None:
            return 0
        budget = budget or self.max_postings
        loaded = 0
        with self.connect() as conn:
            version = self.version(conn)
            if version is None:
                return 0
            with self._lock:
                current = self._state
                if create:
                    state = self._current(conn, version)
                elif current is not None and current.version == version:
                    state = current
                else:
                    return 0
            if state is None:
                return 0
            if doc_rows and state.doc_rows is None:
                self._read_doc_rows(conn, state)
            for term in terms:
                if loaded >= budget or self._state is not state:
                    break
                if term in state.terms:
                    continue
                hit = self._read(conn, term)
                if self.version(conn) != version:  # written meanwhile
                    break
                if hit is None:  # not a term this cache ranks
                    continue
                self._store(state, term, hit)
                loaded += len(hit[0])
        return loaded

    def prewarm(self, budget: int = 0, min_rows: int = PREWARM_MIN_ROWS) -> int:
        """Read the posting lists of the index's common terms that queries still send (in at
        most half of the rows; see ``keyword_query_tokens``), most common first, until
        ``budget`` postings (0: ``max_postings``): they are the slowest to read on first use.
        Terms in fewer than ``min_rows`` rows are left to be read on use (cheap, and many).
        Also reads the document map first, so searches scoped to some documents are ranked here
        too. Returns how many postings were read. Run by the service at start-up, in the
        background (~8 M postings at 100k chunks: about 25 s on one core)."""
        if self.max_postings <= 0 or self.connect is None or self.source is None:
            return 0
        with self.connect() as conn:
            terms = self.source.common_terms(conn, min_rows)
        return self._fill(terms, budget or self.max_postings, doc_rows=True)

    def cached_rows(self, conn: Any, terms: Sequence[str]) -> dict[str, int]:
        """How many rows hold each of ``terms`` whose list the cache holds for the index's
        current version (others are left out): a document frequency without asking the index."""
        version = self.version(conn)
        state = self._state
        if version is None or state is None or state.version != version:
            return {}
        held = state.terms
        return {t: len(held[t][0]) for t in terms if t in held}

    def version(self, conn: Any) -> bytes | None:
        """The source's version marker (None: nothing to cache by)."""
        return None if self.source is None else self.source.version(conn)

    def _load_state(self, conn: Any, version: bytes) -> PostingState | None:
        """Row lengths of ``version``; None when row ids are too sparse for an array by row id,
        or when the index changed after ``version`` was read (the caller then asks the index).

        One statement reads the rows (a consistent snapshot: the array is sized from the row
        ids it read, never from an earlier maximum another writer may have overtaken), and the
        version read after it must still be ``version``: the rows are that version's."""
        assert self.source is not None
        if self.source.max_rowid(conn) > MAX_ROWID:  # an early way out only
            return None
        rowids, sizes = self.source.row_lengths(conn)
        if self.version(conn) != version:  # written meanwhile: the rows may be a newer version
            return None
        highest = int(rowids.max()) if len(rowids) else 0
        if highest > MAX_ROWID:
            return None
        lengths = np.zeros(highest + 1, dtype=np.uint32)
        lengths[rowids] = sizes
        n = len(rowids)
        return PostingState(version, lengths, n, float(lengths.sum()) / n if n else 0.0)

    def _read(self, conn: Any, term: str) -> Postings | None:
        """A term's rows and its count in each, from the source (no lock needed)."""
        assert self.source is not None
        return self.source.read(conn, term)

    def _store(
        self, state: PostingState, term: str, hit: tuple[NDArray[np.int32], NDArray[np.uint16]]
    ) -> None:
        """Keep a term's postings in ``state`` (if still current), dropping the least recently
        used terms beyond ``max_postings``."""
        with self._lock:
            if self._state is not state or term in state.terms:
                return
            state.terms[term] = hit
            state.cached += len(hit[0])
            while state.cached > self.max_postings and len(state.terms) > 1:
                _, (old, _) = state.terms.popitem(last=False)
                state.cached -= len(old)

    def rank(
        self,
        conn: Any,
        tokens: Sequence[str],
        limit: int,
        doc_ids: Sequence[str] | None = None,
    ) -> list[tuple[int, float]] | None:
        """The ``limit`` best rows for the OR of ``tokens``, only rows of ``doc_ids`` when given:
        (rowid, FTS5 ``bm25()`` value, which is negative: best first), or None when this cache
        can't answer exactly (see module doc; scoped searches also need the document map, see
        :meth:`prewarm`). ``conn``: a SQLAlchemy connection to the ledger."""
        if self.max_postings <= 0 or not tokens or not all(single_term(t) for t in tokens):
            return None
        version = self.version(conn)
        if version is None:
            return None
        with self._lock:
            state = self._current(conn, version)
            if state is None:
                return None
            allowed: NDArray[np.int32] | None = None
            if doc_ids is not None:
                if state.doc_rows is None:
                    return None
                found = [state.doc_rows[d] for d in dict.fromkeys(doc_ids) if d in state.doc_rows]
                allowed = np.concatenate(found) if found else np.zeros(0, dtype=np.int32)
            known = {}
            for term in tokens:
                hit = state.terms.get(term)
                if hit is not None:
                    state.terms.move_to_end(term)
                    known[term] = hit
        read: dict[str, Postings] = {}
        for term in dict.fromkeys(tokens):
            if term not in known:
                hit = self._read(conn, term)
                if hit is None:
                    return None
                read[term] = hit
        if read:
            if self.version(conn) != version:  # written meanwhile: what was read may be mixed
                return None
            for term, hit in read.items():
                self._store(state, term, hit)
        lists = [known.get(t) or read[t] for t in tokens]
        assert self.source is not None
        return self.source.top(tokens, lists, state, limit, allowed)


# (chunk id, document id, tenant, version of the row, active version of its document or None)
RowFacts = tuple[str, str, str, int, int | None]


def ranked_search(
    engine: Any,
    *,
    tenant: str,
    doc_ids: Sequence[str] | None,
    limit: int,
    rank: Callable[[Any, int], list[tuple[int, float]] | None],
    describe: Callable[[Any, list[int]], dict[int, RowFacts]],
    fallback: Callable[[], list[tuple[str, float]]],
) -> list[tuple[str, float]]:
    """A backend's ``search_ranked``: :func:`_best_in_scope` on a connection of ``engine``, or
    ``fallback()`` (the index's own search, once the connection is closed) when that can't
    rank the query."""
    with engine.connect() as conn:
        found = _best_in_scope(
            conn, tenant=tenant, doc_ids=doc_ids, limit=limit, rank=rank, describe=describe
        )
    return found if found is not None else fallback()


def _best_in_scope(
    conn: Any,
    *,
    tenant: str,
    doc_ids: Sequence[str] | None,
    limit: int,
    rank: Callable[[Any, int], list[tuple[int, float]] | None],
    describe: Callable[[Any, list[int]], dict[int, RowFacts]],
) -> list[tuple[str, float]] | None:
    """The ``limit`` best active chunks of ``tenant`` (in ``doc_ids`` when given) from a ranking
    of index rows: ``rank(conn, window)`` gives the ``window`` best (row id, score) — FTS5's
    negative ``bm25()`` values, best first — or None when it can't; ``describe`` says what
    each row is. Only the best rows are read and kept when active and in scope, widening the
    window until ``limit`` chunks are kept or the matches run out. Returns (chunk id, -score),
    each chunk once at its best row, or None: ask the index itself (it can't rank this query,
    or most matches are out of scope)."""
    allowed = set(doc_ids) if doc_ids is not None else None
    window = max(4 * limit, 64)
    while True:
        ranked = rank(conn, window)
        if ranked is None:
            return None
        if not ranked:
            return []
        facts = describe(conn, [rowid for rowid, _ in ranked])
        out: list[tuple[str, float]] = []
        seen: set[str] = set()  # a chunk at its best row (row_fts: several rows name it)
        for rowid, score in ranked:
            fact = facts.get(rowid)
            if fact is None:  # deleted since it was ranked
                continue
            chunk_id, doc_id, row_tenant, version, active = fact
            if row_tenant != tenant or active is None or int(version) != int(active):
                continue
            if (allowed is not None and doc_id not in allowed) or chunk_id in seen:
                continue
            seen.add(chunk_id)
            out.append((chunk_id, -float(score)))
            if len(out) == limit:
                return out
        if len(ranked) < window:
            return out
        window *= 4
        if window > 16384:  # most matches are out of scope: the index ranks them in scope
            return None
