"""In-memory BM25 ranking (rag_app/store/postings.py) against FTS5's own ``bm25()`` ranking.

Every check compares with the same ledger's FTS5 ranking (``keyword_cache_postings=0``): the
ids, their order and the scores must be identical, before and after the index changes.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sqlalchemy import text

from rag_app.store.keywords_sqlite import Fts5Postings, _count_runs, vocab_instance_ddl
from rag_app.store.ledger import Ledger
from rag_app.text.tokenizer import query_tokens
from tests.store.test_ledger import add_version

WORDS = (
    "合同 违约 赔偿 保险 理赔 期限 公司 股东 会议 决议 董事 监事 工资 加班 休假 密码 账户 权限 "
    "数据 备份 服务器 网络 安全 审计 日志 合规 风险 报告 季度 年度 收入 成本 利润 资产 负债"
).split()


def _ledger_pair(tmp_path: Path) -> tuple[Ledger, Ledger]:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    return Ledger(url), Ledger(url, keyword_cache_postings=0)


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[tuple[Ledger, Ledger]]:
    memory, fts = _ledger_pair(tmp_path)
    yield memory, fts
    memory.close()
    fts.close()


def _texts(rng: random.Random, n: int) -> list[str]:
    # skewed word frequencies and lengths, repeated words (term counts > 1), some equal texts (ties)
    out = []
    for _ in range(n):
        words = rng.choices(WORDS, weights=range(len(WORDS), 0, -1), k=rng.randint(3, 40))
        out.append("，".join(words) + "。")
    return out + out[:3]


QUESTIONS = [
    "合同违约的赔偿期限",
    "保险理赔",
    "董事会议决议和监事",
    "服务器数据备份与审计日志",
    "年度收入成本利润",
    "资产负债风险报告",
    "密码",
    "不存在的词语",
]


def _assert_same(memory: Ledger, fts: Ledger, tenant: str = "default") -> int:
    """Both rankings equal for every question and limit; returns how many hits were compared."""
    compared = 0
    for question in QUESTIONS:
        tokens = list(query_tokens(question))
        for limit in (1, 5, 40, 500):
            got = memory.keyword_search_ranked(tokens, tenant=tenant, limit=limit)
            want = fts.keyword_search_ranked(tokens, tenant=tenant, limit=limit)
            assert got == want, (question, limit)
            compared += len(want)
    return compared


def test_memory_ranking_equals_fts5(pair: tuple[Ledger, Ledger]) -> None:
    memory, fts = pair
    rng = random.Random(7)
    for d in range(6):
        add_version(memory, f"doc{d}", _texts(rng, 40))
    assert _assert_same(memory, fts) > 100
    assert memory.postings.cached_postings > 0  # the memory path did answer
    with memory.engine.connect() as conn:  # and it answers these tokens itself
        ranked = memory.postings.rank(conn, list(query_tokens("合同违约")), 10)
    assert ranked is not None and len(ranked) == 10


def test_ranking_follows_index_changes(pair: tuple[Ledger, Ledger]) -> None:
    """New versions, deletions and rowids reused after a delete: never a stale posting."""
    memory, fts = pair
    rng = random.Random(11)
    for d in range(4):
        add_version(memory, f"doc{d}", _texts(rng, 30))
    _assert_same(memory, fts)
    add_version(memory, "doc1", _texts(rng, 25))  # re-ingest: new version, old rows deleted
    _assert_same(memory, fts)
    memory.delete_document("doc3")  # the highest rowids go; the next insert reuses them
    add_version(memory, "doc9", ["监事会议决议，监事，监事。"] * 5)
    _assert_same(memory, fts)
    top = memory.keyword_search_ranked(list(query_tokens("监事")), tenant="default", limit=1)
    assert top and top[0][0].startswith("doc9:")


def test_tenants_and_phrases(pair: tuple[Ledger, Ledger]) -> None:
    memory, fts = pair
    rng = random.Random(3)
    add_version(memory, "a", _texts(rng, 30), tenant="alpha")
    add_version(memory, "b", _texts(rng, 30), tenant="beta")
    _assert_same(memory, fts, tenant="alpha")
    _assert_same(memory, fts, tenant="beta")
    with memory.engine.connect() as conn:
        # a phrase (two FTS5 terms) or no tokens: not answered here, FTS5 ranks
        assert memory.postings.rank(conn, ["合同", "v2-beta"], 5) is None
        assert memory.postings.rank(conn, [], 5) is None
    got = memory.keyword_search_ranked(["合同", "v2-beta"], tenant="alpha", limit=5)
    assert got == fts.keyword_search_ranked(["合同", "v2-beta"], tenant="alpha", limit=5)


def test_memory_bound_and_prewarm(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    fts = Ledger(url, keyword_cache_postings=0)
    small = Ledger(url, keyword_cache_postings=300)
    rng = random.Random(5)
    for d in range(5):
        add_version(small, f"doc{d}", _texts(rng, 40))
    _assert_same(small, fts)
    # least recently used terms were dropped: at most the bound (or one list larger than it)
    largest = max(
        int(r[0]) for r in small.engine.connect().execute(text("SELECT doc FROM chunk_fts_vocab"))
    )
    assert small.postings.cached_postings <= max(300, largest)

    warm = Ledger(url, keyword_cache_postings=10_000)
    loaded = warm.postings.prewarm(budget=400, min_rows=1)
    assert 0 < loaded == warm.postings.cached_postings
    with warm.engine.connect() as conn:
        total = conn.execute(text("SELECT count(*) FROM chunk_fts")).scalar_one()
        common = conn.execute(
            text("SELECT term, doc FROM chunk_fts_vocab WHERE doc <= :h ORDER BY doc DESC"),
            {"h": total // 2},
        ).first()
    assert common is not None
    state = warm.postings._state
    assert state is not None and common[0] in state.terms  # the most common useful term
    _assert_same(warm, fts)
    common_only = Ledger(url)
    assert common_only.postings.prewarm(min_rows=20) > 0  # rare terms are left to first use
    state = common_only.postings._state
    assert state is not None and all(len(rows) >= 20 for rows, _ in state.terms.values())
    for ledger in (fts, small, warm, common_only):
        ledger.close()


def test_disabled_cache_never_ranks(tmp_path: Path) -> None:
    ledger = Ledger(f"sqlite:///{tmp_path / 'l.db'}", keyword_cache_postings=0)
    add_version(ledger, "d", ["合同违约赔偿。"])
    with ledger.engine.connect() as conn:
        assert ledger.postings.rank(conn, ["合同"], 5) is None
    assert ledger.postings.prewarm() == 0
    ledger.close()


def test_scoped_searches_need_the_document_map(pair: tuple[Ledger, Ledger]) -> None:
    memory, fts = pair
    rng = random.Random(13)
    for d in range(5):
        add_version(memory, f"doc{d}", _texts(rng, 30), tenant="alpha" if d < 4 else "beta")
    tokens = list(query_tokens("合同违约的赔偿期限"))
    with memory.engine.connect() as conn:
        assert memory.postings.rank(conn, tokens, 5, doc_ids=["doc1"]) is None  # no map yet
    memory.postings.prewarm()
    scopes: list[list[str]] = [["doc1"], ["doc0", "doc3"], ["doc4"], ["missing"], []]
    for doc_ids in scopes:
        with memory.engine.connect() as conn:
            ranked = memory.postings.rank(conn, tokens, 50, doc_ids=doc_ids)
        assert ranked is not None  # answered in memory now
        for limit in (1, 5, 50):
            args = {"tenant": "alpha", "doc_ids": doc_ids, "limit": limit}
            got = memory.keyword_search_ranked(tokens, **args)  # type: ignore[arg-type]
            assert got == fts.keyword_search(tokens, **args), (doc_ids, limit)  # type: ignore[arg-type]
            assert all(c.split(":")[0] in doc_ids for c, _ in got)
    # a change drops the map with the rest; it is read again in the background, and scoped
    # searches stay exact meanwhile (keyword_search's SQL filter)
    add_version(memory, "doc1", _texts(rng, 10), tenant="alpha")
    for doc_ids in scopes:
        args = {"tenant": "alpha", "doc_ids": doc_ids, "limit": 20}
        got = memory.keyword_search_ranked(tokens, **args)  # type: ignore[arg-type]
        assert got == fts.keyword_search(tokens, **args)  # type: ignore[arg-type]


def test_terms_are_read_again_after_a_write(pair: tuple[Ledger, Ledger]) -> None:
    memory, fts = pair
    memory.postings.rewarm_delay_s = 0.0
    rng = random.Random(17)
    for d in range(3):
        add_version(memory, f"doc{d}", _texts(rng, 30))
    memory.postings.prewarm(min_rows=1)
    before = memory.postings._state
    assert before is not None and before.doc_rows is not None
    held = set(before.terms)
    add_version(memory, "doc1", _texts(rng, 20))  # a write: the next query starts a new state
    _assert_same(memory, fts)
    deadline = time.monotonic() + 60  # a wait for the background thread, not a speed check
    while time.monotonic() < deadline:
        state = memory.postings._state
        if state is not None and state.doc_rows is not None and held <= set(state.terms):
            break
        time.sleep(0.05)
    state = memory.postings._state
    assert state is not None and state is not before
    assert state.doc_rows is not None and held <= set(state.terms)
    _assert_same(memory, fts)


class _WriteAfterFirstRead:
    """A ledger connection whose first fetch from the keyword index's ``docsize`` table lets a
    writer thread commit new chunks before the caller reads on: the window of the race."""

    def __init__(self, conn: Any, write: Callable[[], None]) -> None:
        self._conn = conn
        self._write = write
        self.fired = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)

    @property
    def connection(self) -> Any:
        outer = self

        class _Raw:
            def cursor(self) -> Any:
                return _Cursor(outer._conn.connection.cursor())

        class _Cursor:
            def __init__(self, cursor: Any) -> None:
                self._cursor = cursor
                self._docsize = False

            def __getattr__(self, name: str) -> Any:
                return getattr(self._cursor, name)

            def execute(self, sql: str, *args: Any) -> Any:
                self._cursor.execute(sql, *args)
                self._docsize = "chunk_fts_docsize" in sql
                return self

            def _after(self, rows: Any) -> Any:
                if self._docsize and not outer.fired:
                    outer.fired = True
                    writer = threading.Thread(target=outer._write)
                    writer.start()
                    writer.join()
                return rows

            def fetchone(self) -> Any:
                return self._after(self._cursor.fetchone())

            def fetchall(self) -> Any:
                return self._after(self._cursor.fetchall())

        return _Raw()


def test_a_commit_while_the_row_lengths_are_read_is_never_mixed_in(
    pair: tuple[Ledger, Ledger],
) -> None:
    """Issue 16: the row lengths were read as max(rowid), then the rows, in two statements; a
    commit in between (another thread or process writing) gave rows beyond the array:
    IndexError, a 500 for the question. Now the cache either reads a consistent snapshot or
    leaves the question to FTS5, and the answer equals FTS5's."""
    memory, fts = pair
    rng = random.Random(5)
    for d in range(3):
        add_version(memory, f"doc{d}", _texts(rng, 30))
    writer = Ledger(f"sqlite:///{memory.engine.url.database}")
    tokens = list(query_tokens("合同违约的赔偿期限"))
    try:
        with memory.engine.connect() as conn:
            racy = _WriteAfterFirstRead(
                conn, lambda: add_version(writer, "late", _texts(random.Random(6), 50))
            )
            ranked = memory.postings.rank(racy, tokens, 500)
        assert racy.fired  # the writer did commit inside the window
        if ranked is not None:  # a snapshot of one version: FTS5's ranking of that version
            assert ranked == _fts_rank(fts, tokens, 500, before="late")
    finally:
        writer.close()
    _assert_same(memory, fts)  # and the next questions see the write


def _fts_rank(fts: Ledger, tokens: list[str], limit: int, before: str) -> list[tuple[int, float]]:
    """FTS5's (rowid, bm25) ranking without the rows of document ``before`` (written later)."""
    query = " OR ".join(f'"{t}"' for t in tokens)
    with fts.engine.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT rowid, bm25(chunk_fts) FROM chunk_fts WHERE chunk_fts MATCH :q "
                "AND doc_id != :d ORDER BY bm25(chunk_fts) LIMIT :n"
            ),
            {"q": query, "d": before, "n": limit},
        ).all()
    return [(r[0], r[1]) for r in rows]


def test_a_terms_postings_are_fts5s_rows_and_counts(pair: tuple[Ledger, Ledger]) -> None:
    """Fts5Postings.read (occurrences joined in SQL, counted in numpy) gives each row holding
    the term once with its count, as a ``GROUP BY`` over the instance table does."""
    memory, _ = pair
    rng = random.Random(11)
    for d in range(3):
        add_version(memory, f"doc{d}", _texts(rng, 30))
    source = Fts5Postings("chunk_fts")
    with memory.engine.connect() as conn:
        conn.exec_driver_sql(vocab_instance_ddl("chunk_fts"))
        for term in [*WORDS[:6], "不存在"]:
            rows, counts = source.read(conn, term)
            want = conn.exec_driver_sql(
                "SELECT doc, count(*) FROM temp.chunk_fts_instances WHERE term = ? "
                "GROUP BY doc ORDER BY doc",
                (term,),
            ).fetchall()
            assert [(int(r), int(c)) for r, c in zip(rows, counts, strict=True)] == want
            assert term == "不存在" or (len(want) > 0 and max(c for _, c in want) > 1)
    rows, counts = _count_runs(np.array([9, 3, 3, 7, 3], dtype=np.int64))  # any order
    assert rows.tolist() == [3, 7, 9] and counts.tolist() == [3, 1, 1]
