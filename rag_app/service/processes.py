"""``rag serve``'s ingestion workers in processes of their own, started and restarted by it.

Ingestion ran in worker threads of the API process: a file that killed its worker (the kernel's
OOM killer, a crash in a native library) took the API down for every tenant (issue 16). Parsing
is bounded in a child process already (rag_app/ingestion/isolation.py); embedding and writing
still ran in the API process. Now ``rag serve`` starts ``RAG_WORKERS`` ``rag worker`` processes and
restarts any that exits; the API process only enqueues, answers and deletes. A job whose worker
died is requeued after ``RAG_JOB_LEASE_SECONDS`` and FAILED after ``RAG_JOB_MAX_ATTEMPTS``.

Writers (docs/writers.md): with a Chroma server (``RAG_CHROMA_URL``) every process writes to it.
With a local (embedded) Chroma only one process may open ``<kb>/chroma``, so ``rag serve`` takes
the knowledge base's writer lock itself and serves that directory with a ``chroma run`` child
on 127.0.0.1 (same on-disk format); the API and the workers use it over HTTP. ``rag ingest``
while the server runs is still refused with the fix; after the server stops, the CLI opens the
directory directly again. Children get a signal when ``rag serve`` dies (Linux
``PR_SET_PDEATHSIG``; the Chroma child SIGTERM, the workers SIGKILL), so a ``kill -9`` of the
server leaves no worker writing behind it, nor failing its job against a Chroma child that is
stopping too; ``rag serve`` requeues that job when it starts again.

``RAG_WORKERS_IN_PROCESS=true`` / ``rag serve --workers-in-process`` keep the worker threads in
the API process (one process; a fatal file takes the API down with it).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Collection
from pathlib import Path

import httpx

from rag_app.config import Settings
from rag_app.service.schemas import WorkerExit, WorkerProcess, WorkersHealth
from rag_app.store.vectors import HEARTBEAT_PATH
from rag_app.store.writer_lock import WriterLock, describe_writer

logger = logging.getLogger(__name__)

CHROMA_START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 15.0
RESTART_DELAY_S = 1.0
MAX_RESTART_DELAY_S = 30.0
HEALTHY_RUN_S = 60.0  # a child that ran this long restarts without back-off
PR_SET_PDEATHSIG = 1


def _parent_death_signal(sig: int = signal.SIGTERM) -> Callable[[], None] | None:
    """A ``preexec_fn`` that asks Linux to send ``sig`` to the child when its parent thread ends.

    ``prctl`` is looked up here, in the parent: between fork and exec the child only calls it
    (no ``dlopen``/``dlsym``, whose locks another thread of the parent may hold at the fork).
    """
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    return functools.partial(prctl, PR_SET_PDEATHSIG, int(sig))


def free_port(avoid: Collection[int] = ()) -> int:
    """A port the OS has free now, none of ``avoid``: ``rag serve`` picks its Chroma child's
    port before the API binds its own, and an API port in the OS's ephemeral range (57235)
    could otherwise be handed to the child first."""
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if port not in avoid:
            return port


def _no_proxy(env: dict[str, str]) -> None:
    """The children's HTTP clients honour proxy variables: never send 127.0.0.1 through one."""
    current = [p for p in env.get("NO_PROXY", env.get("no_proxy", "")).split(",") if p]
    env["NO_PROXY"] = env["no_proxy"] = ",".join(dict.fromkeys([*current, "127.0.0.1"]))


class Child:
    """One supervised child process: started, restarted when it exits, stopped on request."""

    def __init__(
        self,
        name: str,
        command: list[str],
        env: dict[str, str],
        log: Path | None,
        *,
        death_signal: int = signal.SIGTERM,
    ):
        self.name, self.command, self.env, self.log = name, command, env, log
        # what the child gets when rag serve dies: a worker is killed outright (SIGKILL), so it
        # cannot go on with its job against a Chroma child that is stopping too and fail it;
        # its job is requeued when the server starts again
        self.death_signal = death_signal
        self.proc: subprocess.Popen[bytes] | None = None
        self.started = 0.0
        self.restarts = 0
        self.delay = RESTART_DELAY_S
        self.next_start = 0.0
        self.last_exit: tuple[int, float] | None = None  # exit status, monotonic time

    def start(self) -> None:
        out = self.log.open("ab") if self.log is not None else None
        try:
            self.proc = subprocess.Popen(
                self.command,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=out if out is not None else None,
                stderr=subprocess.STDOUT if out is not None else None,
                start_new_session=True,  # Ctrl-C reaches rag serve, which stops us in order
                preexec_fn=_parent_death_signal(self.death_signal),  # noqa: PLW1509 - prctl only
            )
        finally:
            if out is not None:
                out.close()
        self.started = time.monotonic()

    def check(self, now: float) -> None:
        """Restart the child if it exited (with back-off when it keeps dying young)."""
        if self.proc is None or self.proc.poll() is None:
            return
        if self.next_start == 0.0:
            code = self.proc.returncode
            self.last_exit = (code, now)
            young = now - self.started < HEALTHY_RUN_S
            self.delay = min(self.delay * 2, MAX_RESTART_DELAY_S) if young else RESTART_DELAY_S
            self.next_start = now + self.delay
            logger.warning(
                "%s (pid %s) stopped (%s); restarting in %.0f s",
                self.name,
                self.proc.pid,
                exit_reason(code),
                self.delay,
            )
        if now >= self.next_start:
            self.next_start = 0.0
            self.restarts += 1
            self.start()

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        proc = self.proc
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)  # its own session: only what we started
            proc.wait(timeout=STOP_TIMEOUT_S)


class ServeProcesses:
    """The children of one ``rag serve``: a ``chroma run`` for a local KB, and the workers.

    ``start()`` returns the settings the API process opens its knowledge base with (a local
    KB's ``chroma_url`` then names the child server). Children are spawned from the monitor
    thread, which lives until ``stop()`` (``PR_SET_PDEATHSIG`` fires when the spawning thread
    ends).
    """

    def __init__(
        self, settings: Settings, *, workers: int, describe: str, api_port: int | None = None
    ) -> None:
        self.settings = settings
        self.workers = workers
        self.api_port = api_port  # the child server's port is never this one
        self.describe = describe
        self.lock: WriterLock | None = None
        self.chroma: Child | None = None
        self.children: list[Child] = []
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        self._can_wake = False

    def start(self) -> Settings:
        settings = self.settings
        kb_dir = settings.kb_dir
        env = dict(os.environ)
        env.update(RAG_KB_DIR=str(kb_dir.resolve()), ANONYMIZED_TELEMETRY="False")
        _no_proxy(env)
        if settings.chroma_url is None:
            # raises KnowledgeBaseBusy (with the fix) while another process writes the KB
            self.lock = WriterLock(kb_dir)
            describe_writer(kb_dir, self.describe)
            avoid = () if self.api_port is None else (self.api_port,)
            url = f"http://127.0.0.1:{free_port(avoid)}"
            chroma_exe = Path(sys.executable).with_name("chroma")
            command = [str(chroma_exe), "run", "--path", str((kb_dir / "chroma").resolve())]
            command += ["--host", "127.0.0.1", "--port", url.rsplit(":", 1)[1]]
            chroma_env = {k: v for k, v in env.items() if not k.startswith("CHROMA_")}
            self.chroma = Child("chroma server", command, chroma_env, kb_dir / "chroma.log")
            env["RAG_CHROMA_URL"] = url
            _no_proxy(os.environ)  # type: ignore[arg-type]  # this process's client, too
            settings = settings.model_copy(update={"chroma_url": url})
        # children inherit an ignored SIGUSR1 until `rag worker` handles it (wake-ups)
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGUSR1, signal.SIG_IGN)
            self._can_wake = True
        worker_cmd = [sys.executable, "-m", "rag_app.cli", "worker", "--kb", str(kb_dir)]
        self.children = [
            Child(f"worker {i + 1}", worker_cmd, env, None, death_signal=signal.SIGKILL)
            for i in range(self.workers)
        ]
        self._thread = threading.Thread(target=self._monitor, name="rag-children", daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            self.stop()
            raise self._error
        return settings

    def _monitor(self) -> None:
        try:
            if self.chroma is not None:
                self.chroma.start()
                _wait_for_chroma(self.chroma, str(self.chroma.command[-1]))
            for child in self.children:
                child.start()
        except BaseException as exc:
            self._error = exc
            self._ready.set()
            return
        self._ready.set()
        while not self._stop.wait(0.5):
            now = time.monotonic()
            for child in [c for c in (self.chroma, *self.children) if c is not None]:
                try:
                    child.check(now)
                except OSError:
                    logger.exception("could not restart %s", child.name)

    def pids(self) -> dict[str, int | None]:
        every = [c for c in (self.chroma, *self.children) if c is not None]
        return {c.name: (c.proc.pid if c.proc else None) for c in every}

    def wake(self) -> None:
        """Tell the workers a job was enqueued (SIGUSR1; they claim at once instead of at their
        next poll). A child started before it handles the signal ignores it (inherited SIG_IGN),
        so a wake never kills a starting worker; the job then waits for the next poll."""
        if not self._can_wake:
            return
        for child in self.children:
            if child.proc is not None:
                with contextlib.suppress(OSError):
                    child.proc.send_signal(signal.SIGUSR1)  # no-op once it was reaped

    def worker_health(self) -> WorkersHealth:
        """For /api/health: alive and restarted workers, the latest exit (no pids, no paths)."""
        now = time.monotonic()
        exits = [(c.last_exit, c.name) for c in self.children if c.last_exit is not None]
        last = None
        if exits:
            (code, when), name = max(exits, key=lambda e: e[0][1])
            last = WorkerExit(
                worker=name, code=code, reason=exit_reason(code), seconds_ago=round(now - when, 1)
            )
        processes = [
            WorkerProcess(name=c.name, alive=c.alive(), restarts=c.restarts) for c in self.children
        ]
        return WorkersHealth(
            mode="processes",
            configured=len(self.children),
            alive=sum(p.alive for p in processes),
            restarts=sum(p.restarts for p in processes),
            last_exit=last,
            processes=processes,
        )

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(STOP_TIMEOUT_S)
        stoppers = [threading.Thread(target=c.stop) for c in self.children]
        for t in stoppers:
            t.start()
        for t in stoppers:
            t.join()
        if self.chroma is not None:  # after the workers: they write through it
            self.chroma.stop()
        if self.lock is not None:
            self.lock.release()
            self.lock = None


def exit_reason(code: int) -> str:
    """``-9`` → ``killed by signal 9 (SIGKILL)``, ``1`` → ``exit code 1``."""
    if code >= 0:
        return f"exit code {code}"
    try:
        name = f" ({signal.Signals(-code).name})"
    except ValueError:
        name = ""
    return f"killed by signal {-code}{name}"


def _wait_for_chroma(child: Child, port: str) -> None:
    url = f"http://127.0.0.1:{port}{HEARTBEAT_PATH}"
    deadline = time.monotonic() + CHROMA_START_TIMEOUT_S
    transport = httpx.HTTPTransport()  # no proxy from the environment
    with httpx.Client(transport=transport, timeout=2.0, trust_env=False) as client:
        while time.monotonic() < deadline:
            if child.proc is not None and child.proc.poll() is not None:
                raise RuntimeError(
                    f"the knowledge base's chroma server exited ({child.proc.returncode}); "
                    f"see {child.log}"
                )
            with contextlib.suppress(httpx.HTTPError):
                if client.get(url).status_code == 200:
                    return
            time.sleep(0.2)
    raise RuntimeError(f"the knowledge base's chroma server gave no heartbeat; see {child.log}")


def workers_in_process(settings: Settings, workers: int, flag: bool) -> bool:
    """Threads in the API process (the old model): asked for, or no workers at all."""
    return flag or settings.workers_in_process or workers == 0
