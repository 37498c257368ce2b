"""The parse server: a process that has imported the readers and the chunkers once, and forks the
children that parse (``python -m rag_app.ingestion.parse_zygote FD``; see
rag_app/ingestion/isolation.py).

It reads ``(job, timeout, max_mb)`` from the connection on file descriptor FD and hands the job
to its parse child, forked on first need, which limits its address space (``RLIMIT_AS``: its
size after the fork plus ``max_mb``), parses and chunks the file and sends the pickled reply
back; the server waits ``timeout`` seconds for the reply (then kills the child) and forwards it;
if the ingesting process dies meanwhile, it kills the child and exits at once. The child parses
file after file (a fork per file cost about 13 ms of CPU, which on 2 cores the embedding model
waits for) until one fails by time, memory or a crash, or after ``CHILD_FILES`` files or
``max_mb / 2`` of address-space growth; a new one is forked for the next file. Replies:
``("ok", Chunked)``, ``("reader", message)``, ``("memory", "")``, ``("timeout", "")``,
``("died", how)`` or ``("error", message)``. The server is single-threaded, so forking it is
safe; it exits when the connection closes (and its child with it).
"""

from __future__ import annotations

import contextlib
import os
import pickle
import resource
import signal
import socket
import sys
from multiprocessing.connection import Connection, wait
from typing import Any

import rag_app.chunking  # noqa: F401 - imported once here, not in every child
import rag_app.readers.docx  # noqa: F401
import rag_app.readers.html  # noqa: F401
import rag_app.readers.pdf  # noqa: F401
import rag_app.readers.sheets  # noqa: F401
import rag_app.readers.slides  # noqa: F401
import rag_app.readers.text  # noqa: F401
from rag_app.ingestion.isolation import ParseJob, parse_and_chunk
from rag_app.readers import ReaderError


def _address_space() -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def _limit_memory(max_mb: float) -> None:
    if max_mb <= 0:
        return
    limit = _address_space() + int(max_mb * 1024 * 1024)
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def _run(job: ParseJob) -> tuple[str, Any]:
    try:
        return ("ok", parse_and_chunk(job))
    except ReaderError as exc:
        return ("reader", str(exc))
    except MemoryError:
        return ("memory", "")
    except RecursionError:
        return ("reader", "content nested too deeply")
    except Exception as exc:  # a parser bug: the ingesting process reports an internal error
        return ("error", f"{type(exc).__name__}: {exc}")


CHILD_FILES = 200  # files one parse child parses before a fresh one is forked
_GOING_ON, _EXITING = b"0", b"1"  # the first byte of a child's reply: will it parse more?


def _child(max_mb: float, conn: Connection) -> None:
    """A parse child's life: jobs from ``conn`` until its end closes, a failure that may have
    left the process in a bad state, or its quota."""
    code = 0
    try:
        _limit_memory(max_mb)
        start = _address_space()
        for done in range(1, CHILD_FILES + 1):
            try:
                job = conn.recv()
            except EOFError:
                break
            reply = _run(job)
            del job
            try:
                data = pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL)
            except MemoryError:
                reply, data = ("memory", ""), pickle.dumps(("memory", ""))
            grown = max_mb > 0 and _address_space() - start > max_mb * 1024 * 1024 / 2
            last = reply[0] in ("memory", "error") or grown or done == CHILD_FILES
            conn.send_bytes((_EXITING if last else _GOING_ON) + data)
            if last:
                break
    except BaseException:  # noqa: BLE001 - the server reports a child without a reply
        code = 70
    finally:
        os._exit(code)


class _ParseChild:
    """The server's current parse child and its end of their connection."""

    def __init__(self, server_conn: Connection, max_mb: float) -> None:
        ours, theirs = socket.socketpair()
        self.max_mb = max_mb
        pid = os.fork()
        if pid == 0:  # the child
            ours.close()
            server_conn.close()
            _child(max_mb, Connection(theirs.detach()))
        theirs.close()
        self.pid = pid
        self.conn = Connection(ours.detach())

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        self.reap()

    def reap(self) -> int:
        self.conn.close()
        _, status = os.waitpid(self.pid, 0)
        return status


def _describe(status: int) -> str:
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            return signal.Signals(number).name
        except ValueError:
            return f"signal {number}"
    return f"exit code {os.waitstatus_to_exitcode(status)}"


def _serve_one(
    conn: Connection, child: _ParseChild | None, job: ParseJob, timeout: float, max_mb: float
) -> tuple[bytes, _ParseChild | None]:
    """Have the child parse ``job``: the reply, and the child for the next job (None: it is
    gone, fork a new one)."""
    if child is not None and child.max_mb != max_mb:
        child.kill()
        child = None
    if child is None:
        child = _ParseChild(conn, max_mb)
    try:
        child.conn.send(job)
    except OSError:  # it died between jobs
        return pickle.dumps(("died", _describe(child.reap()))), None
    ready = wait([child.conn, conn], timeout)
    if conn in ready:  # the ingesting process is gone (EOF): no one to reply to
        child.kill()
        os._exit(0)
    if not ready:
        child.kill()
        return pickle.dumps(("timeout", "")), None
    try:
        data = child.conn.recv_bytes()
    except (EOFError, OSError):
        return pickle.dumps(("died", _describe(child.reap()))), None
    if data[:1] == _EXITING:
        child.reap()
        child = None
    return data[1:], child


_WARM_UP = {
    "warm.md": "# 标题\n\n## 第一节\n\n正文，一句话。Some text.\n\n- 列表项\n\n| a | b |\n|---|---|\n| 1 | 2 |\n",
    "warm.txt": "第一章 总则\n\n第一条 为了规范管理，制定本办法。\n",
    "warm.html": "<html><head><title>标题</title></head><body><h1>标题</h1><p>正文。</p></body></html>",
}


def _warm_up() -> None:
    """Load what the readers and chunkers load on first use, once, before any fork."""
    for name, text in _WARM_UP.items():
        job = ParseJob(
            data=text.encode(),
            filename=name,
            doc_id="warm-up",
            tenant="warm-up",
            source=name,
            max_file_bytes=0,
            unpacked_max_bytes=0,
            ocr=False,
            chunker="structure",
            chunk_size=512,
            chunk_overlap=64,
            section_level=2,
        )
        _run(job)


def main() -> None:
    # Ctrl-C (a notebook kernel's stop) reaches the whole process group: the server is not
    # the one to answer it; it exits when its ingesting process closes the connection.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    conn = Connection(int(sys.argv[1]))
    _warm_up()
    conn.send(("ready", os.getpid()))
    child: _ParseChild | None = None
    while True:
        try:
            job, timeout, max_mb = conn.recv()
        except EOFError:
            if child is not None:
                child.kill()
            return
        reply, child = _serve_one(conn, child, job, timeout, max_mb)
        conn.send_bytes(reply)


if __name__ == "__main__":
    main()
