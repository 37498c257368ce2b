"""The parse server: a process that has imported the readers and the chunkers once, and forks one
child per file (``python -m rag_app.ingestion.parse_zygote FD``; see rag_app/ingestion/isolation.py).

It reads ``(job, timeout, max_mb)`` from the connection on file descriptor FD, forks a child that
limits its address space (``RLIMIT_AS``: its size after the fork plus ``max_mb``), parses and
chunks the file and writes the pickled reply to a pipe; the server waits ``timeout`` seconds for
the reply (then kills the child) and forwards it; if the ingesting process dies meanwhile, it
kills the child and exits at once. Replies: ``("ok", Chunked)``, ``("reader",
message)``, ``("memory", "")``, ``("timeout", "")``, ``("died", how)`` or ``("error", message)``.
The server is single-threaded, so forking it is safe; it exits when the connection closes.
"""

from __future__ import annotations

import os
import pickle
import resource
import signal
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


def _child(job: ParseJob, max_mb: float, out: Connection) -> None:
    code = 0
    try:
        _limit_memory(max_mb)
        reply = _run(job)
        del job
        try:
            data = pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL)
        except MemoryError:
            data = pickle.dumps(("memory", ""))
        out.send_bytes(data)
    except BaseException:  # noqa: BLE001 - the parent reports a child without a reply
        code = 70
    finally:
        os._exit(code)


def _describe(status: int) -> str:
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            return signal.Signals(number).name
        except ValueError:
            return f"signal {number}"
    return f"exit code {os.waitstatus_to_exitcode(status)}"


def _serve_one(conn: Connection, job: ParseJob, timeout: float, max_mb: float) -> bytes:
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        os.close(read_fd)
        conn.close()
        _child(job, max_mb, Connection(write_fd, readable=False))
    os.close(write_fd)
    reader = Connection(read_fd, writable=False)
    try:
        ready = wait([reader, conn], timeout)
        if conn in ready:  # the ingesting process is gone (EOF): no one to reply to
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os._exit(0)
        if not ready:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return pickle.dumps(("timeout", ""))
        try:
            data = reader.recv_bytes()
        except (EOFError, OSError):
            _, status = os.waitpid(pid, 0)
            return pickle.dumps(("died", _describe(status)))
        os.waitpid(pid, 0)
        return data
    finally:
        reader.close()


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
    while True:
        try:
            job, timeout, max_mb = conn.recv()
        except EOFError:
            return
        conn.send_bytes(_serve_one(conn, job, timeout, max_mb))


if __name__ == "__main__":
    main()
