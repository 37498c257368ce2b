"""``rag keys``, ``rag serve`` and ``rag worker``: the HTTP service, its API keys and its
ingestion workers."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from rag_app.cli.common import (
    JsonOpt,
    KbOpt,
    emit_json,
    err,
    kb_settings,
    open_kb,
    open_ledger,
    out,
)

if TYPE_CHECKING:
    from rag_app.store.jobs import Job
    from rag_app.types import FileResult

STOP_LANE_S = 15.0  # rag worker's express lane: its current job's time to finish at a stop

keys_app = typer.Typer(
    help="API keys of the service: each key has a tenant and a role (reader | editor).",
    no_args_is_help=True,
)


@keys_app.command("create")
def keys_create(
    tenant: Annotated[str, typer.Option("--tenant", "-t", help="Tenant the key acts for.")],
    role: Annotated[
        str, typer.Option("--role", "-r", help="reader (ask, read) or editor (also upload/delete).")
    ] = "reader",
    name: Annotated[str, typer.Option("--name", help="A label, e.g. who uses the key.")] = "",
    collections: Annotated[
        list[str] | None,
        typer.Option(
            "--collection",
            "-c",
            help="Limit the key to this collection of its tenant (repeat for several): it then "
            "lists, reads, asks and uploads only there.",
        ),
    ] = None,
    kb: KbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Create an API key and print it once (only its hash is stored)."""
    from rag_app.service.auth import Role, create_key
    from rag_app.store.collections import CollectionNotFound

    if role not in {r.value for r in Role}:
        err.print(f"[red]error:[/red] --role must be reader or editor, not {role!r}")
        raise typer.Exit(2)
    with open_ledger(kb) as ledger:
        try:
            key = create_key(ledger, tenant, role, name, collections=collections)
        except (ValueError, CollectionNotFound) as exc:
            err.print(f"[red]error:[/red] {exc}")
            raise typer.Exit(2) from exc
    if as_json:
        emit_json(
            {
                "key": key,
                "tenant": tenant,
                "role": role,
                "key_id": key.split("_")[1],
                "collections": collections or None,
            }
        )
    else:
        err.print(f"created {role} key for tenant '{tenant}' (shown once; store it safely):")
        out.print(key)


@keys_app.command("list")
def keys_list(kb: KbOpt = None, as_json: JsonOpt = False) -> None:
    """List keys (ids, tenants, roles; never the keys themselves)."""
    from rag_app.service.auth import list_keys

    with open_ledger(kb) as ledger:
        keys = list_keys(ledger)
    rows = [
        {
            "key_id": k.key_id,
            "tenant": k.tenant,
            "role": k.role.value,
            "name": k.name,
            "revoked": k.revoked,
            "limited": k.collections is not None,
        }
        for k in keys
    ]
    if as_json:
        emit_json(rows)
        return
    table = Table("key id", "tenant", "role", "name", "revoked", "collections")
    for k in keys:
        limited = f"{len(k.collections)} only" if k.collections is not None else "all"
        table.add_row(k.key_id, k.tenant, k.role.value, k.name, "yes" if k.revoked else "", limited)
    out.print(table)


@keys_app.command("revoke")
def keys_revoke(
    key_id: Annotated[str, typer.Argument(help="The key id (second part of rk_<id>_…).")],
    kb: KbOpt = None,
) -> None:
    """Revoke a key: requests with it get 401 from now on."""
    from rag_app.service.auth import revoke_key

    with open_ledger(kb) as ledger:
        done = revoke_key(ledger, key_id)
    if not done:
        err.print(f"[red]error:[/red] no active key with id {key_id}")
        raise typer.Exit(1)
    err.print(f"revoked {key_id}")


def serve(
    kb: KbOpt = None,
    host: Annotated[str, typer.Option("--host", help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", "-p", help="TCP port.")] = 8000,
    workers: Annotated[
        int | None,
        typer.Option(
            "--workers",
            help=r"Ingestion workers \[env RAG_WORKERS; default 1]: `rag worker` processes "
            "started (and restarted) by this one; 0 = leave jobs to `rag worker`s run elsewhere.",
        ),
    ] = None,
    in_process: Annotated[
        bool,
        typer.Option(
            "--workers-in-process",
            help=r"Run the workers as threads in the API process \[env RAG_WORKERS_IN_PROCESS].",
        ),
    ] = False,
) -> None:
    """Serve the HTTP API (/api, OpenAPI at /docs) and the browser UI (/).

    Create a key first: rag keys create --tenant default --role editor
    """
    import uvicorn

    from rag_app.service.app import create_app
    from rag_app.service.processes import ServeProcesses, workers_in_process
    from rag_app.store.writer_lock import KnowledgeBaseBusy, describe_writer

    started = time.time()
    settings = kb_settings(kb)
    local = settings.chroma_url is None  # then no other process may write this KB
    count = settings.workers if workers is None else workers
    children = None
    if not workers_in_process(settings, count, in_process):  # service/processes.py
        children = ServeProcesses(
            settings, workers=count, describe=f"rag serve on http://{host}:{port}", api_port=port
        )
        try:
            settings = children.start()
        except (KnowledgeBaseBusy, RuntimeError, OSError) as exc:
            err.print(f"[red]error:[/red] {exc}")
            raise typer.Exit(2) from exc
    try:
        with open_kb(kb, settings=settings) as base:
            describe_writer(base.path, f"rag serve on http://{host}:{port}")
            if local:  # jobs a killed server left in progress: queued again now, not in a lease
                requeued, failed = base.serving.job_queue(settings.job_max_attempts).requeue_stale(
                    settings.job_lease_seconds, before=started
                )
                if requeued or failed:
                    err.print(
                        f"jobs left in progress by a stopped server: {requeued} requeued, "
                        f"{failed} failed (out of attempts)"
                    )
            application = create_app(
                base.settings, kb=base, workers=0 if children else count, processes=children
            )
            where = f"{count} worker process(es)" if children else f"{count} worker thread(s)"
            err.print(
                f"serving {base.path} on http://{host}:{port} with {where} (UI /, docs /docs)"
            )
            uvicorn.run(application, host=host, port=port, log_level="warning")
    finally:
        if children is not None:
            children.stop()


def worker(
    kb: KbOpt = None,
    once: Annotated[
        bool,
        typer.Option("--once", help="Process queued jobs until the queue is empty, then exit."),
    ] = False,
    max_jobs: Annotated[
        int | None, typer.Option("--max-jobs", help="Exit after this many jobs.")
    ] = None,
) -> None:
    """Process ingestion jobs from the ledger queue (run several for more throughput).

    Workers share the queue safely: each job is claimed by exactly one worker, and jobs of a
    worker that died are requeued after RAG_JOB_LEASE_SECONDS.
    """
    import signal
    import threading

    from rag_app.service.worker import Worker, express_bytes, warm_up

    def on_job(job: Job, result: FileResult) -> None:
        err.print(f"job {job.job_id}: {job.rel_path} → {result.status} {result.reason or ''}")

    with open_kb(kb) as base:
        queue = base.serving.job_queue()
        settings = base.settings

        def make(express_max_bytes: int | None = None) -> Worker:
            return Worker(
                base,
                queue,
                lease_seconds=settings.job_lease_seconds,
                poll_seconds=settings.worker_poll_seconds,
                on_job=on_job,
                express_max_bytes=express_max_bytes,
            )

        runner = make()
        express_max = express_bytes(settings.express_lane_mb)
        express = (  # not with --once/--max-jobs: those count this worker's jobs
            make(express_max) if express_max is not None and not once and max_jobs is None else None
        )
        runners = [runner] + ([express] if express is not None else [])

        def stop(*_: object) -> None:
            for r in runners:
                r.stop()

        def wake(*_: object) -> None:
            for r in runners:
                r.wake()

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGUSR1, wake)  # rag serve: a job was enqueued
        err.print(f"worker {runner.name} on {base.path}")
        lane: threading.Thread | None = None
        try:
            warm_up(base)  # model, parse server: before the first job, not during it
            if express is not None:
                lane = threading.Thread(target=express.run, name=express.name, daemon=True)
                lane.start()
            done = runner.run(until_idle=once, max_jobs=max_jobs)
        except KeyboardInterrupt:
            done = runner.processed
        finally:
            stop()
            if lane is not None:
                lane.join(STOP_LANE_S)
        done += express.processed if express is not None else 0
    err.print(f"processed {done} job(s)")
