"""One writing process per knowledge base with a local (embedded) Chroma.

An embedded Chroma keeps its index in the memory of the process that opened it; a second process
writing the same directory (``rag ingest`` while ``rag serve`` runs) left the server's index
pointing at rows it could not find: every ask of the tenant was a 500 until a restart (issue 16).

A process opening such a knowledge base for writing holds an exclusive ``flock`` on
``<kb dir>/writer.lock`` until it closes the last of its handles (the kernel drops it when the
process dies, also on ``kill -9``); a second writing process gets :class:`KnowledgeBaseBusy`
naming the holder and the fix. Readers (``KnowledgeBase.open(..., read_only=True)``: ``rag ask``,
``retrieve``, ``docs``, ``chunks``, ``doctor --dry-run``, ``eval`` without ``--docs``) take no
lock. With ``RAG_CHROMA_URL`` (a Chroma server) no lock is taken: the server serialises the
writes of many processes.

Within one process the lock is counted: several ``KnowledgeBase`` objects on one directory share
the process's embedded Chroma (chromadb caches its client per path) and are one writer.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no advisory locks here
    fcntl = None  # type: ignore[assignment]

LOCK_FILE = "writer.lock"
FIX = (
    "use the API of the running server (POST /api/documents, or the web UI) instead, "
    "or set RAG_CHROMA_URL for a Chroma server that several processes can write to"
)


class KnowledgeBaseBusy(RuntimeError):
    """Another process holds the knowledge base's writer lock (the message says what to do)."""


_held: dict[Path, tuple[int, int]] = {}  # lock file -> (descriptor, handles open in this process)
_guard = threading.Lock()


def _describe(fd: int, what: str) -> None:
    record = {"pid": os.getpid(), "process": what, "since": round(time.time())}
    os.ftruncate(fd, 0)
    os.pwrite(fd, json.dumps(record, ensure_ascii=False).encode(), 0)


def _holder(path: Path) -> str:
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        return f"pid {int(record['pid'])}: {record['process']}"
    except (OSError, ValueError, KeyError, TypeError):
        return "unknown process"


def _command() -> str:
    program = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else "python"
    program = "rag" if program in ("cli.py", "__main__.py") else program
    return " ".join([program, *sys.argv[1:]])[:200]


class WriterLock:
    """This process's hold on a knowledge base directory's writer lock (see module doc)."""

    def __init__(self, kb_dir: Path) -> None:
        self.path = (kb_dir / LOCK_FILE).resolve()
        self._released = False
        with _guard:
            held = _held.get(self.path)
            if held is not None:
                _held[self.path] = (held[0], held[1] + 1)
                return
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            if fcntl is not None:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    os.close(fd)
                    raise KnowledgeBaseBusy(
                        f"knowledge base {kb_dir} is open for writing by another process "
                        f"({_holder(self.path)}); its local Chroma allows one writing process: "
                        f"{FIX}"
                    ) from None
            _describe(fd, _command())
            _held[self.path] = (fd, 1)

    def release(self) -> None:
        """Drop this handle; the lock itself goes with the process's last one. Idempotent."""
        with _guard:
            if self._released:
                return
            self._released = True
            fd, count = _held[self.path]
            if count > 1:
                _held[self.path] = (fd, count - 1)
                return
            del _held[self.path]
            os.close(fd)  # closing the descriptor drops the flock


def describe_writer(kb_dir: Path, what: str) -> None:
    """Name this process in the lock file (e.g. ``rag serve on http://host:port``), so a second
    writer's error says where the running server is. No-op unless this process holds it."""
    with _guard:
        held = _held.get((kb_dir / LOCK_FILE).resolve())
        if held is not None:
            _describe(held[0], what)


def writer_of(kb_dir: Path) -> str | None:
    """Who holds the writer lock ("pid N: what it said it is"), None when nobody does or it
    can't be told (no /proc/locks: not Linux). Reads only, taking no lock itself, so it never
    gets in the way of a writer starting at that moment (``rag eval`` says what it runs beside)."""
    path = kb_dir / LOCK_FILE
    try:
        st = path.stat()
        lines = Path("/proc/locks").read_text(encoding="ascii", errors="replace").splitlines()
    except OSError:
        return None
    where = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    for line in lines:
        fields = line.split()
        if "->" not in fields and "FLOCK" in fields and "WRITE" in fields and where in fields:
            return _holder(path)
    return None
