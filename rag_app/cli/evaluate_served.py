"""Where ``rag eval`` evaluates, and saying so: the knowledge base opened read-only beside a
``rag serve`` that holds it (no writer lock taken), or the server itself through its API
(``--server URL --api-key KEY``); and the cases that failed, with why (👎 cases first of all).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rag_app.cli.common import err, missing_kb, out
from rag_app.cli.remote import RemoteKB
from rag_app.types import Answer, Source

SHOWN_FAILURES = 20


class ServedKB:
    """A running ``rag serve`` as the evaluation runner asks it (rag_app/eval/targets.Served):
    each question through ``/api/retrieve`` and ``/api/ask`` with the key (its tenant)."""

    def __init__(self, remote: RemoteKB) -> None:
        self.remote = remote
        self.description: dict[str, Any] = {"server": remote.url}

    def retrieve(self, question: str, top_k: int = 5, tenant: str = "default") -> list[Source]:
        return self.remote.retrieve(question, top_k, None)[0]

    def ask(self, question: str, tenant: str = "default", top_k: int = 5) -> Answer:
        return self.remote.ask(question, top_k, None)[0]

    def check(self) -> None:
        """Reach the server with the key before the first question (RemoteError: unreachable, or
        the key refused), and record what it serves: the key's tenant, the embedding, the
        version."""
        me = self.remote.request("GET", "/api/me")
        health = self.remote.request("GET", "/api/health")
        self.description.update(
            tenant=me.get("tenant"),
            embedding=health.get("embedding"),
            version=health.get("version"),
        )


def announce_local(kb: Path | None, docs: Path | None) -> str | None:
    """Say how the knowledge base is opened (on stderr); an error message instead when there is
    none to evaluate (a mistyped --kb and no --docs)."""
    from rag_app.config import Settings
    from rag_app.store.writer_lock import writer_of

    if docs is not None:
        return None  # ingesting: a writer (a temporary KB, or --kb)
    if (missing := missing_kb(kb)) is not None:
        return (
            f"no knowledge base at {missing} (no ledger.db there): check --kb or RAG_KB_DIR, "
            f"pass --docs DIR to ingest a folder first, or evaluate a running server with "
            f"--server URL --api-key KEY"
        )
    where = kb if kb is not None else Settings().kb_dir
    holder = writer_of(where)
    beside = f" beside a running server ({holder})" if holder else ""
    err.print(
        f"[dim]evaluating {where} read-only{beside}: no writer lock taken[/dim]", soft_wrap=True
    )
    return None


def busy_message(kb: Path | None) -> str:
    """``rag eval --docs DIR --kb KB`` while another process holds KB: what to evaluate
    instead (the knowledge base as it is, or through the server)."""
    from rag_app.config import Settings
    from rag_app.store.writer_lock import writer_of

    where = kb if kb is not None else Settings().kb_dir
    holder = writer_of(where) or "another process"
    return (
        f"{where} is open for writing by {holder}, and --docs would ingest into it. Evaluate "
        f"it as it is, read-only beside that server: leave out --docs; or through the server: "
        f"rag eval FILE --server URL --api-key KEY; or evaluate --docs in a temporary knowledge "
        f"base: leave out --kb"
    )


def print_feedback_cases(run: Any) -> None:
    """How the cases from feedback did (those with a comment, ``not_answer`` or ``refuse``):
    how many passed, and each that failed with why (up to :data:`SHOWN_FAILURES`)."""
    cases = [r for r in run.records if r.not_answer or r.refuse or r.comment]
    asked = [r for r in cases if r.passed is not None]
    if not asked:
        return
    failed = [r for r in asked if not r.passed]
    out.print(f"feedback cases: {len(asked) - len(failed)} of {len(asked)} passed")
    for rec in failed[:SHOWN_FAILURES]:
        first = next((line.strip() for line in rec.answer.splitlines() if line.strip()), "")
        out.print(f"[red]FAILED[/red] {rec.id} ({rec.fail_reason}): {rec.question}")
        out.print(f"   [dim]answer: {first[:120] or '–'}[/dim]")
        if rec.comment:
            out.print(f"   [dim]comment: {rec.comment}[/dim]")
    if len(failed) > SHOWN_FAILURES:
        out.print(f"[dim]… and {len(failed) - SHOWN_FAILURES} more (see --json)[/dim]")
