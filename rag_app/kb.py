"""The KnowledgeBase facade: open, ingest, retrieve, documents, chunks, delete."""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.ingestion import IngestionPipeline
from llama_index.core.schema import NodeWithScore

from pipelines.ingest import (
    EmbeddedChunk,
    PreparedDocument,
    build_ingestion_pipeline,
    embed_chunks,
    number_chunks,
    pipeline_fingerprint,
)
from pipelines.isolation import ParseJob, parse_and_chunk, parse_bounded
from rag_app.config import Settings
from rag_app.embeddings import load_embedding
from rag_app.engine import AnswerEngine, build_answer_engine
from rag_app.faults import fault_point
from rag_app.readers import SUPPORTED_EXTENSIONS, ParsedFile, ReaderError
from rag_app.retrieval.hybrid import HybridRetriever
from rag_app.retrieval.prf import feedback_params
from rag_app.retrieval.scope import Scope
from rag_app.retrieval.stats import TermStatistics
from rag_app.store.ledger import DocumentGone, Ledger
from rag_app.store.vector_health import rebuild, self_recall
from rag_app.store.vectors import VectorStore
from rag_app.store.writer_lock import WriterLock
from rag_app.types import (
    REFUSAL,
    Answer,
    ChunkInfo,
    Citation,
    DocumentInfo,
    FileResult,
    IngestReport,
    Source,
)

logger = logging.getLogger(__name__)

ProgressCallback = Callable[[FileResult, int, int], None]


class KnowledgeBaseError(RuntimeError):
    """A knowledge-base level problem the user must fix (the message says how)."""


@dataclass(frozen=True)
class _InputFile:
    path: Path
    rel_path: str
    explicit: bool  # named on the command line (not found by walking a folder)


def node_to_source(node: NodeWithScore) -> Source:
    """A retrieved node as a citation-ready ``Source`` (fields from the ledger, not a model)."""
    m = node.node.metadata
    return Source(
        text=node.node.get_content(),
        source=str(m.get("source", "")),
        doc_id=str(m["doc_id"]),
        chunk_id=node.node.node_id,
        chunk_index=int(m["chunk_index"]),
        version=int(m["version"]),
        score=round(float(node.score or 0.0), 6),
        title_path=str(m.get("title_path", "")),
        start_char=int(m["start_char"]),
        end_char=int(m["end_char"]),
        prefix_chars=int(m.get("prefix_chars", 0)),
        suffix_chars=int(m.get("suffix_chars", 0)),
        block_types=str(m.get("block_types", "")),
        tenant=str(m.get("tenant", "")),
    )


def internal_error(exc: BaseException) -> str:
    """A short, secret-free description of an unexpected failure (details go to the log)."""
    return f"internal error ({type(exc).__name__}); see the server log"


def make_doc_id(tenant: str, rel_path: str) -> str:
    """Stable id from the tenant and the path relative to the ingested root."""
    return hashlib.sha1(f"{tenant}\n{rel_path}".encode()).hexdigest()[:24]


def collect_files(paths: Iterable[str | Path]) -> tuple[list[_InputFile], list[FileResult]]:
    """Expand files and folders (recursively, skipping hidden entries) into input files."""
    found: list[_InputFile] = []
    problems: list[FileResult] = []
    for raw in paths:
        path = Path(raw).expanduser()
        if path.is_dir():
            for item in sorted(path.rglob("*")):
                rel = item.relative_to(path)
                if any(part.startswith(".") for part in rel.parts) or not item.is_file():
                    continue
                found.append(_InputFile(item, rel.as_posix(), explicit=False))
        elif path.is_file():
            found.append(_InputFile(path, path.name, explicit=True))
        else:
            problems.append(
                FileResult(path=str(raw), status="FAILED", reason=f"path does not exist: {raw}")
            )
    return found, problems


@dataclass
class _Prepared:
    """A file read, parsed, chunked and embedded ahead of its turn (or the error doing so)."""

    content_hash: str
    parsed: ParsedFile | None = None
    document: PreparedDocument | None = None
    error: Exception | None = None


class _Prefetcher:
    """Prepares the next file of an ``ingest`` in a helper thread.

    While the current file's chunks are written (Chroma upsert, ledger commit, old versions
    dropped), the next one is read, parsed, chunked and embedded (jieba tokenizing its keywords
    alongside, see ``prepare_document``), so the model keeps working during the writes. The model
    is the configured one and embeds one batch at a time, as ``ingest_one`` does: the vectors are
    the same whichever way a file is ingested. The writes themselves, and everything that touches
    the ledger's state of a document, stay in ``_ingest_file``, file after file, in their order. A
    prepared result is used only when the file's content hash still matches; files that would be
    unchanged, skipped or rejected are not prepared. At most two files are held prepared (the one
    being staged and the next), besides the write group (``WRITE_GROUP_VECTORS``), so memory stays
    bounded.
    """

    def __init__(self, kb: KnowledgeBase, files: Sequence[_InputFile], tenant: str) -> None:
        self.kb, self.files, self.tenant = kb, files, tenant
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ingest-prep")
        self.futures: dict[_InputFile, Future[_Prepared | None]] = {}
        self.submitted = 0

    def advance(self, index: int) -> None:
        """File ``index`` is next: make sure it and the one after it are (being) prepared."""
        while self.submitted < min(index + 2, len(self.files)):
            item = self.files[self.submitted]
            self.futures[item] = self.pool.submit(self._prepare, item)
            self.submitted += 1

    def take(self, item: _InputFile, doc_id: str, content_hash: str) -> _Prepared | None:
        future = self.futures.pop(item, None)
        if future is None:
            return None
        prepared = future.result()
        if (
            prepared is None
            or prepared.content_hash != content_hash  # the file changed meanwhile
            or (prepared.document is not None and prepared.document.doc_id != doc_id)
        ):
            return None  # prepare it inline
        return prepared

    def close(self, *, wait: bool) -> None:
        self.pool.shutdown(wait=wait, cancel_futures=True)
        self.futures.clear()

    def _prepare(self, item: _InputFile) -> _Prepared | None:
        kb = self.kb
        if item.path.suffix.lower() not in SUPPORTED_EXTENSIONS:
            return None
        try:
            data = item.path.read_bytes()
        except OSError:
            return None
        if len(data) > kb.settings.max_file_bytes:
            return None
        content_hash = hashlib.sha256(data).hexdigest()
        doc_id = make_doc_id(self.tenant, item.rel_path)
        try:
            existing = kb.ledger.get_document(doc_id)
            if (
                existing is not None
                and existing.version > 0
                and existing.content_hash == content_hash
                and kb.ledger.fingerprint(doc_id) == pipeline_fingerprint(kb.settings)
            ):
                return None  # unchanged: nothing to prepare
        except Exception:  # let _ingest_file find out (and report) inline
            return None
        prepared = _Prepared(content_hash=content_hash)
        try:
            prepared.parsed, prepared.document = kb._parse(
                data,
                item.path.name,
                doc_id=doc_id,
                tenant=self.tenant,
                source=str(item.path.resolve()),
            )
        except Exception as exc:  # re-raised by _ingest_file at the point it would occur inline
            prepared.error = exc
        return prepared


@dataclass
class _Staged:
    """A file read, chunked and embedded as a new version, not yet written to either store."""

    result: FileResult
    t0: float
    tenant: str
    version: int
    embedded: list[EmbeddedChunk]
    parsed: ParsedFile
    content_hash: str
    fingerprint: str
    source: str
    size: int
    had_version: bool  # the document had an active version before: old vectors to drop


# An ``ingest`` of many files writes the vectors of consecutive files with one Chroma upsert once
# they add up to this many (then each file's ledger commit, in order). Chroma holds the GIL for
# the whole of an upsert, and its cost is mostly per call (50 files of 33 vectors: 1.9 s of CPU;
# the same 1,637 vectors in one call: 0.9 s), time the model threads of the next files wait.
WRITE_GROUP_VECTORS = 512


# the prefetcher of the ``ingest`` running in this thread (``ingest_one`` never uses one)
_PREFETCH: ContextVar[_Prefetcher | None] = ContextVar("rag_ingest_prefetch", default=None)


class KnowledgeBase:
    """A knowledge base in one directory: ledger (SQLite) + vectors (Chroma).

    >>> kb = KnowledgeBase.open(".rag")                       # doctest: +SKIP
    >>> kb.ingest(["data/knowledge"], tenant="default")       # doctest: +SKIP
    >>> kb.retrieve("密码多久修改一次", top_k=5)                # doctest: +SKIP
    """

    def __init__(
        self,
        settings: Settings,
        embed_model: BaseEmbedding | None = None,
        *,
        read_only: bool = False,
    ) -> None:
        """``read_only``: this process won't write (no writer lock; see store/writer_lock.py)."""
        self.settings = settings
        self.path = settings.kb_dir
        self.path.mkdir(parents=True, exist_ok=True)
        # a local Chroma has one writing process: raises KnowledgeBaseBusy while another holds it
        local = settings.chroma_url is None
        self._writer = WriterLock(self.path) if local and not read_only else None
        try:
            self.ledger = Ledger(
                settings.ledger_url(), keyword_cache_postings=settings.keyword_cache_postings
            )
        except BaseException:
            self._release_writer()
            raise
        try:
            self._check_embedding_matches()
            self.vectors = VectorStore(
                path=self.path / "chroma", url=settings.chroma_url, collection=settings.collection
            )
        except BaseException:
            self.ledger.close()
            self._release_writer()
            raise
        self._embed_model: BaseEmbedding | None = embed_model
        self._pipeline: IngestionPipeline | None = None
        self.stats = TermStatistics(self.ledger)
        self._engine: AnswerEngine | None = None
        self._engine_lock = threading.Lock()

    @classmethod
    def open(
        cls,
        path: str | Path | None = None,
        settings: Settings | None = None,
        *,
        embed_model: BaseEmbedding | None = None,
        read_only: bool = False,
        **overrides: Any,
    ) -> KnowledgeBase:
        """Create or open the knowledge base in ``path`` (default: ``RAG_KB_DIR`` or ``./.rag``).

        ``overrides`` are Settings fields (e.g. ``chunker="sentence"``); ``embed_model`` lets
        several knowledge bases share one loaded model; ``read_only``: only read (ask,
        retrieve, list), so no writer lock is taken (see store/writer_lock.py).
        """
        base = settings or Settings()
        updates = dict(overrides)
        if path is not None:
            updates["kb_dir"] = Path(path)
        if updates:
            base = Settings(**{**base.model_dump(), **updates})
        return cls(base, embed_model=embed_model, read_only=read_only)

    def close(self) -> None:
        self.ledger.close()
        self._release_writer()

    def _release_writer(self) -> None:
        if self._writer is not None:
            self._writer.release()
            self._writer = None

    def __enter__(self) -> KnowledgeBase:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ----- models ------------------------------------------------------------------------
    def _check_embedding_matches(self) -> None:
        built_with = self.ledger.get_meta("embedding")
        if built_with is None:
            self.ledger.set_meta("embedding", self.settings.embedding)
        elif built_with != self.settings.embedding:
            raise KnowledgeBaseError(
                f"knowledge base {self.path} was built with embedding '{built_with}' but "
                f"'{self.settings.embedding}' is configured: set RAG_EMBEDDING={built_with} "
                "or ingest into a new --kb directory"
            )

    @property
    def embed_model(self) -> BaseEmbedding:
        if self._embed_model is None:
            self._embed_model = load_embedding(
                self.settings.embedding,
                batch_size=self.settings.embed_batch_size,
                threads=self.settings.embed_threads,
            )
        return self._embed_model

    @property
    def pipeline(self) -> IngestionPipeline:
        if self._pipeline is None:
            self._pipeline = build_ingestion_pipeline(self.settings, self.embed_model)
        return self._pipeline

    # ----- ingestion ---------------------------------------------------------------------
    def ingest(
        self,
        paths: Sequence[str | Path] | str | Path,
        tenant: str = "default",
        progress: ProgressCallback | None = None,
    ) -> IngestReport:
        """Ingest files and folders (recursively). Bad files fail alone; the rest still ingest."""
        started = time.perf_counter()
        if isinstance(paths, str | Path):
            paths = [paths]
        files, problems = collect_files(paths)
        report = IngestReport(tenant=tenant, files=list(problems))
        total = len(files) + len(problems)
        for done, result in enumerate(problems, start=1):
            if progress:
                progress(result, done, total)
        if files:
            _ = self.pipeline  # load the model once, before the first file (fails fast)
        self._ingest_files(files, tenant, report, progress, done=len(problems), total=total)
        report.seconds = round(time.perf_counter() - started, 3)
        return report

    def _ingest_files(
        self,
        files: Sequence[_InputFile],
        tenant: str,
        report: IngestReport,
        progress: ProgressCallback | None,
        *,
        done: int,
        total: int,
    ) -> None:
        prefetch = _Prefetcher(self, files, tenant) if len(files) > 1 else None
        token = _PREFETCH.set(prefetch)
        finished = False
        # results in the files' order; a file's result is final once its write group is written
        results: list[FileResult | None] = [None] * len(files)
        group: list[tuple[int, _Staged]] = []

        def record(index: int, result: FileResult) -> None:
            nonlocal done
            results[index] = result
            done += 1
            if progress:
                progress(result, done, total)

        def flush() -> None:
            written = self._write_staged([staged for _, staged in group])
            for (index, _), result in zip(group, written, strict=True):
                record(index, result)
            group.clear()

        try:
            for index, item in enumerate(files):
                if prefetch is not None:
                    prefetch.advance(index)
                staged = self._stage_file(item, tenant)
                if isinstance(staged, FileResult):
                    record(index, staged)
                    continue
                group.append((index, staged))
                if sum(len(s.embedded) for _, s in group) >= WRITE_GROUP_VECTORS:
                    flush()
            if group:
                flush()
            if prefetch is not None:
                prefetch.close(wait=True)
            finished = True
        finally:
            _PREFETCH.reset(token)
            if prefetch is not None and not finished:
                prefetch.close(wait=False)  # don't wait for files nobody will write
        report.files.extend(r for r in results if r is not None)

    def ingest_one(
        self,
        path: str | Path,
        *,
        tenant: str = "default",
        rel_path: str | None = None,
        doc_id: str | None = None,
        force: bool = False,
    ) -> FileResult:
        """Ingest one file as document ``doc_id`` (default: from tenant + ``rel_path``).

        ``force`` re-parses even when the content and pipeline are unchanged (a new version).
        """
        item = _InputFile(Path(path), rel_path or Path(path).name, explicit=True)
        _ = self.pipeline
        return self._ingest_file(item, tenant, doc_id=doc_id, force=force)

    def _ingest_file(
        self, item: _InputFile, tenant: str, *, doc_id: str | None = None, force: bool = False
    ) -> FileResult:
        staged = self._stage_file(item, tenant, doc_id=doc_id, force=force)
        if isinstance(staged, FileResult):
            return staged
        return self._write_staged([staged])[0]

    def _stage_file(
        self, item: _InputFile, tenant: str, *, doc_id: str | None = None, force: bool = False
    ) -> FileResult | _Staged:
        """Read, parse, chunk and embed a file as the document's next version: a final result
        (unsupported, unchanged, failed) or the staged version for ``_write_staged``."""
        t0 = time.perf_counter()
        doc_id = doc_id or make_doc_id(tenant, item.rel_path)
        source = str(item.path.resolve())
        result = FileResult(path=str(item.path), doc_id=doc_id, status="FAILED")
        ext = item.path.suffix.lower()
        if ext not in SUPPORTED_EXTENSIONS:
            supported = ", ".join(sorted(SUPPORTED_EXTENSIONS))
            result.reason = (
                f"unsupported file type '{ext or item.path.name}' (supported: {supported})"
            )
            if not item.explicit:
                result.status, result.doc_id = "SKIPPED", None
                return result
        try:
            size = item.path.stat().st_size
        except OSError as exc:
            result.reason = f"cannot read file: {exc.strerror or exc}"
            return result
        doc_type = SUPPORTED_EXTENSIONS.get(ext, "unknown")
        version = self.ledger.begin_document(
            doc_id=doc_id,
            tenant=tenant,
            source=source,
            rel_path=item.rel_path,
            doc_type=doc_type,
            size=size,
        )
        try:
            if result.reason:  # unsupported type, named explicitly
                raise ReaderError(result.reason)
            if size > self.settings.max_file_bytes:
                raise ReaderError(
                    f"file too large: {size / 1048576:.1f} MB > limit "
                    f"{self.settings.max_file_mb:g} MB (set RAG_MAX_FILE_MB)"
                )
            data = item.path.read_bytes()
            content_hash = hashlib.sha256(data).hexdigest()
            fingerprint = pipeline_fingerprint(self.settings)
            existing = self.ledger.get_document(doc_id)
            if (
                not force
                and existing is not None
                and existing.version > 0
                and existing.content_hash == content_hash
                and self.ledger.fingerprint(doc_id) == fingerprint
            ):
                self.ledger.mark_unchanged(doc_id)
                result.status, result.version = "UNCHANGED", existing.version
                result.chunks = existing.chunk_count
                return result
            # read, parsed, chunked and embedded ahead by ``ingest``'s prefetcher, if it was
            prefetch = _PREFETCH.get()
            prepared = (
                prefetch.take(item, doc_id, content_hash)
                if prefetch is not None and prefetch.tenant == tenant and not force
                else None
            )
            if prepared is not None and prepared.error is not None:
                raise prepared.error
            if prepared is not None and prepared.parsed and prepared.document:
                parsed, ready = prepared.parsed, prepared.document
            else:
                parsed, ready = self._parse(
                    data, item.path.name, doc_id=doc_id, tenant=tenant, source=source
                )
            embedded = number_chunks(ready, version=version)
            if not embedded:
                raise ReaderError("no indexable text after chunking")
            fault_point("ingest.after_parse")
        except ReaderError as exc:
            result.reason = str(exc)
            self.ledger.mark_failed(doc_id, result.reason)
            return self._finish(result, t0)
        except Exception as exc:  # a bug or an infrastructure failure: keep the batch going
            return self._failed(result, t0, exc)
        return _Staged(
            result=result,
            t0=t0,
            tenant=tenant,
            version=version,
            embedded=embedded,
            parsed=parsed,
            content_hash=content_hash,
            fingerprint=fingerprint,
            source=source,
            size=size,
            had_version=existing is not None and existing.version > 0,
        )

    def _parse(
        self, data: bytes, filename: str, *, doc_id: str, tenant: str, source: str
    ) -> tuple[ParsedFile, PreparedDocument]:
        """Parse and chunk ``data`` (in a bounded child process unless ``parse_in_process``;
        see pipelines/isolation.py), then embed and keyword-tokenize its chunks here."""
        s = self.settings
        job = ParseJob.of(s, data, filename, doc_id=doc_id, tenant=tenant, source=source)
        if s.parse_in_process:
            chunked = parse_and_chunk(job)
        else:
            chunked = parse_bounded(job, timeout=s.parse_timeout, max_mb=s.parse_max_mb)
        ready = embed_chunks(self.pipeline, chunked.nodes, doc_id=doc_id, tenant=tenant)
        return chunked.parsed, ready

    def _write_staged(self, group: Sequence[_Staged]) -> list[FileResult]:
        """Write staged versions: all their vectors (one upsert), then each file's ledger
        commit (the flip to the new version) and the clean-up of its old version, in order.

        Vectors are written first: a crash in between leaves vectors no active chunk names
        (never served; ``doctor`` removes them), never an active chunk without its vector.
        """
        results: list[FileResult] = []
        try:
            every = [c for staged in group for c in staged.embedded]
            self.vectors.upsert(
                [c.row["chunk_id"] for c in every],
                [c.embedding for c in every],
                [c.metadata for c in every],
            )
            fault_point("ingest.after_vectors")
        except Exception as exc:  # no version of the group was flipped: each file failed
            return [self._failed(s.result, s.t0, exc) for s in group]
        for staged in group:
            result, doc_id, version = staged.result, staged.result.doc_id or "", staged.version
            try:
                self.ledger.commit_version(
                    doc_id=doc_id,
                    tenant=staged.tenant,
                    version=version,
                    rows=[c.row for c in staged.embedded],
                    content_hash=staged.content_hash,
                    fingerprint=staged.fingerprint,
                    doc_type=staged.parsed.doc_type,
                    title=staged.parsed.title,
                    source=staged.source,
                    size=staged.size,
                )
            except DocumentGone:
                # deleted while we were building it: remove what we wrote, report, don't resurrect
                self.vectors.delete_document(doc_id)
                result.status, result.reason = "CANCELLED", "document was deleted during ingestion"
                results.append(self._finish(result, staged.t0))
                continue
            except Exception as exc:
                results.append(self._failed(result, staged.t0, exc))
                continue
            result.status, result.version = "SUCCESS", version
            result.chunks = len(staged.embedded)
            fault_point("ingest.after_commit")
            self._drop_inactive(doc_id, version, vectors=staged.had_version)
            results.append(self._finish(result, staged.t0))
        return results

    def _failed(self, result: FileResult, t0: float, exc: Exception) -> FileResult:
        """A bug or an infrastructure failure: the file fails, the batch goes on."""
        logger.exception("ingesting %s failed", result.path, exc_info=exc)
        result.status, result.reason = "FAILED", f"{type(exc).__name__}: {exc}"
        if result.doc_id:
            # the ledger's error is shown to API users: no details that may hold paths or secrets
            self.ledger.mark_failed(result.doc_id, internal_error(exc))
        return self._finish(result, t0)

    @staticmethod
    def _finish(result: FileResult, t0: float) -> FileResult:
        result.seconds = round(time.perf_counter() - t0, 3)
        return result

    def _drop_inactive(self, doc_id: str, version: int, *, vectors: bool = True) -> None:
        """After the flip: remove every other version from both stores (best effort).

        ``vectors=False``: the document had no active version before this one, so no committed
        version's vectors can be left (an attempt that failed before its commit reused this
        version's number and ids); the Chroma delete, a metadata scan, is skipped.
        """
        try:
            self.ledger.delete_inactive_chunks(doc_id)
            if vectors:
                self.vectors.delete_document(doc_id, keep_version=version)
        except Exception:  # retrieval already ignores inactive chunks; `doctor` cleans up
            logger.exception("cleaning old versions of %s failed", doc_id)

    # ----- reading -----------------------------------------------------------------------
    def documents(
        self, tenant: str | None = "default", *, limit: int | None = None, offset: int = 0
    ) -> list[DocumentInfo]:
        """Documents of one tenant (``tenant=None``: all tenants), ordered by path; one page of
        them with ``limit``/``offset``."""
        return self.ledger.list_documents(tenant, limit=limit, offset=offset)

    def document_count(self, tenant: str | None = "default") -> int:
        return self.ledger.count_documents(tenant)

    def document(self, doc_id: str) -> DocumentInfo | None:
        return self.ledger.get_document(doc_id)

    def chunks(self, doc_id: str) -> list[ChunkInfo]:
        """The active chunks of a document, in order."""
        return self.ledger.active_chunks(doc_id)

    def delete(self, doc_id: str) -> bool:
        """Delete a document everywhere. Returns False when there was no such document."""
        existed = self.ledger.delete_document(doc_id)
        fault_point("delete.after_ledger")
        try:
            self.vectors.delete_document(doc_id)
        except Exception:
            logger.exception("deleting vectors of %s failed; run `rag doctor`", doc_id)
        return existed

    def retriever(
        self,
        tenant: str = "default",
        top_k: int = 5,
        doc_ids: Sequence[str] | None = None,
        **overrides: Any,
    ) -> HybridRetriever:
        """A LlamaIndex retriever over this KB, scoped to a tenant (and optionally documents)."""
        s = self.settings
        params: dict[str, Any] = {
            "mode": s.retrieval_mode,
            "fusion": s.fusion,
            "rrf_k": s.rrf_k,
            "dense_weight": s.fusion_dense_weight,
            "keyword_weight": s.keyword_weight,
            "candidates": max(s.candidates, top_k),
            "keyword_posting_budget": s.keyword_posting_budget,
            **feedback_params(s),
        }
        params.update(overrides)
        scope = Scope(tenant=tenant, doc_ids=tuple(doc_ids) if doc_ids is not None else None)
        return HybridRetriever(
            ledger=self.ledger,
            vectors=self.vectors,
            embed_model=self.embed_model,
            scope=scope,
            top_k=top_k,
            stats=self.stats,
            **params,
        )

    def retrieve_nodes(
        self,
        question: str,
        top_k: int = 5,
        tenant: str = "default",
        doc_ids: Sequence[str] | None = None,
        **overrides: Any,
    ) -> list[NodeWithScore]:
        if not question or not question.strip():
            raise ValueError("question is empty")
        if top_k <= 0:
            raise ValueError("top_k must be positive")
        return self.retriever(tenant, top_k, doc_ids, **overrides).retrieve(question.strip())

    def retrieve(
        self,
        question: str,
        top_k: int = 5,
        tenant: str = "default",
        doc_ids: Sequence[str] | None = None,
        **overrides: Any,
    ) -> list[Source]:
        """Hybrid retrieval (dense + BM25, fused) within a tenant; only active chunks."""
        nodes = self.retrieve_nodes(question, top_k, tenant, doc_ids, **overrides)
        return [node_to_source(n) for n in nodes]

    @property
    def engine(self) -> AnswerEngine:
        """The answer engine of this knowledge base (built on first use, then shared)."""
        if self._engine is None:
            with self._engine_lock:
                if self._engine is None:
                    self._engine = build_answer_engine(
                        self.settings,
                        self.ledger,
                        self.embed_model,
                        lambda tenant, top_k, doc_ids: self.retriever(tenant, top_k, doc_ids),
                        self.stats,
                    )
        return self._engine

    def ask(
        self,
        question: str,
        tenant: str = "default",
        top_k: int = 5,
        doc_ids: Sequence[str] | None = None,
    ) -> Answer:
        """Answer with backend citations, or refuse (with the reason and the closest sources)
        when no unit of the evidence answers the question."""
        if not question or not question.strip():
            raise ValueError("question is empty")
        if top_k <= 0:
            raise ValueError("top_k must be positive")
        result = self.engine.answer(question, tenant=tenant, top_k=top_k, doc_ids=doc_ids)
        meta = result.response.metadata or {}
        refused = bool(meta.get("refused"))
        citations = meta.get("citations") or []
        return Answer(
            question=question,
            answer=str(result.response.response or REFUSAL),
            refused=refused,
            reason=meta.get("reason") if refused else None,
            explanation=meta.get("explanation") if refused else None,
            sources=[node_to_source(n) for n in result.response.source_nodes],
            citations=[c for c in citations if isinstance(c, Citation)],
            confidence=result.decision.best,
            mode=str(meta.get("mode", "extractive")),
            timings={k: round(v, 2) for k, v in result.timings.items()},
        )

    # ----- maintenance -------------------------------------------------------------------
    def doctor(
        self,
        repair: bool = True,
        *,
        sample: int = 200,
        rebuild_vectors: bool = False,
        min_recall: float = 0.99,
    ) -> dict[str, float]:
        """Reconcile the vector and keyword indexes with the ledger (the source of truth).

        Removes vectors of chunks that are not active, and ledger/keyword rows of versions that
        are not active (what a crash between the steps of an ingestion or a delete leaves).
        Then measures the self-recall of ``sample`` active chunks (store/vector_health.py);
        ``rebuild_vectors`` (with ``repair``) re-creates the collection when it is below
        ``min_recall`` and measures again.
        """
        result: dict[str, float] = dict(self._reconcile(repair))
        health = self_recall(self.vectors, self.ledger, sample=sample)
        result["self_recall"] = health.recall
        result["self_recall_sampled"] = health.sampled
        result["rebuilt_vectors"] = 0
        if repair and rebuild_vectors and health.recall < min_recall:
            done = rebuild(self.vectors, self.ledger, self.embed_model)
            result["rebuilt_vectors"] = done["vectors"]
            result["reembedded_vectors"] = done["reembedded"]
            result["self_recall"] = self_recall(self.vectors, self.ledger, sample=sample).recall
        return result

    def _reconcile(self, repair: bool) -> dict[str, int]:
        stale_chunks, stale_keywords = self.ledger.purge_inactive(repair=repair)
        active = self.ledger.all_active_chunk_ids()
        indexed = self.vectors.all_ids()
        orphans = sorted(indexed - active)
        missing = sorted(active - indexed)
        if repair and orphans:
            self.vectors.delete_ids(orphans)
        return {
            "active_chunks": len(active),
            "vectors": len(indexed),
            "orphan_vectors": len(orphans),
            "missing_vectors": len(missing),
            "inactive_chunk_rows": stale_chunks,
            "stale_keyword_rows": stale_keywords,
            "repaired": (len(orphans) + stale_chunks + stale_keywords) if repair else 0,
        }
