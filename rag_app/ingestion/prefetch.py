"""The next files of an ``ingest``, read, parsed and chunked, then embedded, in helper threads while
the current one is written (see :class:`Prefetcher`)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Protocol

from rag_app.config import Settings
from rag_app.ingestion.files import InputFile, make_doc_id
from rag_app.ingestion.isolation import Chunked
from rag_app.ingestion.pipeline import PreparedDocument, pipeline_fingerprint
from rag_app.readers import SUPPORTED_EXTENSIONS, ParsedFile
from rag_app.store.ledger import Ledger


class Preparer(Protocol):
    """What the prefetcher needs of the ingestion service: its settings and ledger (to skip
    unchanged files) and its two preparation steps."""

    settings: Settings
    ledger: Ledger

    def chunk(
        self, data: bytes, filename: str, *, doc_id: str, tenant: str, source: str
    ) -> Chunked: ...

    def embed(
        self, chunked: Chunked, *, doc_id: str, tenant: str
    ) -> tuple[ParsedFile, PreparedDocument]: ...


@dataclass
class _Chunked:
    """A file read, parsed and chunked ahead (or the error doing so), not yet embedded."""

    content_hash: str
    doc_id: str
    chunked: Chunked | None = None
    error: Exception | None = None


@dataclass
class Prepared:
    """A file read, parsed, chunked and embedded ahead of its turn (or the error doing so)."""

    content_hash: str
    parsed: ParsedFile | None = None
    document: PreparedDocument | None = None
    error: Exception | None = None


class Prefetcher:
    """Prepares the next files of an ``ingest`` in two helper threads.

    While the current file's chunks are written (Chroma upsert, ledger commit, old versions
    dropped), the next one is embedded (jieba tokenizing its keywords alongside, see
    ``prepare_document``), and the one after it is read, parsed and chunked (in the bounded
    parse child: a wait of tens of milliseconds per file, which the model would otherwise spend
    idle), so the model keeps working. The model is the configured one and embeds one batch at
    a time, as ``ingest_one`` does: the vectors are the same whichever way a file is ingested.
    The writes themselves, and everything that touches the ledger's state of a document, stay in
    ``_ingest_file``, file after file, in their order. A prepared result is used only when the
    file's content hash still matches; files that would be unchanged, skipped or rejected are not
    prepared. At most three files are held prepared (the one being staged and the next two),
    besides the write group (``WRITE_GROUP_VECTORS``), so memory stays bounded.
    """

    EMBED_AHEAD = 2  # the file being staged and the next
    CHUNK_AHEAD = 3  # and the one after that, parsed while the next is embedded

    def __init__(self, service: Preparer, files: Sequence[InputFile], tenant: str) -> None:
        self.service, self.files, self.tenant = service, files, tenant
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ingest-prep")
        self.chunk_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ingest-parse")
        self.futures: dict[InputFile, Future[Prepared | None]] = {}
        self.chunking: dict[InputFile, Future[_Chunked | None]] = {}
        self.submitted = 0
        self.chunk_submitted = 0

    def advance(self, index: int) -> None:
        """File ``index`` is next: make sure it and the one after it are (being) prepared, and
        the one after that (being) chunked."""
        while self.chunk_submitted < min(index + self.CHUNK_AHEAD, len(self.files)):
            item = self.files[self.chunk_submitted]
            self.chunking[item] = self.chunk_pool.submit(self._chunk, item)
            self.chunk_submitted += 1
        while self.submitted < min(index + self.EMBED_AHEAD, len(self.files)):
            item = self.files[self.submitted]
            self.futures[item] = self.pool.submit(self._prepare, item)
            self.submitted += 1

    def take(self, item: InputFile, doc_id: str, content_hash: str) -> Prepared | None:
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
        self.chunk_pool.shutdown(wait=wait, cancel_futures=True)
        self.futures.clear()
        self.chunking.clear()

    def _chunk(self, item: InputFile) -> _Chunked | None:
        service = self.service
        if item.path.suffix.lower() not in SUPPORTED_EXTENSIONS:
            return None
        try:
            data = item.path.read_bytes()
        except OSError:
            return None
        if len(data) > service.settings.max_file_bytes:
            return None
        content_hash = hashlib.sha256(data).hexdigest()
        doc_id = make_doc_id(self.tenant, item.rel_path)
        try:
            existing = service.ledger.get_document(doc_id)
            if (
                existing is not None
                and existing.version > 0
                and existing.content_hash == content_hash
                and service.ledger.fingerprint(doc_id) == pipeline_fingerprint(service.settings)
            ):
                return None  # unchanged: nothing to prepare
        except Exception:  # let _ingest_file find out (and report) inline
            return None
        chunked = _Chunked(content_hash=content_hash, doc_id=doc_id)
        try:
            chunked.chunked = service.chunk(
                data,
                item.path.name,
                doc_id=doc_id,
                tenant=self.tenant,
                source=str(item.path.resolve()),
            )
        except Exception as exc:  # re-raised by _ingest_file at the point it would occur inline
            chunked.error = exc
        return chunked

    def _prepare(self, item: InputFile) -> Prepared | None:
        future = self.chunking.pop(item, None)
        ready = future.result() if future is not None else None
        if ready is None:
            return None
        prepared = Prepared(content_hash=ready.content_hash, error=ready.error)
        if ready.chunked is not None:
            try:
                prepared.parsed, prepared.document = self.service.embed(
                    ready.chunked, doc_id=ready.doc_id, tenant=self.tenant
                )
            except Exception as exc:  # re-raised by _ingest_file, as inline
                prepared.error = exc
        return prepared
