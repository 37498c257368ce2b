"""In-memory ranking on PostgreSQL (``PgPostings`` in rag_app/store/keywords_postgres.py).

Every check compares with the same database ranked by PostgreSQL itself (a ledger with
``keyword_cache_postings=0``: IDF-weighted ``ts_rank`` in SQL): the same scores, bit for bit,
and the same chunks (rows of equal score may come in another order: SQL breaks ties by chunk
id, the cache by row id), before and after the index changes. Skips without PostgreSQL
binaries (tests/store/pg.py).
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Iterator

import numpy as np
import pytest
from sqlalchemy import text

from rag_app.store.ledger import Ledger
from rag_app.text.tokenizer import query_tokens
from tests.store.test_ledger import add_version
from tests.store.test_postings import QUESTIONS, _texts


@pytest.fixture
def pair(pg_url: str) -> Iterator[tuple[Ledger, Ledger]]:
    memory, sql = Ledger(pg_url), Ledger(pg_url, keyword_cache_postings=0)
    yield memory, sql
    memory.close()
    sql.close()


def same_ranking(got: list[tuple[str, float]], want: list[tuple[str, float]]) -> None:
    """``got`` is a best-first ranking ``want`` (longer) allows: the same scores (as float4:
    PostgreSQL sends its shortest decimal), and each score's chunks among ``want``'s chunks of
    that score."""
    assert [np.float32(s) for _, s in got] == [np.float32(s) for _, s in want[: len(got)]]
    allowed: dict[np.float32, set[str]] = defaultdict(set)
    for chunk_id, score in want:
        allowed[np.float32(score)].add(chunk_id)
    assert all(c in allowed[np.float32(s)] for c, s in got)


def assert_same(memory: Ledger, sql: Ledger, tenant: str = "default", **scope: object) -> int:
    sql.keywords.changed()  # its 30 s statistics: counted again, as the cache's are exact
    compared = 0
    for question in QUESTIONS:
        tokens = list(dict.fromkeys(query_tokens(question)))
        for limit in (1, 5, 40):
            got = memory.keyword_search_ranked(tokens, tenant=tenant, limit=limit, **scope)  # type: ignore[arg-type]
            want = sql.keyword_search_ranked(tokens, tenant=tenant, limit=limit + 60, **scope)  # type: ignore[arg-type]
            assert len(got) == min(limit, len(want)), (question, limit)
            same_ranking(got, want)
            compared += len(got)
    return compared


def test_memory_ranking_equals_ts_rank(pair: tuple[Ledger, Ledger]) -> None:
    memory, sql = pair
    rng = random.Random(7)
    for d in range(6):
        add_version(memory, f"doc{d}", _texts(rng, 30))
    assert assert_same(memory, sql) > 100
    assert memory.postings.cached_postings > 0  # the memory path answered
    with memory.engine.connect() as conn:
        ranked = memory.postings.rank(conn, list(query_tokens("合同违约")), 10)
        assert sql.postings.rank(conn, list(query_tokens("合同违约")), 10) is None
    assert ranked is not None and len(ranked) == 10


def test_term_counts_are_read_off_the_tsvector(pair: tuple[Ledger, Ledger]) -> None:
    memory, _ = pair
    add_version(memory, "d", ["合同 " * n + "违约" for n in (1, 2, 3, 7, 40, 300)])
    with memory.engine.connect() as conn:
        hit = memory.keywords.source.read(conn, "合同")  # type: ignore[attr-defined]
    assert hit is not None
    assert sorted(hit[1].tolist()) == [1, 2, 3, 7, 40, 255]  # as many positions as a tsvector keeps


def test_every_write_changes_the_version_and_the_ranking_follows(
    pair: tuple[Ledger, Ledger],
) -> None:
    memory, sql = pair
    rng = random.Random(11)
    for d in range(4):
        add_version(memory, f"doc{d}", _texts(rng, 25))
    assert_same(memory, sql)
    versions = [memory.keyword_index_version()]
    add_version(memory, "doc1", _texts(rng, 20))  # re-ingest: the old version's rows go inactive
    versions.append(memory.keyword_index_version())
    assert_same(memory, sql)
    memory.delete_document("doc3")
    versions.append(memory.keyword_index_version())
    add_version(memory, "doc9", ["监事会议决议，监事，监事。"] * 5)
    versions.append(memory.keyword_index_version())
    assert None not in versions and len(set(versions)) == len(versions)
    assert_same(memory, sql)
    found = memory.keyword_search_ranked(list(query_tokens("监事")), tenant="default", limit=80)
    assert any(c.startswith("doc9:") for c, _ in found)  # the new rows are in the lists
    assert not any(c.startswith("doc3:") for c, _ in found)  # the deleted ones are not


def test_tenants_scopes_and_phrases(pair: tuple[Ledger, Ledger]) -> None:
    memory, sql = pair
    rng = random.Random(3)
    for d in range(4):
        add_version(memory, f"doc{d}", _texts(rng, 25), tenant="alpha" if d < 3 else "beta")
    assert_same(memory, sql, tenant="alpha")
    assert_same(memory, sql, tenant="beta")
    tokens = list(query_tokens("合同违约的赔偿期限"))
    with memory.engine.connect() as conn:
        assert memory.postings.rank(conn, tokens, 5, doc_ids=["doc1"]) is None  # no map yet
        assert memory.postings.rank(conn, ["合同", "v2-beta"], 5) is None  # a phrase
    assert memory.postings.prewarm(min_rows=1) > 0  # ts_stat's common terms, and the map
    for doc_ids in (["doc1"], ["doc0", "doc2"], ["doc3"], ["missing"]):
        assert_same(memory, sql, tenant="alpha", doc_ids=doc_ids)
    phrase = memory.keyword_search_ranked(["合同", "v2-beta"], tenant="alpha", limit=5)
    assert phrase == sql.keyword_search(["合同", "v2-beta"], tenant="alpha", limit=5)


def test_an_older_keyword_table_gains_row_ids(pg_url: str) -> None:
    """A ledger written before row ids existed: opening it adds them, and the cache ranks."""
    first = Ledger(pg_url)
    rng = random.Random(5)
    for d in range(3):
        add_version(first, f"doc{d}", _texts(rng, 20))
    with first.engine.begin() as conn:
        conn.execute(text("ALTER TABLE chunk_keywords DROP COLUMN rid, DROP COLUMN n_tokens"))
        conn.execute(text("DROP TABLE keyword_version"))
    first.close()
    reopened, sql = Ledger(pg_url), Ledger(pg_url, keyword_cache_postings=0)
    try:
        with reopened.engine.connect() as conn:
            missing = conn.execute(
                text("SELECT count(*) FROM chunk_keywords WHERE rid IS NULL OR n_tokens = 0")
            ).scalar_one()
        assert missing == 0
        assert reopened.keyword_index_version() is not None
        assert_same(reopened, sql)
        assert reopened.postings.cached_postings > 0
    finally:
        reopened.close()
        sql.close()


def test_document_frequencies_of_cached_terms_come_from_the_cache(
    pair: tuple[Ledger, Ledger],
) -> None:
    """A cached term's count of rows is its list's length: the same as PostgreSQL's GIN count,
    before and after a write (a new version: counted by PostgreSQL again until re-read)."""
    memory, sql = pair
    rng = random.Random(17)
    for d in range(4):
        add_version(memory, f"doc{d}", _texts(rng, 30))
    terms = list(dict.fromkeys(t for q in QUESTIONS for t in query_tokens(q)))
    assert memory.postings.prewarm(min_rows=1) > 0
    with memory.engine.connect() as conn:
        assert len(memory.postings.cached_rows(conn, terms)) > 5
    assert memory.term_document_frequencies(terms) == sql.term_document_frequencies(terms)
    add_version(memory, "doc0", _texts(rng, 5))
    with memory.engine.connect() as conn:
        assert memory.postings.cached_rows(conn, terms) == {}  # another version now
    memory.keywords.changed()  # the 30 s statistics of both: counted again
    sql.keywords.changed()
    assert memory.term_document_frequencies(terms) == sql.term_document_frequencies(terms)


def test_a_new_keyword_table_has_its_gin_index_and_its_tsvector_column(pg_url: str) -> None:
    """The table's DDL (a GIN index added after the table is created, a ``tsvector`` column
    declared without SQLAlchemy's PostgreSQL dialect) is the one PostgreSQL's search needs."""
    ledger = Ledger(pg_url)
    try:
        with ledger.engine.connect() as conn:
            index = conn.execute(
                text("SELECT indexdef FROM pg_indexes WHERE indexname = 'ix_chunk_keywords_tsv'")
            ).scalar_one()
            kind = conn.execute(
                text(
                    "SELECT data_type, is_generated FROM information_schema.columns "
                    "WHERE table_name = 'chunk_keywords' AND column_name = 'tsv'"
                )
            ).one()
        assert "USING gin (tsv)" in index
        assert tuple(kind) == ("tsvector", "ALWAYS")
    finally:
        ledger.close()
