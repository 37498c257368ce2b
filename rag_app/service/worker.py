"""Ingestion workers: claim jobs from the ledger queue and run them through the knowledge base.

Used in-process by the service (a small thread pool) and standalone by ``rag worker`` (several
processes or machines share one queue). A job's worker heartbeats it; jobs of a dead worker are
requeued after the lease by whichever worker looks first. A job stops between its embedding
batches when its document is deleted or a newer version of it is queued (CANCELLED), and the
worker takes the next job.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import select
import shutil
import socket
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from rag_app.ingestion.files import internal_error, platform_error
from rag_app.ingestion.pipeline import stoppable
from rag_app.kb import KnowledgeBase
from rag_app.store.jobs import Job, JobQueue, JobStatus
from rag_app.types import FileResult

logger = logging.getLogger(__name__)

# a job whose platform failed (store/jobs.py, JobQueue.release) is queued again without being
# charged while it is younger than this; after that its failures count as its file's
PLATFORM_RETRY_WINDOW_S = 3600.0
MAX_BACKOFF_S = 30.0
# a superseded upload folder younger than this is left: an upload being stored right now
# writes its file before it enqueues its job
FRESH_UPLOAD_S = 300.0


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


class Wakeup:
    """An idle worker's wait, cut short by ``set()``: a socket pair, so a signal handler may set
    it (no lock that the interrupted thread could hold); closed when garbage-collected."""

    def __init__(self) -> None:
        self._read, self._write = socket.socketpair()
        self._read.setblocking(False)
        self._write.setblocking(False)

    def set(self) -> None:
        with contextlib.suppress(OSError):  # full (already set) or closed
            self._write.send(b"\0")

    def wait(self, timeout: float) -> None:
        try:
            ready, _, _ = select.select([self._read], [], [], timeout)
        except (OSError, ValueError):  # closed
            time.sleep(timeout)
            return
        if ready:
            with contextlib.suppress(OSError):
                while self._read.recv(4096):
                    pass


def warm_up(kb: KnowledgeBase) -> None:
    """What a worker's first job would otherwise wait for: the embedding model (and one call to
    it), jieba's dictionary and the parse server (unless parsing runs in-process)."""
    from rag_app.ingestion.isolation import prestart
    from rag_app.text.tokenizer import tokenize

    try:
        if not kb.settings.parse_in_process:
            prestart()
        tokenize("预热分词词典")
        kb.embed_model.get_text_embedding_batch(["预热嵌入模型"])
    except Exception:  # the first job will report the problem properly
        logger.exception("worker warm-up failed")


def express_bytes(settings_mb: float) -> int | None:
    """The express lane's file-size limit in bytes (None: no express lane)."""
    return int(settings_mb * 1024 * 1024) if settings_mb > 0 else None


class Worker:
    """Processes jobs one at a time until stopped.

    ``express_max_bytes``: this worker is an express lane (store/jobs.py, ``JobQueue.claim``):
    it takes only files up to that size, of tenants with no job in progress.
    """

    def __init__(
        self,
        kb: KnowledgeBase,
        queue: JobQueue,
        *,
        name: str | None = None,
        lease_seconds: float = 60.0,
        poll_seconds: float = 0.5,
        on_job: Callable[[Job, FileResult], None] | None = None,
        express_max_bytes: int | None = None,
    ) -> None:
        self.kb = kb
        self.queue = queue
        self.express_max_bytes = express_max_bytes
        self.name = name or worker_name() + ("-express" if express_max_bytes is not None else "")
        self.lease_seconds = lease_seconds
        self.poll_seconds = poll_seconds
        self.on_job = on_job
        # a plain flag, not a threading.Event: stop() runs in a SIGTERM handler, and Event.set()
        # takes a lock that the interrupted thread may hold (a second SIGTERM landing inside the
        # first handler's Event.set() deadlocked the worker for good)
        self.stopping = False
        self.wakeup = Wakeup()
        self.processed = 0
        self.platform_failures = 0  # in a row: the back-off before the next claim

    def run_once(self) -> Job | None:
        """Requeue stale jobs, claim one and process it. Returns the job, or None if idle."""
        self.queue.requeue_stale(self.lease_seconds)
        job = self.queue.claim(self.name, express_max_bytes=self.express_max_bytes)
        if job is None:
            return None
        beat_stop = threading.Event()
        beat = threading.Thread(target=self._heartbeat, args=(job, beat_stop), daemon=True)
        beat.start()
        try:
            result = self._process(job)
        finally:
            beat_stop.set()
            beat.join()
        if result is None:  # given back: the platform failed, not the file
            self.platform_failures += 1
            self.wakeup.wait(min(MAX_BACKOFF_S, 2.0**self.platform_failures))
            return job
        self.platform_failures = 0
        self.processed += 1
        if self.on_job:
            self.on_job(job, result)
        return job

    def _process(self, job: Job) -> FileResult | None:
        """The job's result, or None when it was given back to the queue (platform failure)."""
        logger.info("job %s: %s %s (%s)", job.job_id, job.kind, job.rel_path, job.doc_id)
        try:
            if not Path(job.path).is_file():
                raise FileNotFoundError("the stored file is gone; upload it again")
            with stoppable(functools.partial(self._stop_reason, job)):
                result = self.kb.ingestion.ingest_one(
                    job.path,
                    tenant=job.tenant,
                    rel_path=job.rel_path,
                    doc_id=job.doc_id,
                    force=job.kind == "reparse",
                )
        except FileNotFoundError as exc:
            result = FileResult(path=job.path, doc_id=job.doc_id, status="FAILED", reason=str(exc))
            self.kb.documents.mark_failed(job.doc_id, str(exc))
        except Exception as exc:  # keep the worker alive; the user sees a secret-free reason
            logger.exception("job %s failed", job.job_id)
            if platform_error(exc) and self._give_back(job, exc):
                return None
            result = FileResult(path=job.path, doc_id=job.doc_id, status="FAILED")
            result.reason = internal_error(exc)
            self.kb.documents.mark_failed(job.doc_id, result.reason)
        if result.platform and self._give_back(job, None):
            return None
        if result.status in ("SUCCESS", "UNCHANGED"):
            status, error = JobStatus.SUCCESS, None
            self._prune_uploads(job)
        elif result.status == "CANCELLED":
            status, error = JobStatus.CANCELLED, result.reason
        else:
            document = self.kb.documents.get(job.doc_id)  # its error is the public one
            status, error = JobStatus.FAILED, document.error if document else result.reason
        if not self.queue.finish(job.job_id, status, error, worker=self.name):
            if status == JobStatus.CANCELLED:  # its document deleted: the job is cancelled
                logger.info("job %s: stopped (%s)", job.job_id, error)
                return result
            logger.warning(
                "job %s: no longer this worker's (%s): its outcome %s is not recorded",
                job.job_id,
                self.name,
                status.value,
            )
        return result

    def _stop_reason(self, job: Job) -> str | None:
        """Asked between the job's embedding batches (ingestion/pipeline.py, ``stoppable``):
        why it should stop (its document deleted, a newer version queued), or None."""
        try:
            return self.queue.stop_reason(job.job_id, self.name)
        except Exception:  # a database hiccup does not stop the job
            logger.exception("job %s: could not check whether to stop", job.job_id)
            return None

    def _prune_uploads(self, job: Job) -> None:
        """Remove the stored files of the document's superseded versions (uploads/<doc id>/
        <hash>/), keeping this job's and those of its jobs still queued, unless
        ``keep_superseded_uploads``."""
        if self.kb.settings.keep_superseded_uploads:
            return
        current = Path(job.path).parent
        doc_dir = current.parent
        uploads = (self.kb.settings.kb_dir / "uploads").resolve()
        try:
            if doc_dir.parent.resolve() != uploads:  # not a service upload (a path of its own)
                return
            keep = {current.resolve()}
            keep |= {Path(p).parent.resolve() for p in self.queue.open_paths(job.doc_id)}
            now = time.time()
            for folder in doc_dir.iterdir():
                if folder.resolve() in keep or now - folder.stat().st_mtime < FRESH_UPLOAD_S:
                    continue
                shutil.rmtree(folder, ignore_errors=True)
        except OSError:  # best effort: a leftover file costs disk, not correctness
            logger.exception("job %s: pruning superseded uploads failed", job.job_id)

    def _give_back(self, job: Job, exc: BaseException | None) -> bool:
        """Queue a job that failed by the platform's fault again, uncharged, unless it has
        waited longer than PLATFORM_RETRY_WINDOW_S. True when it went back."""
        if time.time() - job.created_at > PLATFORM_RETRY_WINDOW_S:
            return False
        cause = type(exc).__name__ if exc is not None else "the vector store or database"
        reason = f"waiting: the platform was unreachable ({cause}); the job is retried"
        try:
            back = self.queue.release(job.job_id, worker=self.name, reason=reason)
        except Exception:  # the ledger itself is down: the lease requeues the job later
            logger.exception("job %s: could not give it back", job.job_id)
            return True
        logger.warning("job %s: platform failure, queued again (not charged)", job.job_id)
        return back

    def _heartbeat(self, job: Job, stop: threading.Event) -> None:
        interval = max(0.2, self.lease_seconds / 4)
        while not stop.wait(interval):
            try:
                self.queue.heartbeat(job.job_id, self.name)
            except Exception:  # a missed beat only risks a requeue
                logger.exception("heartbeat of job %s failed", job.job_id)

    def run(self, *, until_idle: bool = False, max_jobs: int | None = None) -> int:
        """Loop until stopped (or the queue is empty with ``until_idle``). Returns the jobs
        done (a job given back to the queue, its platform unreachable, is not one)."""
        start = self.processed
        while not self.stopping:
            try:
                job = self.run_once()
            except Exception:  # database hiccup: wait and retry
                logger.exception("worker %s: queue error", self.name)
                job = None
            if job is not None:
                if max_jobs is not None and self.processed - start >= max_jobs:
                    break
                continue
            if until_idle:
                break
            self.wakeup.wait(self.poll_seconds)
        return self.processed - start

    def wake(self) -> None:
        """A job was enqueued: claim now rather than at the next poll (signal-handler safe)."""
        self.wakeup.set()

    def stop(self) -> None:
        """Stop after the current job (signal-handler safe: no lock)."""
        self.stopping = True
        self.wakeup.set()


class WorkerPool:
    """Worker threads inside the API process: ``threads`` of them, and an express lane beside
    them unless ``express_max_bytes`` is None."""

    def __init__(
        self,
        kb: KnowledgeBase,
        queue: JobQueue,
        *,
        threads: int = 1,
        lease_seconds: float = 60.0,
        poll_seconds: float = 0.5,
        express_max_bytes: int | None = None,
    ) -> None:

        def worker(express: int | None = None) -> Worker:
            return Worker(
                kb,
                queue,
                lease_seconds=lease_seconds,
                poll_seconds=poll_seconds,
                express_max_bytes=express,
            )

        self.workers = [worker() for _ in range(max(0, threads))]
        if express_max_bytes is not None and self.workers:  # threads=0: `rag worker`s only
            self.workers.append(worker(express_max_bytes))
        self.threads: list[threading.Thread] = []

    def start(self) -> None:
        for worker in self.workers:
            thread = threading.Thread(target=worker.run, name=worker.name, daemon=True)
            thread.start()
            self.threads.append(thread)

    def wake(self) -> None:
        for worker in self.workers:
            worker.wake()

    def configured(self) -> int:
        """Workers, their express lane not counted."""
        return sum(worker.express_max_bytes is None for worker in self.workers)

    def alive(self) -> int:
        """Live worker threads, the express lane's not counted."""
        return sum(
            thread.is_alive()
            for worker, thread in zip(self.workers, self.threads, strict=False)
            if worker.express_max_bytes is None
        )

    def stop(self, timeout: float = 30.0) -> None:
        for worker in self.workers:
            worker.stop()
        deadline = time.monotonic() + timeout
        for thread in self.threads:
            thread.join(max(0.0, deadline - time.monotonic()))
