"""A throwaway local PostgreSQL server for the tests: ``initdb`` + ``pg_ctl`` in a temp dir.

The server listens on 127.0.0.1 (a free port) and on a Unix socket in its own temp dir, with
trust authentication, fsync off (test data only). initdb refuses to run as root, so as root the
server runs as the ``postgres`` user (``runuser -u postgres --``). Binaries: ``PG_TEST_BINDIR``,
else the newest ``/usr/lib/postgresql/*/bin``, else ``initdb`` on PATH. Each test gets its own
database, dropped afterwards. Without binaries (``make postgres-deps`` installs them) or as root
without a ``postgres`` user, the PostgreSQL tests skip with the reason.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

START_TIMEOUT_S = 60
STOP_TIMEOUT_S = 30
PG_USER = "postgres"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _version_key(path: Path) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", path.parent.parent.name)) or (0,)


def find_pg_bin() -> Path | None:
    """The directory holding initdb, pg_ctl and postgres, or None."""
    env = os.environ.get("PG_TEST_BINDIR")
    if env:
        return Path(env) if (Path(env) / "initdb").is_file() else None
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=_version_key)
    if found:
        return found[-1].parent
    on_path = shutil.which("initdb")
    return Path(on_path).parent if on_path else None


def _run_as() -> list[str] | None:
    """Command prefix that runs the server's programs as a non-root user; None: impossible."""
    if os.geteuid() != 0:
        return []
    try:
        pwd.getpwnam(PG_USER)
    except KeyError:
        return None
    runuser = shutil.which("runuser")
    if runuser:
        return [runuser, "-u", PG_USER, "--"]
    return None


def unavailable_reason() -> str | None:
    """Why no test server can be started here (None: it can)."""
    if find_pg_bin() is None:
        if os.environ.get("PG_TEST_BINDIR"):
            return f"PG_TEST_BINDIR={os.environ['PG_TEST_BINDIR']} holds no initdb"
        return (
            "PostgreSQL server binaries not found (no /usr/lib/postgresql/*/bin/initdb, no initdb "
            "on PATH); `make postgres-deps` installs them"
        )
    if _run_as() is None:
        return f"running as root and no '{PG_USER}' user (or no runuser) to run initdb as"
    return None


class PgServer:
    """One server for the test session; :meth:`create_database` hands out fresh databases."""

    def __init__(self, bindir: Path, prefix: list[str]) -> None:
        self.bindir = bindir
        self.prefix = prefix
        # not under pytest's tmp dir: that one is private to root, and the server runs as postgres
        self.root = Path(tempfile.mkdtemp(prefix="rag-test-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self.port = 0
        self._running = False
        if prefix:
            shutil.chown(self.root, user=PG_USER)

    # ----- lifecycle ----------------------------------------------------------------------
    def _run(self, *args: str, timeout: float) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*self.prefix, *args],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=self.root,
            env={**os.environ, "LC_ALL": "C.UTF-8", "LANG": "C.UTF-8", "TZ": "UTC"},
        )

    def start(self) -> None:
        done = self._run(
            str(self.bindir / "initdb"),
            "-D",
            str(self.data),
            "-U",
            PG_USER,
            "-A",
            "trust",
            "-E",
            "UTF8",
            "--locale=C.UTF-8",
            "--no-sync",
            timeout=120,
        )
        if done.returncode != 0:
            raise RuntimeError(f"initdb failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
        for attempt in range(3):  # a free port can be taken between probing and binding
            self.port = _free_port()
            options = (
                f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.root} "
                "-c fsync=off -c synchronous_commit=off -c full_page_writes=off "
                "-c max_connections=100"
            )
            done = self._run(
                str(self.bindir / "pg_ctl"),
                "start",
                "-D",
                str(self.data),
                "-l",
                str(self.log),
                "-w",
                "-t",
                str(START_TIMEOUT_S),
                "-o",
                options,
                timeout=START_TIMEOUT_S + 30,
            )
            if done.returncode == 0:
                self._running = True
                return
            self.stop()
            log = self.log_text()
            if attempt < 2 and "could not bind" in log:
                continue
            raise RuntimeError(
                f"pg_ctl start failed ({done.returncode}):\n{done.stdout}\n{done.stderr}\n{log}"
            )

    def log_text(self) -> str:
        try:
            return self.log.read_text(errors="replace")
        except OSError as exc:
            return f"<no server log: {exc}>"

    def _postmaster_pid(self) -> int | None:
        with contextlib.suppress(OSError, ValueError, IndexError):
            return int((self.data / "postmaster.pid").read_text().splitlines()[0])
        return None

    def stop(self) -> None:
        """``pg_ctl stop -m fast``; SIGKILL of the postmaster (only ours) if that fails."""
        pid = self._postmaster_pid()
        if pid is not None:
            stopped = False
            with contextlib.suppress(subprocess.TimeoutExpired, OSError):
                done = self._run(
                    str(self.bindir / "pg_ctl"),
                    "stop",
                    "-D",
                    str(self.data),
                    "-m",
                    "fast",
                    "-w",
                    "-t",
                    str(STOP_TIMEOUT_S),
                    timeout=STOP_TIMEOUT_S + 10,
                )
                stopped = done.returncode == 0
            if not stopped:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)  # the postmaster read from our own data dir
                deadline = time.monotonic() + STOP_TIMEOUT_S
                while time.monotonic() < deadline and _alive(pid):
                    time.sleep(0.1)
        self._running = False

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)

    # ----- databases ----------------------------------------------------------------------
    def url(self, database: str, driver: str = "postgresql+psycopg") -> str:
        return f"{driver}://{PG_USER}@127.0.0.1:{self.port}/{database}"

    def _admin(self, sql: str) -> None:
        import psycopg

        with psycopg.connect(
            host="127.0.0.1", port=self.port, user=PG_USER, dbname="postgres", autocommit=True
        ) as conn:
            conn.execute(sql)  # type: ignore[arg-type]  # names are generated, never user input

    def create_database(self) -> str:
        name = f"test_{uuid.uuid4().hex[:16]}"
        self._admin(f'CREATE DATABASE "{name}"')
        return name

    def drop_database(self, name: str) -> None:
        self._admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    """A PostgreSQL server for the session (skips when none can be started here)."""
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    bindir, prefix = find_pg_bin(), _run_as()
    assert bindir is not None and prefix is not None
    server = PgServer(bindir, prefix)
    atexit.register(server.cleanup)  # also on an interpreter exit that skips the teardown
    try:
        try:
            server.start()
        except (RuntimeError, subprocess.TimeoutExpired) as exc:
            pytest.fail(f"could not start the test PostgreSQL server: {exc}")
        yield server
    finally:
        server.cleanup()
        atexit.unregister(server.cleanup)


@pytest.fixture
def pg_url(pg_server: PgServer) -> Iterator[str]:
    """SQLAlchemy URL of a fresh database on the session's server, dropped after the test."""
    name = pg_server.create_database()
    try:
        yield pg_server.url(name)
    finally:
        pg_server.drop_database(name)


@pytest.fixture(params=["sqlite", "postgres"])
def ledger_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A ledger URL on each backend: SQLite in the test's temp dir, or a fresh PG database."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'ledger.db'}"
    return str(request.getfixturevalue("pg_url"))
