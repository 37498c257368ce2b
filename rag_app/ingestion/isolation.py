"""Parse and chunk one file in a child process, bounded in wall time, memory and unpacked size.

A hostile file (a paragraph bomb, a zip bomb, a parser bug that allocates without end) then fails
its own job with a reason, and the ingesting process (often the API server) stays up:

* wall time: the parent waits ``parse_timeout`` seconds for the result, then kills the child;
* memory: the child sets ``RLIMIT_AS`` to its own size after start-up plus ``parse_max_mb``; an
  allocation past it is a ``MemoryError`` (or kills the child), reported as such;
* unpacked size: .docx/.xlsx/.pptx are judged from their zip directory before they are opened
  (``rag_app.readers.archive``), in the child as in-process.

Children are forked by a parse server (rag_app/ingestion/parse_zygote.py, started once per
ingesting process and kept; workers start it at start-up, ``prestart``) that has imported the
readers and the chunkers, so a child starts in milliseconds and handles exactly one file (no state survives a hostile file). Not
``multiprocessing``: its forkserver and spawn children re-import the main module (the CLI, the
benchmark script) for every child.
The ingesting process keeps the embedding model: the child returns the parsed file and its
chunks (LlamaIndex nodes, not yet embedded). ``RAG_PARSE_IN_PROCESS=true`` runs the same
function in the calling thread, without the time and memory bounds.
"""

from __future__ import annotations

import atexit
import logging
import os
import pickle
import socket
import subprocess
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from llama_index.core.ingestion import run_transformations
from llama_index.core.schema import BaseNode

from rag_app.config import Settings
from rag_app.readers import ParsedFile, ReaderError, read_bytes

__all__ = ["Chunked", "ParseJob", "parse_and_chunk", "parse_bounded", "prestart"]

logger = logging.getLogger(__name__)

_STARTUP_SECONDS = 120.0  # a parse server's imports (once per process), not a file's time
_REPLY_GRACE_SECONDS = 30.0  # the server kills a late child itself; this is for a stuck server
_IDLE_SERVERS = 2


@dataclass(frozen=True)
class ParseJob:
    """One file to parse and chunk, with the settings that shape the result."""

    data: bytes
    filename: str
    doc_id: str
    tenant: str
    source: str
    max_file_bytes: int
    unpacked_max_bytes: int
    ocr: bool
    chunker: str
    chunk_size: int
    chunk_overlap: int
    section_level: int

    @classmethod
    def of(
        cls,
        settings: Settings,
        data: bytes,
        filename: str,
        *,
        doc_id: str,
        tenant: str,
        source: str,
    ) -> ParseJob:
        return cls(
            data=data,
            filename=filename,
            doc_id=doc_id,
            tenant=tenant,
            source=source,
            max_file_bytes=settings.max_file_bytes,
            unpacked_max_bytes=settings.unpacked_max_bytes,
            ocr=settings.pdf_ocr,
            chunker=settings.chunker,
            chunk_size=settings.chunk_size,
            chunk_overlap=settings.chunk_overlap,
            section_level=settings.section_level,
        )


@dataclass
class Chunked:
    """A file parsed and chunked (nodes carry the document's metadata, no embeddings yet)."""

    parsed: ParsedFile
    nodes: Sequence[BaseNode]


def parse_and_chunk(job: ParseJob) -> Chunked:
    """Parse and chunk in this process (what the child runs)."""
    from rag_app.chunking import build_node_parser
    from rag_app.ingestion.pipeline import to_document

    parsed = read_bytes(
        job.data,
        job.filename,
        max_bytes=job.max_file_bytes,
        ocr=job.ocr,
        max_unpacked_bytes=job.unpacked_max_bytes,
    )
    document = to_document(parsed, doc_id=job.doc_id, tenant=job.tenant, source=job.source)
    parser = build_node_parser(
        job.chunker,  # type: ignore[arg-type]
        chunk_size=job.chunk_size,
        chunk_overlap=job.chunk_overlap,
        section_level=job.section_level,
    )
    return Chunked(parsed=parsed, nodes=run_transformations([document], [parser]))


class _Server:
    """One parse server process and the connection to it (used by one thread at a time)."""

    def __init__(self) -> None:
        ours, theirs = socket.socketpair()
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        env.setdefault("OPENBLAS_NUM_THREADS", "1")  # a single-threaded server forks safely
        env.setdefault("OMP_NUM_THREADS", "1")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "rag_app.ingestion.parse_zygote", str(theirs.fileno())],
            pass_fds=(theirs.fileno(),),
            env=env,
            stdin=subprocess.DEVNULL,
        )
        theirs.close()
        self.conn = Connection(ours.detach())
        if not self.conn.poll(_STARTUP_SECONDS):
            self.close()
            raise RuntimeError(f"the parse server did not start in {_STARTUP_SECONDS:g} s")
        try:
            self.conn.recv()
        except EOFError:
            self.close()
            raise RuntimeError(
                "the parse server exited at start-up; see its error output"
            ) from None

    def parse(self, job: ParseJob, timeout: float, max_mb: float) -> tuple[str, Any]:
        self.conn.send((job, timeout, max_mb))
        if not self.conn.poll(timeout + _REPLY_GRACE_SECONDS):
            raise TimeoutError("the parse server did not answer")
        reply: tuple[str, Any] = pickle.loads(self.conn.recv_bytes())
        return reply

    def close(self) -> None:
        self.conn.close()  # the server exits on end of file
        try:
            self.process.wait(5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class _Servers:
    """Parse servers of this process: one per concurrent parse, a few kept idle."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.idle: list[_Server] = []

    def take(self) -> _Server:
        with self.lock:
            if self.idle:
                return self.idle.pop()
        return _Server()

    def give(self, server: _Server) -> None:
        with self.lock:
            if len(self.idle) < _IDLE_SERVERS:
                self.idle.append(server)
                return
        server.close()

    def close(self) -> None:
        with self.lock:
            idle, self.idle = self.idle, []
        for server in idle:
            server.close()


_SERVERS = _Servers()
atexit.register(_SERVERS.close)


def prestart() -> None:
    """Start this process's parse server now (a worker at start-up), not on its first file."""
    with _SERVERS.lock:
        if _SERVERS.idle:
            return
    _SERVERS.give(_Server())


def parse_bounded(job: ParseJob, *, timeout: float, max_mb: float) -> Chunked:
    """Parse and chunk ``job`` in a child process: the result, or :class:`ReaderError` with the
    reason the file failed (time, memory, unpacked size, content), or ``RuntimeError`` for a
    parser bug or a parse server that failed."""
    server = _SERVERS.take()
    try:
        kind, payload = server.parse(job, timeout, max_mb)
    except (OSError, EOFError, TimeoutError) as exc:
        server.close()
        raise RuntimeError(f"parse server failed: {type(exc).__name__}: {exc}") from exc
    except BaseException:
        server.close()
        raise
    _SERVERS.give(server)
    if kind == "ok":
        result: Chunked = payload
        return result
    if kind == "reader":
        raise ReaderError(payload)
    if kind == "timeout":
        raise ReaderError(f"parse exceeded {timeout:g} s (set RAG_PARSE_TIMEOUT)")
    if kind == "memory":
        raise ReaderError(f"parse ran out of memory ({max_mb:g} MB limit, RAG_PARSE_MAX_MB)")
    if kind == "died":
        logger.warning("parse process of %s died (%s)", job.filename, payload)
        raise ReaderError(
            f"parse process died ({payload}); the file may need more than the {max_mb:g} MB "
            "memory limit (RAG_PARSE_MAX_MB)"
        )
    raise RuntimeError(payload)
