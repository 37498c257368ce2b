"""The ledger on both backends: SQLite (FTS5 keyword index) and PostgreSQL (tsvector + GIN).

Every test taking ``ledger`` runs twice (``ledger_url`` in tests/store/pg.py); the PostgreSQL run
uses a real local server that the session starts and stops, and skips with the reason when the
server binaries are missing.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from datetime import datetime
from pathlib import Path

import pytest
from sqlalchemy import delete, select, text

from rag_app.faults import InjectedFault
from rag_app.service.auth import Role, create_key, list_keys, revoke_key, verify_key
from rag_app.store.jobs import JobQueue, JobStatus
from rag_app.store.ledger import DocumentGone, Ledger, chunks, documents
from rag_app.text.tokenizer import query_tokens, tokenize
from rag_app.types import DocStatus


@pytest.fixture
def ledger(ledger_url: str) -> Iterator[Ledger]:
    led = Ledger(ledger_url)
    yield led
    led.close()


def make_rows(doc_id: str, version: int, texts: Sequence[str]) -> list[dict[str, object]]:
    """Chunk rows as the ingestion pipeline makes them (``keywords``: jieba tokens)."""
    return [
        {
            "chunk_id": f"{doc_id}:{version}:{i}",
            "chunk_index": i,
            "text": body,
            "title_path": "",
            "start_char": 0,
            "end_char": len(body),
            "token_count": len(body),
            "block_types": "paragraph",
            "keywords": " ".join(tokenize(body)),
        }
        for i, body in enumerate(texts)
    ]


def begin(ledger: Ledger, doc_id: str, tenant: str = "default") -> int:
    return ledger.begin_document(
        doc_id=doc_id,
        tenant=tenant,
        source=f"/src/{doc_id}.md",
        rel_path=f"{doc_id}.md",
        doc_type="markdown",
        size=100,
    )


def commit(
    ledger: Ledger,
    doc_id: str,
    version: int,
    texts: Sequence[str],
    tenant: str = "default",
    *,
    rows: Sequence[dict[str, object]] | None = None,
) -> None:
    """Commit ``texts`` as the document's version (``rows``: chunk rows made otherwise)."""
    ledger.commit_version(
        doc_id=doc_id,
        tenant=tenant,
        version=version,
        rows=make_rows(doc_id, version, texts) if rows is None else rows,
        content_hash=f"hash-{doc_id}-{version}",
        fingerprint="fp",
        doc_type="markdown",
        title=doc_id,
        source=f"/src/{doc_id}.md",
        size=100,
    )


def add_version(ledger: Ledger, doc_id: str, texts: Sequence[str], tenant: str = "default") -> int:
    version = begin(ledger, doc_id, tenant)
    commit(ledger, doc_id, version, texts, tenant)
    return version


def search(ledger: Ledger, question: str, tenant: str = "default", **kw: object) -> list[str]:
    return [c for c, _ in ledger.keyword_search(query_tokens(question), tenant=tenant, **kw)]  # type: ignore[arg-type]


def test_backend_flags(ledger: Ledger, ledger_url: str) -> None:
    assert ledger.is_sqlite == ledger_url.startswith("sqlite")
    assert ledger.is_postgres == ledger_url.startswith("postgresql")
    assert ledger.get_meta("embedding") is None
    ledger.set_meta("embedding", "usem3")
    ledger.set_meta("embedding", "hf:x")
    assert ledger.get_meta("embedding") == "hf:x"


def test_plain_postgresql_url_uses_psycopg(pg_url: str) -> None:
    """``postgresql://`` (no driver) means the bundled psycopg 3, not the absent psycopg2."""
    led = Ledger(pg_url.replace("postgresql+psycopg://", "postgresql://"))
    try:
        assert led.is_postgres and led.engine.dialect.driver == "psycopg"
        assert led.keyword_count() == 0
    finally:
        led.close()


def test_concurrent_first_opens_create_the_schema_once(pg_url: str) -> None:
    """Processes starting together on an empty database (CREATE TABLE races on PostgreSQL)."""
    start = threading.Barrier(4)
    errors: list[BaseException] = []

    def open_close() -> None:
        try:
            start.wait()
            Ledger(pg_url).close()
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=open_close) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors, errors


def test_reopening_is_idempotent(ledger_url: str) -> None:
    first = Ledger(ledger_url)
    add_version(first, "doc", ["数据库每天凌晨两点备份"])
    second = Ledger(ledger_url)  # creates nothing twice, loses nothing
    try:
        assert second.keyword_count() == 1
        assert search(second, "数据库备份") == ["doc:1:0"]
    finally:
        first.close()
        second.close()


# ----- documents lifecycle -----------------------------------------------------------------
def test_document_versions_flip_and_cleanup(ledger: Ledger) -> None:
    v1 = begin(ledger, "manual")
    assert v1 == 1
    doc = ledger.get_document("manual")
    assert doc is not None and doc.status == DocStatus.PROCESSING and doc.version == 0
    assert isinstance(doc.created_at, datetime)

    commit(ledger, "manual", v1, ["咖啡机每周除垢一次", "整机保修两年"])
    doc = ledger.get_document("manual")
    assert doc is not None
    assert (doc.status, doc.version, doc.chunk_count) == (DocStatus.SUCCESS, 1, 2)
    assert ledger.find_all_by_hash("default", "hash-manual-1") == ["manual"]
    assert ledger.fingerprint("manual") == "fp"

    v2 = begin(ledger, "manual")
    assert v2 == 2
    # while v2 is being built, v1 is still what is served
    assert [c.chunk_id for c in ledger.active_chunks("manual")] == ["manual:1:0", "manual:1:1"]
    assert search(ledger, "保修两年") == ["manual:1:1"]

    commit(ledger, "manual", v2, ["咖啡机每月除垢一次", "整机保修三年", "磨豆器保修十八个月"])
    assert [c.version for c in ledger.active_chunks("manual")] == [2, 2, 2]
    assert ledger.all_active_chunk_ids() == {"manual:2:0", "manual:2:1", "manual:2:2"}
    assert ledger.keyword_count() == 5  # v1's rows stay until the cleanup step
    assert "manual:1:1" not in search(ledger, "保修两年")  # but never match
    assert set(ledger.active_chunks_at("manual", [0, 2, 7])) == {0, 2}
    assert set(ledger.active_chunks_by_id(["manual:1:0", "manual:2:0"])) == {"manual:2:0"}

    assert ledger.delete_inactive_chunks("manual") == 2
    assert ledger.keyword_count() == 3
    assert ledger.purge_inactive(repair=False) == (0, 0)

    # a failed re-ingestion keeps the active version queryable
    begin(ledger, "manual")
    ledger.mark_failed("manual", "boom " * 300)
    doc = ledger.get_document("manual")
    assert doc is not None and doc.status == DocStatus.FAILED and doc.version == 2
    assert doc.error is not None and len(doc.error) <= 500
    assert search(ledger, "磨豆器") == ["manual:2:2"]

    assert ledger.document_sources(["manual", "nope"]) == {"manual": ("/src/manual.md", "default")}
    assert ledger.delete_document("manual") is True
    assert ledger.get_document("manual") is None
    assert ledger.active_chunks("manual") == []
    assert ledger.keyword_count() == 0
    assert search(ledger, "磨豆器") == []
    assert ledger.delete_document("manual") is False


def test_commit_after_delete_raises_and_writes_nothing(ledger: Ledger) -> None:
    version = begin(ledger, "gone")
    ledger.delete_document("gone")
    with pytest.raises(DocumentGone):
        commit(ledger, "gone", version, ["不会写入的内容"])
    assert ledger.keyword_count() == 0
    with ledger.engine.connect() as conn:
        assert conn.execute(select(chunks.c.chunk_id)).all() == []


def test_crash_inside_commit_rolls_back(ledger: Ledger, monkeypatch: pytest.MonkeyPatch) -> None:
    add_version(ledger, "policy", ["密码每九十天修改一次"])
    version = begin(ledger, "policy")
    monkeypatch.setenv("RAG_FAULT", "ingest.in_commit:raise")
    with pytest.raises(InjectedFault):
        commit(ledger, "policy", version, ["口令每月更换"])
    monkeypatch.delenv("RAG_FAULT")
    assert ledger.keyword_count() == 1
    assert [c.version for c in ledger.active_chunks("policy")] == [1]
    assert ledger.purge_inactive(repair=False) == (0, 0)
    assert search(ledger, "口令更换") == []


def test_register_pending_keeps_active_version(ledger: Ledger) -> None:
    add_version(ledger, "notes", ["会议纪要每周五归档"])
    ledger.register_pending(
        doc_id="notes", tenant="default", source="/x", rel_path="notes.md", doc_type="md", size=1
    )
    ledger.register_pending(
        doc_id="new", tenant="default", source="/y", rel_path="new.md", doc_type="md", size=1
    )
    statuses = {d.doc_id: (d.status, d.version) for d in ledger.list_documents("default")}
    assert statuses == {"notes": (DocStatus.PENDING, 1), "new": (DocStatus.PENDING, 0)}
    assert search(ledger, "会议纪要") == ["notes:1:0"]
    ledger.mark_unchanged("notes")
    doc = ledger.get_document("notes")
    assert doc is not None and doc.status == DocStatus.SUCCESS


# ----- keyword index -----------------------------------------------------------------------
def test_keyword_search_honours_tenant_documents_and_active_version(ledger: Ledger) -> None:
    add_version(ledger, "a1", ["数据库备份每天凌晨两点执行", "员工密码每九十天修改一次"], "acme")
    # a1 v2 drops the password chunk; its v1 rows stay (no cleanup yet) and must never match
    add_version(ledger, "a1", ["数据库备份每周执行一次"], "acme")
    add_version(ledger, "a2", ["密码长度不少于十二位"], "acme")
    add_version(ledger, "b1", ["访客密码由前台发放"], "globex")

    assert search(ledger, "密码", tenant="acme") == ["a2:1:0"]
    assert search(ledger, "密码", tenant="globex") == ["b1:1:0"]
    assert search(ledger, "密码", tenant="nobody") == []
    assert search(ledger, "备份", tenant="acme") == ["a1:2:0"]
    assert search(ledger, "备份", tenant="globex") == []

    assert search(ledger, "密码", tenant="acme", doc_ids=["a2"]) == ["a2:1:0"]
    assert search(ledger, "密码", tenant="acme", doc_ids=["a1"]) == []
    assert search(ledger, "密码", tenant="acme", doc_ids=["b1"]) == []  # other tenant's document
    assert search(ledger, "密码", tenant="acme", doc_ids=[]) == []
    both = search(ledger, "密码 备份", tenant="acme", doc_ids=["a1", "a2"], limit=5)
    assert sorted(both) == ["a1:2:0", "a2:1:0"]
    assert len(search(ledger, "密码 备份", tenant="acme", limit=1)) == 1
    assert ledger.keyword_search([], tenant="acme") == []
    assert ledger.keyword_search(["密码"], tenant="acme", limit=0) == []


def test_keyword_search_ranks_by_bm25(ledger: Ledger) -> None:
    add_version(
        ledger,
        "sec",
        [
            "数据传输必须加密，存储的数据也必须加密",
            "数据应当分类管理",
            "机房温度保持在二十度左右",
            "数据备份保留三十天",
        ],
    )
    hits = ledger.keyword_search(query_tokens("数据加密"), tenant="default", limit=10)
    ids = [c for c, _ in hits]
    assert ids[0] == "sec:1:0"  # both terms, the rare one twice
    assert set(ids) == {"sec:1:0", "sec:1:1", "sec:1:3"}
    scores = [s for _, s in hits]
    assert scores == sorted(scores, reverse=True) and scores[-1] > 0


def test_keyword_tokens_keep_labels_latin_and_numbers(ledger: Ledger) -> None:
    add_version(
        ledger,
        "law",
        [
            "第三十三条 用人单位应当依法建立职工名册",
            "第三条 劳动者享有平等就业的权利",
            "客户端 v2.1 版本支持 api_key 参数，端口 8000",
            "年利率为3.5%，按C++标准实现",
        ],
    )
    # an Arabic-numeral label finds the article written in Chinese numerals, and first
    assert search(ledger, "第33条的内容是什么")[0] == "law:1:0"
    assert search(ledger, "第三条")[0] == "law:1:1"
    assert search(ledger, "v2.1 版本")[0] == "law:1:2"
    assert search(ledger, "8000")[0] == "law:1:2"
    assert search(ledger, "利率 3.5%")[0] == "law:1:3"
    # tsquery / FTS5 syntax and SQL quoting in terms are plain text, never syntax
    hostile = [
        "')",
        "a' OR 1=1 --",
        "\\",
        '"',
        "&|!:*()",
        "NEAR",
        "OR",
        "第33条",
        "'); DROP TABLE jobs; --",
    ]
    hits = ledger.keyword_search(hostile, tenant="default")
    assert [c for c, _ in hits][:1] == ["law:1:0"]
    assert ledger.keyword_search(["'", "&", "::"], tenant="default") == []


def test_term_document_frequencies(ledger: Ledger) -> None:
    assert ledger.term_document_frequencies([]) == ({}, 0)
    add_version(ledger, "p1", ["密码每九十天修改", "密码长度十二位", "机房温度二十度"])
    add_version(ledger, "p2", ["密码不得外借"], "other-tenant")
    freqs, total = ledger.term_document_frequencies(["密码", "机房", "不存在的词", "密码"])
    assert total == 4
    assert freqs == {"密码": 3, "机房": 1}
    assert ledger.keyword_count() == 4


def test_purge_inactive_after_a_crash(ledger: Ledger) -> None:
    add_version(ledger, "keep", ["保留的文档内容"])
    add_version(ledger, "doc", ["旧版本第一段", "旧版本第二段"])
    # crash after the flip, before the cleanup: v1 rows are left behind
    add_version(ledger, "doc", ["新版本内容"])
    # crash inside a (hypothetical) multi-step delete: the document row gone, its rows left
    add_version(ledger, "orphan", ["孤儿文档内容"])
    with ledger.engine.begin() as conn:
        conn.execute(delete(documents).where(documents.c.doc_id == "orphan"))

    assert ledger.purge_inactive(repair=False) == (3, 3)
    assert ledger.keyword_count() == 5  # counting repaired nothing
    assert ledger.purge_inactive(repair=True) == (3, 3)
    assert ledger.purge_inactive(repair=False) == (0, 0)
    assert ledger.keyword_count() == 2
    assert search(ledger, "新版本") == ["doc:2:0"]
    assert search(ledger, "保留") == ["keep:1:0"]
    assert ledger.all_active_chunk_ids() == {"doc:2:0", "keep:1:0"}


def fts_rows(ledger: Ledger) -> tuple[list[tuple[int, str, int]], list[tuple[int, str, int]]]:
    """(chunk_fts's rows, chunk_fts_rows' entries) as (rowid, doc_id, version), by rowid."""
    with ledger.engine.connect() as conn:
        fts = conn.execute(text("SELECT rowid, doc_id, version FROM chunk_fts ORDER BY rowid"))
        index = conn.execute(
            text("SELECT rowid, doc_id, version FROM chunk_fts_rows ORDER BY rowid")
        )
        return [tuple(r) for r in fts], [tuple(r) for r in index]  # type: ignore[misc]


def test_fts_row_index_follows_every_write(ledger_url: str) -> None:
    """chunk_fts_rows names exactly chunk_fts's rows after commits, re-versions, deletes and a
    repair: the deletes that look rowids up there leave no keyword row behind."""
    if not ledger_url.startswith("sqlite"):
        pytest.skip("the FTS5 row index is SQLite's")
    ledger = Ledger(ledger_url)
    try:
        add_version(ledger, "a", ["第一份文档的第一段", "第一份文档的第二段"])
        add_version(ledger, "b", ["第二份文档"])
        add_version(ledger, "a", ["第一份文档的新版本"])  # v1's rows left behind ...
        ledger.delete_inactive_chunks("a")  # ... and dropped
        add_version(ledger, "c", ["第三份文档", "第三份文档续"])
        ledger.delete_document("b")
        add_version(ledger, "d", ["第四份文档"])  # may reuse b's rowid
        add_version(ledger, "c", ["第三份文档改"])  # v1 left: repaired below
        assert ledger.purge_inactive(repair=True) == (2, 2)
        fts, index = fts_rows(ledger)
        assert fts == index
        assert sorted({(d, v) for _, d, v in fts}) == [("a", 2), ("c", 2), ("d", 1)]
        assert ledger.keyword_count() == 3
        assert search(ledger, "第二份") == []
        assert search(ledger, "第三份") == ["c:2:0"]
    finally:
        ledger.close()


def test_a_ledger_from_before_the_row_index_gets_it_filled(ledger_url: str) -> None:
    if not ledger_url.startswith("sqlite"):
        pytest.skip("the FTS5 row index is SQLite's")
    ledger = Ledger(ledger_url)
    add_version(ledger, "old", ["旧账本里的文档", "旧账本里的第二段"])
    add_version(ledger, "other", ["另一份文档"])
    with ledger.engine.begin() as conn:  # as a ledger written by the previous release
        conn.execute(text("DROP TABLE chunk_fts_rows"))
        conn.execute(text("DELETE FROM kb_meta WHERE key = 'chunk_fts_rows_filled'"))
    ledger.close()
    ledger = Ledger(ledger_url)
    try:
        fts, index = fts_rows(ledger)
        assert fts == index and len(fts) == 3
        ledger.delete_document("old")
        assert search(ledger, "旧账本") == []
        assert fts_rows(ledger)[0] == fts_rows(ledger)[1] == [r for r in fts if r[1] == "other"]
    finally:
        ledger.close()


# ----- job queue ---------------------------------------------------------------------------
def enqueue(queue: JobQueue, doc_id: str) -> int:
    queue.ledger.register_pending(
        doc_id=doc_id,
        tenant="default",
        source=f"/src/{doc_id}",
        rel_path=doc_id,
        doc_type="markdown",
        size=1,
    )
    job = queue.enqueue(
        doc_id=doc_id, tenant="default", kind="ingest", path=f"/src/{doc_id}", rel_path=doc_id
    )
    return job.job_id


def test_job_queue_lifecycle(ledger: Ledger) -> None:
    queue = JobQueue(ledger, max_attempts=2)
    first = enqueue(queue, "a")
    assert enqueue(queue, "a") == first  # coalesced while pending
    second = enqueue(queue, "b")
    assert second > first

    job = queue.claim("w1")
    assert job is not None and job.job_id == first and job.attempts == 1
    assert job.status == JobStatus.PROCESSING and job.worker == "w1"
    doc = ledger.get_document("a")
    assert doc is not None and doc.status == DocStatus.PROCESSING
    assert queue.heartbeat(first, "w1") is True
    assert queue.heartbeat(first, "w2") is False
    assert queue.finish(first, JobStatus.FAILED, worker="w2") is False  # not w2's job
    assert queue.finish(first, JobStatus.SUCCESS, worker="w1") is True
    assert queue.heartbeat(first, "w1") is False
    assert queue.latest_for(["a", "b"])["a"].status == JobStatus.SUCCESS

    job = queue.claim("w2")
    assert job is not None and job.job_id == second
    assert queue.claim("w3") is None
    assert queue.counts() == {
        "pending": 0,
        "processing": 1,
        "success": 1,
        "failed": 0,
        "cancelled": 0,
    }

    # the worker died: requeued once, then given up after max_attempts
    time.sleep(0.02)
    assert queue.requeue_stale(0.0) == (1, 0)
    doc = ledger.get_document("b")
    assert doc is not None and doc.status == DocStatus.PENDING
    job = queue.claim("w4")
    assert job is not None and job.job_id == second and job.attempts == 2
    time.sleep(0.02)
    assert queue.requeue_stale(0.0) == (0, 1)
    failed = queue.get(second)
    assert failed is not None and failed.status == JobStatus.FAILED
    doc = ledger.get_document("b")
    assert doc is not None and doc.status == DocStatus.FAILED and "gave up" in (doc.error or "")

    enqueue(queue, "c")
    assert queue.cancel_for_document("c") == 1
    assert queue.claim("w5") is None


def test_each_job_is_claimed_exactly_once(ledger: Ledger, ledger_url: str) -> None:
    """Workers on their own connections race for the jobs; each job goes to exactly one."""
    queue = JobQueue(ledger)
    job_ids = [enqueue(queue, f"doc-{i:03d}") for i in range(40)]
    n_workers = 4
    start = threading.Barrier(n_workers)
    claimed: dict[str, list[int]] = {}
    errors: list[BaseException] = []

    def work(name: str) -> None:
        own = Ledger(ledger_url)
        try:
            q = JobQueue(own)
            start.wait()
            mine: list[int] = []
            while (job := q.claim(name)) is not None:
                mine.append(job.job_id)
                q.finish(job.job_id, JobStatus.SUCCESS, worker=name)
            claimed[name] = mine
        except BaseException as exc:  # reported below
            errors.append(exc)
        finally:
            own.close()

    threads = [threading.Thread(target=work, args=(f"w{i}",)) for i in range(n_workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    everything = [j for mine in claimed.values() for j in mine]
    assert sorted(everything) == sorted(job_ids)  # none lost, none twice
    assert queue.counts()["success"] == len(job_ids)


def test_claim_skips_a_locked_job(pg_url: str) -> None:
    """PostgreSQL: a job locked by another transaction is skipped, not waited for."""
    holder, claimer = Ledger(pg_url), Ledger(pg_url)
    try:
        queue = JobQueue(holder)
        first, second = enqueue(queue, "x"), enqueue(queue, "y")
        with holder.engine.begin() as conn:
            conn.execute(text("SELECT job_id FROM jobs WHERE job_id = :j FOR UPDATE"), {"j": first})
            t0 = time.monotonic()
            job = JobQueue(claimer).claim("other")
            assert job is not None and job.job_id == second
            assert time.monotonic() - t0 < 5
        job = JobQueue(claimer).claim("other")
        assert job is not None and job.job_id == first
    finally:
        holder.close()
        claimer.close()


def _race_enqueue(url: str, doc_id: str, n_workers: int) -> list[int]:
    """``n_workers`` threads, each on its own Ledger, enqueue ``doc_id`` at once: job ids."""
    start = threading.Barrier(n_workers)
    ids: list[int] = []
    errors: list[BaseException] = []

    def work() -> None:
        own = Ledger(url)
        try:
            start.wait()
            job = JobQueue(own).enqueue(
                doc_id=doc_id, tenant="default", kind="ingest", path="/p", rel_path="p"
            )
            ids.append(job.job_id)
        except BaseException as exc:  # reported below
            errors.append(exc)
        finally:
            own.close()

    threads = [threading.Thread(target=work) for _ in range(n_workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors, errors
    return ids


def test_concurrent_enqueues_of_one_document_coalesce(ledger: Ledger, ledger_url: str) -> None:
    """Enqueues racing for one document leave one pending job, not one each (SQLite: 17
    distinct jobs for these 20 enqueues before the write lock was taken first)."""
    for round_ in range(5):
        ids = _race_enqueue(ledger_url, f"same-{round_}", 4)
        assert len(ids) == 4 and len(set(ids)) == 1


def test_a_documents_next_job_waits_while_one_is_processing(ledger: Ledger) -> None:
    """Two versions of one document are never built at once (they could commit out of order)."""
    queue = JobQueue(ledger)
    first = enqueue(queue, "a")
    job = queue.claim("w1")
    assert job is not None and job.job_id == first
    second = enqueue(queue, "a")  # new content while the first job runs: a new pending job
    other = enqueue(queue, "b")
    assert second != first
    job = queue.claim("w2")
    assert job is not None and job.job_id == other  # "a" is busy: its newer job waits
    assert queue.claim("w3") is None
    queue.finish(first, JobStatus.SUCCESS, worker="w1")
    job = queue.claim("w3")
    assert job is not None and job.job_id == second


# ----- API keys ----------------------------------------------------------------------------
def test_api_keys(ledger: Ledger) -> None:
    key = create_key(ledger, "acme", "editor", "ci")
    info = verify_key(ledger.api_keys, key)
    assert info is not None
    assert (info.tenant, info.role, info.name, info.can_edit) == ("acme", Role.EDITOR, "ci", True)
    reader = create_key(ledger, "acme", Role.READER)
    reader_info = verify_key(ledger.api_keys, reader)
    assert reader_info is not None and not reader_info.can_edit
    assert verify_key(ledger.api_keys, key + "x") is None
    assert verify_key(ledger.api_keys, "not-a-key") is None
    assert {k.key_id for k in list_keys(ledger)} == {info.key_id, reader_info.key_id}
    assert revoke_key(ledger, info.key_id) is True
    assert revoke_key(ledger, info.key_id) is False
    assert verify_key(ledger.api_keys, key) is None
    assert [k.revoked for k in list_keys(ledger) if k.key_id == info.key_id] == [True]
    with pytest.raises(ValueError):
        create_key(ledger, "bad tenant!", "reader")


# ----- end to end on PostgreSQL ------------------------------------------------------------
POLICY_V1 = """# 信息安全管理制度

## 第一章 总则

第一条 为加强公司信息安全管理，制定本制度。

## 第二章 账号与密码

第二条 员工密码每九十天至少修改一次，长度不少于十二位。

第三条 远程办公必须通过公司VPN接入内网。
"""

POLICY_V2 = POLICY_V1.replace("每九十天至少修改一次", "每六十天至少更换一次").replace(
    "VPN", "零信任网关"
)


def test_knowledge_base_on_postgres(tmp_path: Path, pg_url: str, embed_model) -> None:  # type: ignore[no-untyped-def]
    from rag_app import KnowledgeBase

    docs = tmp_path / "docs"
    docs.mkdir()
    policy = docs / "policy.md"
    policy.write_text(POLICY_V1, encoding="utf-8")
    kb = KnowledgeBase.open(
        tmp_path / "kb", database_url=pg_url, embed_model=embed_model, retrieval_mode="keyword"
    )
    try:
        assert kb.ledger.is_postgres
        report = kb.ingest([docs])
        assert report.failed == 0, [f.reason for f in report.files]
        (doc,) = kb.documents.list()
        assert doc.version == 1 and doc.chunk_count > 0

        hits = kb.retrieve("密码多久修改一次？", top_k=3)
        assert hits and "九十天" in hits[0].text
        assert kb.retrieve("第3条的内容是什么？", top_k=1)[0].text.count("VPN") >= 1
        hybrid = kb.retrieve("员工密码多久需要修改？", top_k=3, mode="hybrid")
        assert any("九十天" in h.text for h in hybrid)
        answer = kb.ask("员工密码多久需要修改一次？")
        assert not answer.refused and "九十天" in answer.answer

        policy.write_text(POLICY_V2, encoding="utf-8")
        report = kb.ingest([docs])
        assert [f.status for f in report.files] == ["SUCCESS"]
        (doc,) = kb.documents.list()
        assert doc.version == 2
        assert kb.ledger.keyword_count() == doc.chunk_count  # v1's keyword rows are gone
        texts = [h.text for h in kb.retrieve("密码多久更换一次？", top_k=5)]
        assert texts and "六十天" in texts[0] and not any("九十天" in t for t in texts)
        assert kb.retrieve("VPN", top_k=5) == []
        assert "零信任网关" in kb.retrieve("零信任网关", top_k=1, mode="hybrid")[0].text
        health = kb.doctor(repair=False)
        assert health["inactive_chunk_rows"] == 0 and health["stale_keyword_rows"] == 0

        assert kb.documents.delete(doc.doc_id) is True
        assert kb.documents.list() == []
        assert kb.ledger.keyword_count() == 0
        assert kb.retrieve("密码多久更换一次？", top_k=5) == []
    finally:
        kb.close()


def test_idf_groups_cut_at_the_largest_gaps() -> None:
    from rag_app.store.postings_postgres import _idf_groups

    idf = {"罕见": 9.0, "少见": 8.8, "条款": 5.0, "第33条": 3.1, "人民": 0.2, "中华": 0.1}
    assert _idf_groups(idf) == [["罕见", "少见"], ["条款"], ["第33条"], ["人民", "中华"]]
    assert _idf_groups({"a": 1.0, "b": 2.0}) == [["b"], ["a"]]
    assert _idf_groups({}) == []
