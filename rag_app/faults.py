"""Fault injection for crash tests: named points that do nothing unless ``RAG_FAULT`` names them.

``RAG_FAULT="ingest.after_vectors:kill"`` kills the process (SIGKILL, as a crash or an OOM kill
would) when ingestion reaches that point; ``:sleep5`` waits 5 seconds there (a slow file, to
kill a process in the middle of it); ``:raise`` (the default action) raises
:class:`InjectedFault`. Several points can be given, comma separated. The points:

* ``ingest.after_parse`` - file parsed and chunked, nothing written
* ``ingest.after_vectors`` - new version's vectors written, ledger untouched
* ``ingest.in_commit`` - inside the ledger transaction: chunks inserted, version not flipped
* ``ingest.after_commit`` - version flipped, old version not yet removed
* ``delete.after_ledger`` - document removed from the ledger, vectors not yet deleted
* ``enqueue.after_document`` - in the enqueue transaction: document PENDING, its job not yet
"""

from __future__ import annotations

import os
import signal
import time

ENV = "RAG_FAULT"


class InjectedFault(RuntimeError):
    """Raised at a fault point named in ``RAG_FAULT``."""


def fault_point(name: str) -> None:
    spec = os.environ.get(ENV)
    if not spec:
        return
    for item in spec.split(","):
        point, _, action = item.strip().partition(":")
        if point != name:
            continue
        if action == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        if action.startswith("sleep"):
            time.sleep(float(action.removeprefix("sleep") or 1))
            continue
        raise InjectedFault(f"injected fault at {name}")
