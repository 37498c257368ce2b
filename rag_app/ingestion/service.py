"""The ingestion orchestrator: stage each file as its document's next version, write the vectors
of consecutive files in one Chroma upsert, then flip each file's version in the ledger, in order.

The next file is prepared in a helper thread meanwhile (prefetch.py); parsing and chunking run in
a bounded child process (isolation.py); the embedding is the knowledge base's, loaded on first use.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.ingestion import IngestionPipeline

from rag_app.config import Settings
from rag_app.faults import fault_point
from rag_app.ingestion.files import (
    InputFile,
    collect_files,
    internal_error,
    make_doc_id,
    platform_error,
)
from rag_app.ingestion.isolation import Chunked, ParseJob, parse_and_chunk, parse_bounded
from rag_app.ingestion.pipeline import (
    EmbeddedChunk,
    IngestCancelled,
    PreparedDocument,
    build_ingestion_pipeline,
    embed_chunks,
    number_chunks,
    pipeline_fingerprint,
)
from rag_app.ingestion.prefetch import Prefetcher
from rag_app.readers import SUPPORTED_EXTENSIONS, ParsedFile, ReaderError
from rag_app.store.ledger import DocumentGone, Ledger
from rag_app.store.vectors import VectorStore
from rag_app.types import FileResult, IngestReport

logger = logging.getLogger(__name__)

ProgressCallback = Callable[[FileResult, int, int], None]


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


class IngestionService:
    """Ingests files into one knowledge base's ledger and vector store (see the module docstring).

    ``embed_model`` is called when the first file needs it (the knowledge base loads its model
    lazily and shares it with the query side).
    """

    def __init__(
        self,
        settings: Settings,
        ledger: Ledger,
        vectors: VectorStore,
        embed_model: Callable[[], BaseEmbedding],
    ) -> None:
        self.settings = settings
        self.ledger = ledger
        self.vectors = vectors
        self._embed_model = embed_model
        self._pipeline: IngestionPipeline | None = None

    @property
    def pipeline(self) -> IngestionPipeline:
        if self._pipeline is None:
            self._pipeline = build_ingestion_pipeline(self.settings, self._embed_model())
        return self._pipeline

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
        files: Sequence[InputFile],
        tenant: str,
        report: IngestReport,
        progress: ProgressCallback | None,
        *,
        done: int,
        total: int,
    ) -> None:
        prefetch = Prefetcher(self, files, tenant) if len(files) > 1 else None
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
                staged = self._stage_file(item, tenant, prefetch=prefetch)
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
        item = InputFile(Path(path), rel_path or Path(path).name, explicit=True)
        _ = self.pipeline
        return self._ingest_file(item, tenant, doc_id=doc_id, force=force)

    def _ingest_file(
        self, item: InputFile, tenant: str, *, doc_id: str | None = None, force: bool = False
    ) -> FileResult:
        staged = self._stage_file(item, tenant, doc_id=doc_id, force=force)
        if isinstance(staged, FileResult):
            return staged
        return self._write_staged([staged])[0]

    def _stage_file(
        self,
        item: InputFile,
        tenant: str,
        *,
        doc_id: str | None = None,
        force: bool = False,
        prefetch: Prefetcher | None = None,
    ) -> FileResult | _Staged:
        """Read, parse, chunk and embed a file as the document's next version: a final result
        (unsupported, unchanged, failed) or the staged version for ``_write_staged``.

        ``prefetch``: ``ingest``'s prefetcher, whose prepared file is used when it still matches
        (``ingest_one`` passes none)."""
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
                parsed, ready = self.parse(
                    data, item.path.name, doc_id=doc_id, tenant=tenant, source=source
                )
            embedded = number_chunks(
                ready, version=version, table_rows=self.settings.table_row_entries
            )
            if not embedded:
                raise ReaderError("no indexable text after chunking")
            fault_point("ingest.after_parse")
        except ReaderError as exc:
            result.reason = str(exc)
            self.ledger.mark_failed(doc_id, result.reason)
            return self._finish(result, t0)
        except IngestCancelled as exc:  # a worker's job stopped: deleted, or a newer version
            result.status, result.reason = "CANCELLED", str(exc)
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

    def parse(
        self, data: bytes, filename: str, *, doc_id: str, tenant: str, source: str
    ) -> tuple[ParsedFile, PreparedDocument]:
        """Parse and chunk ``data`` (:meth:`chunk`), then embed and keyword-tokenize its
        chunks here (:meth:`embed`)."""
        chunked = self.chunk(data, filename, doc_id=doc_id, tenant=tenant, source=source)
        return self.embed(chunked, doc_id=doc_id, tenant=tenant)

    def chunk(
        self, data: bytes, filename: str, *, doc_id: str, tenant: str, source: str
    ) -> Chunked:
        """Parse and chunk ``data`` in a bounded child process (unless ``parse_in_process``;
        see isolation.py)."""
        s = self.settings
        job = ParseJob.of(s, data, filename, doc_id=doc_id, tenant=tenant, source=source)
        if s.parse_in_process:
            return parse_and_chunk(job)
        return parse_bounded(job, timeout=s.parse_timeout, max_mb=s.parse_max_mb)

    def embed(
        self, chunked: Chunked, *, doc_id: str, tenant: str
    ) -> tuple[ParsedFile, PreparedDocument]:
        """Embed and keyword-tokenize a chunked file's chunks (the model runs here)."""
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
        result.platform = platform_error(exc)
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
