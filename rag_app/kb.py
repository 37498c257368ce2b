"""The KnowledgeBase facade: open, ingest, retrieve, documents, chunks, delete."""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.ingestion import IngestionPipeline

from pipelines.ingest import (
    build_ingestion_pipeline,
    embed_document,
    pipeline_fingerprint,
    to_document,
)
from rag_app.config import Settings
from rag_app.embeddings import load_embedding
from rag_app.readers import SUPPORTED_EXTENSIONS, ReaderError, read_bytes
from rag_app.store.ledger import Ledger
from rag_app.store.vectors import VectorStore
from rag_app.types import ChunkInfo, DocumentInfo, FileResult, IngestReport, Source

logger = logging.getLogger(__name__)

ProgressCallback = Callable[[FileResult, int, int], None]


class KnowledgeBaseError(RuntimeError):
    """A knowledge-base level problem the user must fix (the message says how)."""


@dataclass(frozen=True)
class _InputFile:
    path: Path
    rel_path: str
    explicit: bool  # named on the command line (not found by walking a folder)


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


class KnowledgeBase:
    """A knowledge base in one directory: ledger (SQLite) + vectors (Chroma).

    >>> kb = KnowledgeBase.open(".rag")                       # doctest: +SKIP
    >>> kb.ingest(["data/knowledge"], tenant="default")       # doctest: +SKIP
    >>> kb.retrieve("密码多久修改一次", top_k=5)                # doctest: +SKIP
    """

    def __init__(self, settings: Settings, embed_model: BaseEmbedding | None = None) -> None:
        self.settings = settings
        self.path = settings.kb_dir
        self.path.mkdir(parents=True, exist_ok=True)
        self.ledger = Ledger(settings.ledger_url())
        self._check_embedding_matches()
        self.vectors = VectorStore(
            path=self.path / "chroma", url=settings.chroma_url, collection=settings.collection
        )
        self._embed_model: BaseEmbedding | None = embed_model
        self._pipeline: IngestionPipeline | None = None

    @classmethod
    def open(
        cls,
        path: str | Path | None = None,
        settings: Settings | None = None,
        *,
        embed_model: BaseEmbedding | None = None,
        **overrides: Any,
    ) -> KnowledgeBase:
        """Create or open the knowledge base in ``path`` (default: ``RAG_KB_DIR`` or ``./.rag``).

        ``overrides`` are Settings fields (e.g. ``chunker="sentence"``); ``embed_model`` lets
        several knowledge bases share one loaded model.
        """
        base = settings or Settings()
        updates = dict(overrides)
        if path is not None:
            updates["kb_dir"] = Path(path)
        if updates:
            base = Settings(**{**base.model_dump(), **updates})
        return cls(base, embed_model=embed_model)

    def close(self) -> None:
        self.ledger.close()

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
        for done, item in enumerate(files, start=len(problems) + 1):
            result = self._ingest_file(item, tenant)
            report.files.append(result)
            if progress:
                progress(result, done, total)
        report.seconds = round(time.perf_counter() - started, 3)
        return report

    def _ingest_file(self, item: _InputFile, tenant: str) -> FileResult:
        t0 = time.perf_counter()
        doc_id = make_doc_id(tenant, item.rel_path)
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
                existing is not None
                and existing.version > 0
                and existing.content_hash == content_hash
                and self.ledger.fingerprint(doc_id) == fingerprint
            ):
                self.ledger.mark_unchanged(doc_id)
                result.status, result.version = "UNCHANGED", existing.version
                result.chunks = existing.chunk_count
                return result
            parsed = read_bytes(data, item.path.name, max_bytes=self.settings.max_file_bytes)
            document = to_document(parsed, doc_id=doc_id, tenant=tenant, source=source)
            embedded = embed_document(self.pipeline, document, version=version)
            if not embedded:
                raise ReaderError("no indexable text after chunking")
            self.vectors.upsert(
                [c.row["chunk_id"] for c in embedded],
                [c.embedding for c in embedded],
                [c.metadata for c in embedded],
            )
            self.ledger.commit_version(
                doc_id=doc_id,
                tenant=tenant,
                version=version,
                rows=[c.row for c in embedded],
                content_hash=content_hash,
                fingerprint=fingerprint,
                doc_type=parsed.doc_type,
                title=parsed.title,
                source=source,
                size=size,
            )
        except ReaderError as exc:
            result.reason = str(exc)
            self.ledger.mark_failed(doc_id, result.reason)
            return self._finish(result, t0)
        except Exception as exc:  # a bug or an infrastructure failure: keep the batch going
            logger.exception("ingesting %s failed", item.path)
            result.reason = f"{type(exc).__name__}: {exc}"
            self.ledger.mark_failed(doc_id, result.reason)
            return self._finish(result, t0)
        result.status, result.version, result.chunks = "SUCCESS", version, len(embedded)
        self._drop_inactive(doc_id, version)
        return self._finish(result, t0)

    @staticmethod
    def _finish(result: FileResult, t0: float) -> FileResult:
        result.seconds = round(time.perf_counter() - t0, 3)
        return result

    def _drop_inactive(self, doc_id: str, version: int) -> None:
        """After the flip: remove every other version from both stores (best effort)."""
        try:
            self.ledger.delete_inactive_chunks(doc_id)
            self.vectors.delete_document(doc_id, keep_version=version)
        except Exception:  # retrieval already ignores inactive chunks; `doctor` cleans up
            logger.exception("cleaning old versions of %s failed", doc_id)

    # ----- reading -----------------------------------------------------------------------
    def documents(self, tenant: str | None = "default") -> list[DocumentInfo]:
        """Documents of one tenant (``tenant=None``: all tenants)."""
        return self.ledger.list_documents(tenant)

    def document(self, doc_id: str) -> DocumentInfo | None:
        return self.ledger.get_document(doc_id)

    def chunks(self, doc_id: str) -> list[ChunkInfo]:
        """The active chunks of a document, in order."""
        return self.ledger.active_chunks(doc_id)

    def delete(self, doc_id: str) -> bool:
        """Delete a document everywhere. Returns False when there was no such document."""
        existed = self.ledger.delete_document(doc_id)
        try:
            self.vectors.delete_document(doc_id)
        except Exception:
            logger.exception("deleting vectors of %s failed; run `rag doctor`", doc_id)
        return existed

    def retrieve(self, question: str, top_k: int = 5, tenant: str = "default") -> list[Source]:
        """Dense retrieval within one tenant; only active chunks are returned."""
        if not question or not question.strip():
            raise ValueError("question is empty")
        if top_k <= 0:
            raise ValueError("top_k must be positive")
        query = self.embed_model.get_query_embedding(question.strip())
        n = top_k * self.settings.retrieve_candidates
        while True:
            hits = self.vectors.query(query, n, where={"tenant": tenant})
            active = self.ledger.active_chunks_by_id([h.chunk_id for h in hits], tenant=tenant)
            kept = [h for h in hits if h.chunk_id in active]
            if len(kept) >= top_k or len(hits) < n or n >= 4096:
                break
            n *= 4
        kept = kept[:top_k]
        sources = self.ledger.document_sources(active[h.chunk_id].doc_id for h in kept)
        out: list[Source] = []
        for hit in kept:
            chunk = active[hit.chunk_id]
            path, owner = sources.get(chunk.doc_id, ("", tenant))
            out.append(
                Source(
                    text=chunk.text,
                    source=path,
                    doc_id=chunk.doc_id,
                    chunk_id=chunk.chunk_id,
                    chunk_index=chunk.chunk_index,
                    version=chunk.version,
                    score=round(hit.score, 6),
                    title_path=chunk.title_path,
                    start_char=chunk.start_char,
                    end_char=chunk.end_char,
                    block_types=chunk.block_types,
                    tenant=owner,
                )
            )
        return out

    # ----- maintenance -------------------------------------------------------------------
    def doctor(self, repair: bool = True) -> dict[str, int]:
        """Reconcile the vector index with the ledger (the source of truth)."""
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
            "repaired": len(orphans) if repair else 0,
        }
