"""A worker process stops on SIGTERM however the signals fall: the handler takes no lock."""

from __future__ import annotations

import subprocess
import sys
import textwrap

PROGRAM = textwrap.dedent(
    """
    import signal, time
    from rag_app.service.worker import Worker

    worker = Worker(None, None)  # type: ignore[arg-type]  # stop() needs neither
    signal.signal(signal.SIGALRM, lambda *_: worker.stop())
    signal.setitimer(signal.ITIMER_REAL, 0.0002, 0.0002)  # a stop signal every 200 us
    deadline = time.monotonic() + 1.0
    while time.monotonic() < deadline:  # ... landing inside stop() itself, again and again
        worker.stop()
    signal.setitimer(signal.ITIMER_REAL, 0, 0)
    assert worker.stopping
    print("stopped")
    """
)


def test_stop_signals_landing_inside_stop_do_not_deadlock() -> None:
    """SIGTERM from the dying server and PR_SET_PDEATHSIG can arrive back to back; a handler
    that took a lock (threading.Event.set) deadlocked when the second landed inside the first,
    and the orphaned worker hung for ever."""
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "stopped" in done.stdout
