"""The durable ingestion queue: jobs are rows in the ledger, claimed atomically by workers.

A claim is one ``UPDATE … WHERE job_id = (SELECT … LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING``
statement: on PostgreSQL concurrent workers skip each other's locked rows, on SQLite the statement
takes the write lock before it reads, so either way a job is claimed by exactly one worker.
A worker heartbeats its job; a job whose heartbeat is older than the lease (its worker died) goes
back to PENDING, up to ``max_attempts`` times, then FAILED.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from sqlalchemy import and_, func, insert, select, text, update

from rag_app.faults import fault_point
from rag_app.store.ledger import Ledger
from rag_app.store.schema import clip_error, documents, jobs
from rag_app.types import DocStatus


class JobStatus(StrEnum):
    PENDING = "PENDING"
    PROCESSING = "PROCESSING"
    SUCCESS = "SUCCESS"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"


OPEN_STATUSES = (JobStatus.PENDING.value, JobStatus.PROCESSING.value)


@dataclass(frozen=True)
class Job:
    job_id: int
    doc_id: str
    tenant: str
    kind: str  # "ingest" | "reparse"
    status: str
    path: str
    rel_path: str
    content_hash: str | None
    attempts: int
    error: str | None
    worker: str | None
    created_at: float
    started_at: float | None
    heartbeat_at: float | None
    finished_at: float | None

    @classmethod
    def from_row(cls, row: Any) -> Job:
        return cls(**{k: row[k] for k in cls.__dataclass_fields__})


@dataclass(frozen=True)
class PendingDocument:
    """What :meth:`JobQueue.enqueue` needs to register the job's document as PENDING (its id,
    tenant, stored path and name are the job's)."""

    doc_type: str
    size: int


def _processing(name: str, column: str, *, count: bool = False) -> Any:
    """The PROCESSING jobs (or their count) that share ``column`` (doc_id, tenant) with the
    outer query's job."""
    other = jobs.alias(name)
    return (
        select(func.count() if count else other.c.job_id)
        .select_from(other)
        .where(
            and_(other.c[column] == jobs.c[column], other.c.status == JobStatus.PROCESSING.value)
        )
    )


def _workers(job_id: int, worker: str) -> Any:
    """The job, while it is ``worker``'s and in progress."""
    return and_(
        jobs.c.job_id == job_id,
        jobs.c.worker == worker,
        jobs.c.status == JobStatus.PROCESSING.value,
    )


class JobQueue:
    """Queue operations on the ledger's ``jobs`` table."""

    def __init__(self, ledger: Ledger, *, max_attempts: int = 3) -> None:
        self.ledger = ledger
        self.engine = ledger.engine
        self.max_attempts = max_attempts

    def enqueue(
        self,
        *,
        doc_id: str,
        tenant: str,
        kind: str,
        path: str,
        rel_path: str,
        content_hash: str | None = None,
        document: PendingDocument | None = None,
    ) -> Job:
        """Add a job, or return the document's job that is still PENDING (coalesced).

        ``document``: also create (or re-mark) the document as PENDING, in the same transaction,
        so that a crash can't leave a PENDING document without a job (or the reverse)."""
        now = time.time()
        with self.engine.begin() as conn:
            if self.ledger.is_postgres:
                # READ COMMITTED lets concurrent enqueues of one document both find no pending
                # job and both insert one: serialize them per document for this transaction
                conn.execute(
                    text("SELECT pg_advisory_xact_lock(hashtextextended(:doc_id, 0))"),
                    {"doc_id": doc_id},
                )
            elif self.ledger.is_sqlite:
                # the SELECT below runs before pysqlite opens a transaction (it begins one at
                # the first write), so concurrent enqueues of one document could each find no
                # pending job and each insert one: take the write lock first (a no-op write)
                # so that they queue on busy_timeout and coalesce
                conn.execute(update(jobs).where(jobs.c.job_id == -1).values(status=jobs.c.status))
            if document is not None:
                self.ledger.register_pending_in(
                    conn,
                    doc_id=doc_id,
                    tenant=tenant,
                    source=path,
                    rel_path=rel_path,
                    doc_type=document.doc_type,
                    size=document.size,
                )
                fault_point("enqueue.after_document")  # document written, its job not yet
            row = (
                conn.execute(
                    select(jobs).where(
                        and_(
                            jobs.c.doc_id == doc_id,
                            jobs.c.status == JobStatus.PENDING.value,
                        )
                    )
                )
                .mappings()
                .first()
            )
            if row is not None:
                conn.execute(
                    update(jobs)
                    .where(jobs.c.job_id == row["job_id"])
                    .values(path=path, rel_path=rel_path, content_hash=content_hash, kind=kind)
                )
                job_id = int(row["job_id"])
            else:
                result = conn.execute(
                    insert(jobs).values(
                        doc_id=doc_id,
                        tenant=tenant,
                        kind=kind,
                        status=JobStatus.PENDING.value,
                        path=path,
                        rel_path=rel_path,
                        content_hash=content_hash,
                        attempts=0,
                        created_at=now,
                    )
                )
                key = result.inserted_primary_key
                assert key is not None
                job_id = int(key[0])
        job = self.get(job_id)
        assert job is not None
        return job

    def get(self, job_id: int) -> Job | None:
        with self.engine.connect() as conn:
            row = conn.execute(select(jobs).where(jobs.c.job_id == job_id)).mappings().first()
        return Job.from_row(row) if row else None

    def latest_for(self, doc_ids: list[str]) -> dict[str, Job]:
        """The newest job of each document."""
        if not doc_ids:
            return {}
        newest = (
            select(func.max(jobs.c.job_id))
            .where(jobs.c.doc_id.in_(doc_ids))
            .group_by(jobs.c.doc_id)
            .scalar_subquery()
        )
        with self.engine.connect() as conn:
            rows = conn.execute(select(jobs).where(jobs.c.job_id.in_(newest))).mappings().all()
        return {r["doc_id"]: Job.from_row(r) for r in rows}

    def pending_hashes(self, tenant: str, content_hash: str, limit: int = 50) -> list[str]:
        """The document ids of ``tenant``'s open jobs for content with this hash."""
        with self.engine.connect() as conn:
            return list(
                conn.execute(
                    select(jobs.c.doc_id)
                    .where(
                        and_(
                            jobs.c.tenant == tenant,
                            jobs.c.content_hash == content_hash,
                            jobs.c.status.in_(OPEN_STATUSES),
                        )
                    )
                    .distinct()
                    .limit(limit)
                ).scalars()
            )

    def claim(self, worker: str, *, express_max_bytes: int | None = None) -> Job | None:
        """Atomically take the next PENDING job (or None), fairly across tenants.

        The next job is that of the tenant with the fewest jobs in progress, then of the tenant
        whose last turn is the oldest (a tenant that queued a hundred files and one that queued
        one take turns), then the oldest. ``express_max_bytes``: a worker's express lane takes
        only files up to that size of tenants with no job in progress, so that another tenant's
        big or slow file never holds up a small upload.

        A document's job waits while another job of the same document is PROCESSING: two
        versions of one document built at once could commit in the wrong order (the older
        content last)."""
        now = time.time()
        busy = _processing("running", "doc_id").exists()  # this document's other version
        tenant_running = _processing("in_progress", "tenant", count=True).scalar_subquery()
        turns = jobs.alias("turns")
        last_turn = (
            select(func.coalesce(func.max(turns.c.started_at), 0.0))
            .where(turns.c.tenant == jobs.c.tenant)
            .scalar_subquery()
        )
        conditions = [jobs.c.status == JobStatus.PENDING.value, ~busy]
        if express_max_bytes is not None:
            size = (
                select(documents.c.size_bytes)
                .where(documents.c.doc_id == jobs.c.doc_id)
                .scalar_subquery()
            )
            conditions += [tenant_running == 0, func.coalesce(size, 0) <= express_max_bytes]
        oldest = (
            select(jobs.c.job_id)
            .where(and_(*conditions))
            .order_by(tenant_running, last_turn, jobs.c.job_id)
            .limit(1)
            .with_for_update(skip_locked=True)
            .scalar_subquery()
        )
        stmt = (
            update(jobs)
            .where(and_(jobs.c.job_id == oldest, jobs.c.status == JobStatus.PENDING.value))
            .values(
                status=JobStatus.PROCESSING.value,
                worker=worker,
                started_at=now,
                heartbeat_at=now,
                attempts=jobs.c.attempts + 1,
            )
            .returning(*jobs.c)
        )
        with self.engine.begin() as conn:
            row = conn.execute(stmt).mappings().first()
            if row is None:
                return None
            job = Job.from_row(row)
            conn.execute(
                update(documents)
                .where(documents.c.doc_id == job.doc_id)
                .values(status=DocStatus.PROCESSING.value)
            )
        return job

    def heartbeat(self, job_id: int, worker: str) -> bool:
        """Extend the lease; False when the job is no longer this worker's."""
        with self.engine.begin() as conn:
            result = conn.execute(
                update(jobs).where(_workers(job_id, worker)).values(heartbeat_at=time.time())
            )
        return bool(result.rowcount)

    def finish(
        self, job_id: int, status: JobStatus, error: str | None = None, *, worker: str
    ) -> bool:
        """Record the outcome of ``worker``'s job; False (nothing written) when the job is no
        longer that worker's: requeued after its lease ran out and claimed by another worker,
        or cancelled (its document deleted) meanwhile."""
        with self.engine.begin() as conn:
            result = conn.execute(
                update(jobs)
                .where(_workers(job_id, worker))
                .values(status=status.value, error=clip_error(error), finished_at=time.time())
            )
        return bool(result.rowcount)

    def release(self, job_id: int, *, worker: str, reason: str) -> bool:
        """Give ``worker``'s job back to the queue without charging the attempt: it failed for
        a reason of the platform (the vector store or the database unreachable), not of its
        file. The document shows PENDING with ``reason``. False when the job is no longer
        that worker's."""
        with self.engine.begin() as conn:
            doc_id = conn.execute(
                update(jobs)
                .where(_workers(job_id, worker))
                .values(
                    status=JobStatus.PENDING.value,
                    worker=None,
                    attempts=jobs.c.attempts - 1,
                    error=clip_error(reason),
                )
                .returning(jobs.c.doc_id)
            ).scalar_one_or_none()
            if doc_id is not None:
                conn.execute(
                    update(documents)
                    .where(documents.c.doc_id == doc_id)
                    .values(status=DocStatus.PENDING.value, error=clip_error(reason))
                )
        return doc_id is not None

    def open_paths(self, doc_id: str) -> list[str]:
        """The stored files of a document's jobs still PENDING or PROCESSING."""
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(jobs.c.path).where(
                    and_(jobs.c.doc_id == doc_id, jobs.c.status.in_(OPEN_STATUSES))
                )
            ).scalars()
            return [str(p) for p in rows]

    def stop_reason(self, job_id: int, worker: str) -> str | None:
        """Why ``worker``'s job in progress should stop now (None: go on): its document was
        deleted (the job cancelled), a newer version of the document is queued (the job is
        superseded: that one builds the newest content), or the job is no longer this
        worker's (requeued after its lease ran out). One indexed read: a running job asks
        between its embedding batches."""
        newer = jobs.alias("newer")
        superseded = (
            select(newer.c.job_id)
            .where(
                and_(
                    newer.c.doc_id == jobs.c.doc_id,
                    newer.c.job_id > jobs.c.job_id,
                    newer.c.status == JobStatus.PENDING.value,
                )
            )
            .exists()
        )
        with self.engine.connect() as conn:
            row = conn.execute(
                select(jobs.c.status, jobs.c.worker, superseded).where(jobs.c.job_id == job_id)
            ).first()
        if row is None or row[0] == JobStatus.CANCELLED.value:
            return "the document was deleted during ingestion"
        if row[0] != JobStatus.PROCESSING.value or row[1] != worker:
            return "the job is no longer this worker's (requeued)"
        if row[2]:
            return "superseded by a newer version of the document"
        return None

    def cancel_for_document(self, doc_id: str) -> int:
        """Cancel a document's open jobs (it is being deleted)."""
        with self.engine.begin() as conn:
            result = conn.execute(
                update(jobs)
                .where(and_(jobs.c.doc_id == doc_id, jobs.c.status.in_(OPEN_STATUSES)))
                .values(status=JobStatus.CANCELLED.value, finished_at=time.time())
            )
        return int(result.rowcount or 0)

    def requeue_stale(
        self, lease_seconds: float, *, before: float | None = None
    ) -> tuple[int, int]:
        """Jobs whose worker stopped heartbeating: back to PENDING, or FAILED after max attempts.

        ``before``: instead of the lease, every job whose last heartbeat is older than this
        epoch time, back to PENDING without charging the attempt (``rag serve`` on a local KB at
        start-up: the jobs a killed server left in progress, whose workers died with it; no
        other process may write the KB, so no live worker holds them). Returns (requeued, failed).
        """
        cutoff = time.time() - lease_seconds if before is None else before
        stale = and_(
            jobs.c.status == JobStatus.PROCESSING.value,
            func.coalesce(jobs.c.heartbeat_at, 0.0) < cutoff,
        )
        error = (
            f"gave up after {self.max_attempts} attempts: the worker stopped while processing "
            "(crash or kill); see the server log"
        )
        charge = before is None
        with self.engine.begin() as conn:
            failed_docs: list[str] = []
            if charge:
                given_up = conn.execute(
                    update(jobs)
                    .where(and_(stale, jobs.c.attempts >= self.max_attempts))
                    .values(status=JobStatus.FAILED.value, error=error, finished_at=time.time())
                    .returning(jobs.c.doc_id)
                ).scalars()
                failed_docs = list(given_up)
            requeued_docs = list(
                conn.execute(
                    update(jobs)
                    .where(stale)
                    .values(
                        status=JobStatus.PENDING.value,
                        worker=None,
                        attempts=jobs.c.attempts - (0 if charge else 1),
                    )
                    .returning(jobs.c.doc_id)
                ).scalars()
            )
            if failed_docs:
                conn.execute(
                    update(documents)
                    .where(documents.c.doc_id.in_(failed_docs))
                    .values(status=DocStatus.FAILED.value, error=error)
                )
            if requeued_docs:
                conn.execute(
                    update(documents)
                    .where(documents.c.doc_id.in_(requeued_docs))
                    .values(status=DocStatus.PENDING.value)
                )
        return len(requeued_docs), len(failed_docs)

    def counts(self) -> dict[str, int]:
        with self.engine.connect() as conn:
            rows = conn.execute(select(jobs.c.status, func.count()).group_by(jobs.c.status)).all()
        found = {str(status): int(n) for status, n in rows}
        return {s.value.lower(): found.get(s.value, 0) for s in JobStatus}
