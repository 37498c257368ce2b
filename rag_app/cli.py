"""The ``rag`` command line: ingest, retrieve, ask, docs, chunks, delete, doctor, eval, serve,
keys, worker.

Every command takes ``--kb DIR`` (default ``$RAG_KB_DIR`` or ``./.rag``) and ``--json`` for
machine-readable output on stdout (progress and messages go to stderr).
"""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.logging import RichHandler
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from rag_app.cli_output import (
    answer_score_name,
    cited_numbers,
    fmt_score,
    retrieval_score_name,
    short_ids,
    sources_json,
)

for _var, _value in (
    ("HF_HUB_OFFLINE", "1"),
    ("ANONYMIZED_TELEMETRY", "False"),
    ("RAGAS_DO_NOT_TRACK", "true"),
    ("TOKENIZERS_PARALLELISM", "false"),
):
    os.environ.setdefault(_var, _value)

app = typer.Typer(
    help="Chinese-first knowledge-base RAG engine: ingest documents, then retrieve with citations.\n\n"
    "Example: rag ingest data/knowledge && rag ask '密码多久修改一次？'",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False)

KbOpt = Annotated[
    Path | None,
    typer.Option("--kb", help="Knowledge-base directory [env RAG_KB_DIR; default ./.rag]."),
]
TenantOpt = Annotated[str, typer.Option("--tenant", "-t", help="Tenant (scope) of the documents.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON only.")]


def _setup_logging(verbose: bool = False) -> None:
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(message)s",
        handlers=[RichHandler(console=err, show_path=False)],
    )
    for noisy in ("chromadb", "httpx", "jieba", "sentence_transformers", "transformers"):
        logging.getLogger(noisy).setLevel(logging.ERROR)


def _open(kb: Path | None, *, read_only: bool = False, settings: Any = None) -> Any:
    """The knowledge base; ``read_only`` commands take no writer lock (store/writer_lock.py)."""
    from rag_app.embeddings import EmbeddingLoadError
    from rag_app.kb import KnowledgeBase, KnowledgeBaseError
    from rag_app.store.writer_lock import KnowledgeBaseBusy

    try:
        return KnowledgeBase.open(kb, settings, read_only=read_only)
    except (KnowledgeBaseError, KnowledgeBaseBusy, EmbeddingLoadError, ValueError) as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc


def _settings(kb: Path | None) -> Any:
    from rag_app.config import Settings

    settings = Settings()
    if kb is not None:
        settings = Settings(**{**settings.model_dump(), "kb_dir": kb})
    settings.kb_dir.mkdir(parents=True, exist_ok=True)
    return settings


def _emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2, default=str) + "\n")


def _filename(kb: Any, doc_id: str) -> str | None:
    """A document's path in the KB (the API's ``filename``)."""
    doc = kb.document(doc_id)
    return (doc.rel_path or Path(doc.source).name) if doc is not None else None


def _resolve_doc(kb: Any, doc: str) -> str:
    """Accept a full doc id or a unique prefix of one (like git)."""
    if kb.document(doc) is not None:
        return doc
    matches = [d.doc_id for d in kb.documents(tenant=None) if d.doc_id.startswith(doc)]
    if len(matches) == 1:
        return matches[0]
    reason = "no document" if not matches else f"{len(matches)} documents"
    err.print(f"[red]error:[/red] {reason} with id {doc!r} (see `rag docs`)")
    raise typer.Exit(1)


# short column labels of the eval summary and --compare tables
_EVAL_COLUMNS = {
    "case_pass_rate": "pass",
    "recall_at_k": "R@k",
    "mrr_at_k": "MRR",
    "source_hit_rate": "src",
    "keyword_hit_rate": "kw",
    "no_answer_accuracy": "noA",
    "false_refusal_rate": "fRef",
    "avg_context_chars": "ctx",
    "retrieve_ms_p50": "ret",
    "ask_ms_p50": "ask",
}


@app.callback()
def main(
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log progress details.")] = False,
) -> None:
    _setup_logging(verbose)


@app.command()
def ingest(
    paths: Annotated[list[Path], typer.Argument(help="Files and folders (recursive).")],
    kb: KbOpt = None,
    tenant: TenantOpt = "default",
    as_json: JsonOpt = False,
) -> None:
    """Parse, chunk, embed and store documents (.md .txt .pdf .docx .html .xlsx .xls .csv .pptx).

    Unchanged files are skipped (content hash); a changed file replaces its old chunks.
    Exit code 1 when any file failed (the others are still ingested).
    """
    from rag_app.embeddings import EmbeddingLoadError

    base = _open(kb)
    progress = Progress(
        TextColumn("[bold]ingesting"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
        console=err,
        disable=as_json,
        transient=True,
    )
    task = progress.add_task("", total=None)

    def on_file(result: Any, done: int, total: int) -> None:
        progress.update(task, completed=done, total=total, description=Path(result.path).name)

    try:
        with progress:
            report = base.ingest(paths, tenant=tenant, progress=on_file)
    except EmbeddingLoadError as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc
    finally:
        base.close()
    if as_json:
        _emit_json(report.model_dump())
    else:
        table = Table(title=f"ingest into {base.path} (tenant {tenant})")
        for col in ("file", "status", "chunks", "version", "seconds"):
            table.add_column(col, overflow="fold")
        colors = {"SUCCESS": "green", "UNCHANGED": "cyan", "FAILED": "red", "SKIPPED": "yellow"}
        for f in report.files:
            color = colors.get(f.status, "white")
            table.add_row(
                f.path,
                f"[{color}]{f.status}[/{color}]",
                str(f.chunks),
                "" if f.version is None else str(f.version),
                f"{f.seconds:.2f}",
            )
        out.print(table)
        for f in report.files:
            if f.reason:
                color = colors.get(f.status, "white")
                out.print(f"[{color}]{f.status}[/{color}] {f.path}: {f.reason}")
        out.print(
            f"{report.succeeded} ingested, {report.unchanged} unchanged, {report.failed} failed, "
            f"{report.count('SKIPPED')} skipped; {report.total_chunks} chunks in {report.seconds:.1f}s"
        )
    if report.failed:
        raise typer.Exit(1)


@app.command()
def retrieve(
    question: Annotated[str, typer.Argument(help="The question, e.g. '密码多久修改一次？'")],
    kb: KbOpt = None,
    tenant: TenantOpt = "default",
    top_k: Annotated[int, typer.Option("--top-k", "-k", min=1, max=100)] = 5,
    as_json: JsonOpt = False,
) -> None:
    """Show the chunks that best match a question, with their sources and spans.

    Scores are the retrieval's: "fused" (dense + BM25 by reciprocal-rank fusion, small numbers
    such as 0.03) unless RAG_RETRIEVAL_MODE picks one branch ("dense", "bm25").
    """
    base = _open(kb, read_only=True)
    try:
        hits = base.retrieve(question, top_k=top_k, tenant=tenant)
        rows = sources_json(hits, lambda doc_id: _filename(base, doc_id))
    except ValueError as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc
    finally:
        base.close()
    if as_json:
        _emit_json(rows)
        return
    score_name = retrieval_score_name(base.settings)
    out.print(f"[bold]Q:[/bold] {question}")
    if not hits:
        out.print("[yellow]no matching chunks (is the knowledge base empty?)[/yellow]")
    for rank, (hit, row) in enumerate(zip(hits, rows, strict=True), start=1):
        name = row["filename"] or Path(hit.source).name
        where = f"{name} · chunk {hit.chunk_index} · chars {hit.start_char}-{hit.end_char}"
        out.print(f"\n[bold cyan][{rank}][/bold cyan] {fmt_score(score_name, hit.score)} · {where}")
        if hit.title_path:
            out.print(f"    [dim]{hit.title_path}[/dim]")
        snippet = " ".join(hit.text.split())
        out.print(f"    {snippet[:240]}{'…' if len(snippet) > 240 else ''}")


@app.command()
def ask(
    question: Annotated[str, typer.Argument(help="The question, e.g. '密码多久修改一次？'")],
    kb: KbOpt = None,
    tenant: TenantOpt = "default",
    top_k: Annotated[int, typer.Option("--top-k", "-k", min=1, max=50)] = 5,
    show_context: Annotated[
        bool,
        typer.Option(
            "--show-context", help="Print each cited chunk (its [n] is in the answer) in full."
        ),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Answer from the knowledge base with numbered citations, or refuse.

    Without RAG_LLM_BASE_URL the answer is extractive (sentences and table rows picked from
    the evidence); with it, an OpenAI-compatible model writes the answer, and markers it
    invents are removed. Sources always come from the retrieval backend. Their scores are the
    reranker's ("rerank"; "fused" with RAG_RERANK=none).
    """
    base = _open(kb, read_only=True)
    try:
        answer = base.ask(question, tenant=tenant, top_k=top_k)
        rows = sources_json(answer.sources, lambda doc_id: _filename(base, doc_id))
    except ValueError as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc
    finally:
        base.close()
    if as_json:
        _emit_json({**answer.model_dump(), "sources": rows})
        return
    score_name = answer_score_name(base.settings)
    out.print(f"[bold]Q:[/bold] {question}")
    if answer.refused:
        out.print(f"[bold yellow]{answer.answer}[/bold yellow]")
        out.print(
            f"[yellow]{answer.explanation or ''}[/yellow] [dim](reason: {answer.reason})[/dim]"
        )
    else:
        out.print(answer.answer)
    if answer.sources:
        title = "最接近的资料 (closest sources)" if answer.refused else "Sources"
        out.print(f"\n[bold]{title}[/bold]")
    cited = cited_numbers(answer.answer, len(answer.sources))
    for n, (src, row) in enumerate(zip(answer.sources, rows, strict=True), start=1):
        name = row["filename"] or Path(src.source).name
        out.print(
            f"[bold cyan][{n}][/bold cyan] {name} · {src.title_path or '(no heading)'}"
            f" · chunk {src.chunk_index} · chars {src.start_char}-{src.end_char}"
            f" · {fmt_score(score_name, src.score)}"
        )
        if show_context and n in cited:
            out.print(f"[dim]{src.text}[/dim]\n")
    if show_context and not cited:
        out.print("[dim](--show-context: the answer cites no source)[/dim]")
    if not answer.refused:
        out.print(f"[dim]confidence {answer.confidence:.2f} (answer model)[/dim]")
    timing = ", ".join(f"{k} {v:.0f}" for k, v in answer.timings.items())
    out.print(f"[dim]{answer.mode}; {timing}[/dim]")


@app.command()
def docs(
    kb: KbOpt = None,
    tenant: TenantOpt = "default",
    all_tenants: Annotated[bool, typer.Option("--all-tenants", help="List every tenant.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """List documents with their status, version and chunk count.

    The doc_id column shows each id's shortest unique prefix (8 characters or more), which
    `rag chunks` and `rag delete` accept; --json has the full ids.
    """
    base = _open(kb, read_only=True)
    try:
        items = base.documents(tenant=None if all_tenants else tenant)
        # unique among every tenant's documents: what `rag chunks` / `rag delete` resolve
        every = items if all_tenants else base.documents(tenant=None)
    finally:
        base.close()
    if as_json:
        _emit_json(
            [
                {**d.model_dump(mode="json"), "filename": d.rel_path or Path(d.source).name}
                for d in items
            ]
        )
        return
    short = short_ids(d.doc_id for d in every)
    table = Table(title=f"documents in {base.path}")
    for col in ("doc_id", "tenant", "file", "type", "status", "version", "chunks", "error"):
        table.add_column(col, overflow="fold")
    for d in items:
        table.add_row(
            short[d.doc_id],
            d.tenant,
            d.rel_path or Path(d.source).name,
            d.doc_type,
            d.status.value,
            str(d.version),
            str(d.chunk_count),
            d.error or "",
        )
    out.print(table)


@app.command()
def chunks(
    doc: Annotated[str, typer.Argument(help="Document id (or a unique prefix).")],
    kb: KbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Show a document's active chunks with heading paths and character spans."""
    base = _open(kb, read_only=True)
    try:
        items = base.chunks(_resolve_doc(base, doc))
    finally:
        base.close()
    if as_json:
        _emit_json([c.model_dump() for c in items])
        return
    for c in items:
        out.print(
            f"[bold cyan]#{c.chunk_index}[/bold cyan] chars {c.start_char}-{c.end_char} · "
            f"{c.token_count} tokens · {c.block_types}"
        )
        if c.title_path:
            out.print(f"[dim]{c.title_path}[/dim]")
        out.print(c.text)
        out.print()


@app.command()
def delete(
    doc: Annotated[str, typer.Argument(help="Document id (or a unique prefix).")],
    kb: KbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Delete a document, its chunks and its vectors."""
    base = _open(kb)
    try:
        doc_id = _resolve_doc(base, doc)
        deleted = base.delete(doc_id)
    finally:
        base.close()
    if as_json:
        _emit_json({"doc_id": doc_id, "deleted": deleted})
    else:
        out.print(f"deleted {doc_id}" if deleted else f"nothing to delete for {doc_id}")


@app.command()
def doctor(
    kb: KbOpt = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Report only, repair nothing.")
    ] = False,
    rebuild_vectors: Annotated[
        bool,
        typer.Option(
            "--rebuild-vectors",
            help="Re-create the vector collection when self-recall is below --min-recall.",
        ),
    ] = False,
    min_recall: Annotated[float, typer.Option("--min-recall", min=0, max=1)] = 0.99,
    sample: Annotated[
        int, typer.Option("--sample", min=1, help="Chunks queried by their own vector.")
    ] = 200,
    as_json: JsonOpt = False,
) -> None:
    """Reconcile the vector and keyword indexes with the ledger after a crash.

    Drops vectors of chunks that are not active and ledger/keyword rows of inactive versions,
    and reports self-recall: the share of sampled chunks found in their own vector's top 10.
    """
    base = _open(kb, read_only=dry_run)
    try:
        result = base.doctor(
            repair=not dry_run,
            sample=sample,
            rebuild_vectors=rebuild_vectors,
            min_recall=min_recall,
        )
    finally:
        base.close()
    if as_json:
        _emit_json(result)
    else:
        for key, value in result.items():
            out.print(f"{key:>20}: {value}")


@app.command()
def migrate(
    to: Annotated[
        str,
        typer.Option(
            "--to",
            help="Target database URL, e.g. postgresql+psycopg://user:pw@host/db (must be empty).",
        ),
    ],
    kb: KbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Copy the KB's ledger (documents, active chunks, keyword index, API keys, job queue) to
    another database, e.g. from the KB directory's SQLite file to PostgreSQL.

    Vectors stay where they are (same chunk ids). Afterwards run everything with
    RAG_DATABASE_URL=<target> and the same --kb / RAG_CHROMA_URL. The source is only read; the
    copy is one transaction on the target, which must hold no documents.
    """
    from sqlalchemy.exc import SQLAlchemyError

    from rag_app.store.ledger import Ledger
    from rag_app.store.migrate import MigrationError, copy_ledger

    settings = _settings(kb)
    source_url = settings.ledger_url()
    if source_url.startswith("sqlite:///") and not Path(source_url[len("sqlite:///") :]).exists():
        err.print(f"[red]error:[/red] no ledger at {source_url}: is --kb the KB directory?")
        raise typer.Exit(2)
    try:
        source, target = Ledger(source_url), Ledger(to)
    except (SQLAlchemyError, ValueError, ImportError) as exc:
        err.print(f"[red]error:[/red] can't open the database: {str(exc).splitlines()[0]}")
        raise typer.Exit(2) from exc
    try:
        with err.status("copying the ledger …"):
            counts = copy_ledger(source, target)
    except (MigrationError, SQLAlchemyError) as exc:
        err.print(f"[red]error:[/red] {str(exc).splitlines()[0]}")
        raise typer.Exit(1) from exc
    finally:
        source.close()
        target.close()
    if as_json:
        _emit_json({"source": _redact(source_url), "target": _redact(to), "rows": counts})
        return
    for name, n in counts.items():
        out.print(f"{name:>10}: {n}")
    out.print(f"done: run with RAG_DATABASE_URL={_redact(to)} (vectors unchanged)")


def _redact(url: str) -> str:
    """The URL without its password."""
    from sqlalchemy.engine import make_url

    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:
        return url


keys_app = typer.Typer(
    help="API keys of the service: each key has a tenant and a role (reader | editor).",
    no_args_is_help=True,
)
app.add_typer(keys_app, name="keys")


@keys_app.command("create")
def keys_create(
    tenant: Annotated[str, typer.Option("--tenant", "-t", help="Tenant the key acts for.")],
    role: Annotated[
        str, typer.Option("--role", "-r", help="reader (ask, read) or editor (also upload/delete).")
    ] = "reader",
    name: Annotated[str, typer.Option("--name", help="A label, e.g. who uses the key.")] = "",
    kb: KbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Create an API key and print it once (only its hash is stored)."""
    from rag_app.service.auth import Role, create_key
    from rag_app.store.ledger import Ledger

    if role not in {r.value for r in Role}:
        err.print(f"[red]error:[/red] --role must be reader or editor, not {role!r}")
        raise typer.Exit(2)
    ledger = Ledger(_settings(kb).ledger_url())
    try:
        key = create_key(ledger, tenant, role, name)
    except ValueError as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc
    finally:
        ledger.close()
    if as_json:
        _emit_json({"key": key, "tenant": tenant, "role": role, "key_id": key.split("_")[1]})
    else:
        err.print(f"created {role} key for tenant '{tenant}' (shown once; store it safely):")
        out.print(key)


@keys_app.command("list")
def keys_list(kb: KbOpt = None, as_json: JsonOpt = False) -> None:
    """List keys (ids, tenants, roles; never the keys themselves)."""
    from rag_app.service.auth import list_keys
    from rag_app.store.ledger import Ledger

    ledger = Ledger(_settings(kb).ledger_url())
    try:
        keys = list_keys(ledger)
    finally:
        ledger.close()
    rows = [
        {
            "key_id": k.key_id,
            "tenant": k.tenant,
            "role": k.role.value,
            "name": k.name,
            "revoked": k.revoked,
        }
        for k in keys
    ]
    if as_json:
        _emit_json(rows)
        return
    table = Table("key id", "tenant", "role", "name", "revoked")
    for k in keys:
        table.add_row(k.key_id, k.tenant, k.role.value, k.name, "yes" if k.revoked else "")
    out.print(table)


@keys_app.command("revoke")
def keys_revoke(
    key_id: Annotated[str, typer.Argument(help="The key id (second part of rk_<id>_…).")],
    kb: KbOpt = None,
) -> None:
    """Revoke a key: requests with it get 401 from now on."""
    from rag_app.service.auth import revoke_key
    from rag_app.store.ledger import Ledger

    ledger = Ledger(_settings(kb).ledger_url())
    try:
        done = revoke_key(ledger, key_id)
    finally:
        ledger.close()
    if not done:
        err.print(f"[red]error:[/red] no active key with id {key_id}")
        raise typer.Exit(1)
    err.print(f"revoked {key_id}")


@app.command()
def serve(
    kb: KbOpt = None,
    host: Annotated[str, typer.Option("--host", help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", "-p", help="TCP port.")] = 8000,
    workers: Annotated[
        int | None,
        typer.Option(
            "--workers",
            help="Ingestion workers [env RAG_WORKERS; default 1]: `rag worker` processes "
            "started (and restarted) by this one; 0 = leave jobs to `rag worker`s run elsewhere.",
        ),
    ] = None,
    in_process: Annotated[
        bool,
        typer.Option(
            "--workers-in-process",
            help="Run the workers as threads in the API process [env RAG_WORKERS_IN_PROCESS].",
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

    settings = _settings(kb)
    count = settings.workers if workers is None else workers
    children = None
    if not workers_in_process(settings, count, in_process):  # service/processes.py
        children = ServeProcesses(
            settings, workers=count, describe=f"rag serve on http://{host}:{port}"
        )
        try:
            settings = children.start()
        except (KnowledgeBaseBusy, RuntimeError, OSError) as exc:
            err.print(f"[red]error:[/red] {exc}")
            raise typer.Exit(2) from exc
    try:
        base = _open(kb, settings=settings)
        describe_writer(base.path, f"rag serve on http://{host}:{port}")
        application = create_app(base.settings, kb=base, workers=0 if children else count)
        where = f"{count} worker process(es)" if children else f"{count} worker thread(s)"
        err.print(f"serving {base.path} on http://{host}:{port} with {where} (UI /, docs /docs)")
        try:
            uvicorn.run(application, host=host, port=port, log_level="warning")
        finally:
            base.close()
    finally:
        if children is not None:
            children.stop()


@app.command()
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

    from rag_app.service.worker import Worker
    from rag_app.store.jobs import JobQueue

    base = _open(kb)
    queue = JobQueue(base.ledger, max_attempts=base.settings.job_max_attempts)

    def on_job(job: Any, result: Any) -> None:
        err.print(f"job {job.job_id}: {job.rel_path} → {result.status} {result.reason or ''}")

    runner = Worker(base, queue, lease_seconds=base.settings.job_lease_seconds, on_job=on_job)
    signal.signal(signal.SIGTERM, lambda *_: runner.stop())
    err.print(f"worker {runner.name} on {base.path}")
    try:
        _ = base.embed_model  # loaded before the first job, not during it
        done = runner.run(until_idle=once, max_jobs=max_jobs)
    except KeyboardInterrupt:
        done = runner.processed
    finally:
        base.close()
    err.print(f"processed {done} job(s)")


@app.command("eval")
def eval_cmd(
    qa: Annotated[
        Path | None, typer.Argument(help="Questions (JSONL, the shared evaluation schema).")
    ] = None,
    docs: Annotated[
        Path | None,
        typer.Option("--docs", help="Ingest this folder first, into a temporary KB (or --kb)."),
    ] = None,
    kb: KbOpt = None,
    tenant: TenantOpt = "default",
    k: Annotated[int, typer.Option("--k", "-k", min=1, max=100, help="Top k.")] = 5,
    limit: Annotated[
        int | None, typer.Option("--limit", min=1, help="Only the first N questions.")
    ] = None,
    report: Annotated[
        Path | None, typer.Option("--report", help="Write a Markdown report (+ PNG plots).")
    ] = None,
    json_out: Annotated[
        str | None,
        typer.Option(
            "--json", help="Write the run (with --compare: the deltas) as JSON; '-' = stdout."
        ),
    ] = None,
    ragas: Annotated[
        bool, typer.Option("--ragas", help="Also score with ragas (offline; LLM if configured).")
    ] = False,
    retrieve_only: Annotated[
        bool, typer.Option("--retrieve-only", help="Skip `ask`: retrieval metrics only.")
    ] = False,
    compact: Annotated[
        bool, typer.Option("--compact", help="Leave chunk texts out of the JSON.")
    ] = False,
    compare: Annotated[
        tuple[Path, Path] | None,
        typer.Option("--compare", help="Compare two saved runs: --compare A.json B.json."),
    ] = None,
) -> None:
    """Evaluate the knowledge base on a question file, overall and per category.

    Example: rag eval data/eval/sample_qa.jsonl --docs data/knowledge --report out/report.md
    --json out/run.json. Compare two runs: rag eval --compare base.json new.json.
    """
    from rag_app.eval import report as report_mod

    if compare:
        try:
            a, b = (report_mod.load_summary(p) for p in compare)
        except (OSError, ValueError) as exc:
            err.print(f"[red]error:[/red] {exc}")
            raise typer.Exit(2) from exc
        deltas = report_mod.compare(a, b)
        if json_out == "-":
            _emit_json(deltas)
            return
        if json_out:
            Path(json_out).write_text(json.dumps(deltas, ensure_ascii=False, indent=2) + "\n")
        _print_compare(deltas, compare[0].name, compare[1].name)
        return
    if qa is None:
        err.print("[red]error:[/red] give a question file (or --compare A.json B.json)")
        raise typer.Exit(2)
    if not qa.is_file():
        err.print(f"[red]error:[/red] question file {qa} does not exist")
        raise typer.Exit(2)

    from pipelines.evaluate import evaluate
    from rag_app.embeddings import EmbeddingLoadError
    from rag_app.kb import KnowledgeBaseError

    progress = Progress(
        TextColumn("[bold]{task.fields[stage]}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
        console=err,
        transient=True,
    )
    ingest_task = progress.add_task("", total=None, stage="ingesting", visible=docs is not None)
    eval_task = progress.add_task("", total=None, stage="evaluating", visible=False)
    passed = [0, 0]

    def on_file(result: Any, done: int, total: int) -> None:
        progress.update(
            ingest_task, completed=done, total=total, description=Path(result.path).name
        )

    def on_question(rec: Any, done: int, total: int) -> None:
        if rec.passed is not None:
            passed[0] += bool(rec.passed)
            passed[1] += 1
        rate = f" · pass {passed[0]}/{passed[1]}" if passed[1] else ""
        progress.update(
            eval_task, visible=True, completed=done, total=total, description=f"{rec.id}{rate}"
        )

    try:
        with progress:
            run = evaluate(
                qa,
                docs=docs,
                kb_dir=kb,
                k=k,
                tenant=tenant,
                limit=limit,
                ask=not retrieve_only,
                ragas=ragas,
                report=report,
                json_path=json_out if json_out not in (None, "-") else None,
                json_texts=not compact,
                progress=on_question,
                ingest_progress=on_file,
            )
    except (KnowledgeBaseError, EmbeddingLoadError, ValueError, FileNotFoundError) as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc
    if json_out == "-":
        sys.stdout.write(run.to_json(texts=not compact) + "\n")
        return
    _print_eval(run)
    if report:
        out.print(f"report: {report}")
        if report_mod.cjk_font() is None:
            err.print(f"[yellow]warning:[/yellow] {report_mod.NO_CJK_FONT}")
    if json_out:
        out.print(f"json: {json_out}")


def _print_eval(run: Any) -> None:
    from rich import box

    from rag_app.eval.report import fmt

    short = {k: v for k, v in _EVAL_COLUMNS.items() if k != "retrieve_ms_p50"}
    short["recall_at_k"] = f"R@{run.k}"

    def cell(key: str, value: Any) -> str:
        if value is None:
            return "–"
        if key == "mrr_at_k":
            return f"{value:.2f}"
        if key in ("avg_context_chars", "ask_ms_p50"):
            return f"{value:.0f}"
        return f"{value * 100:.0f}%"

    table = Table(box=box.SIMPLE_HEAD, padding=(0, 1, 0, 0), title_justify="left")
    table.title = f"rag eval · k={run.k} · {run.overall.get('n', 0)} questions"
    table.add_column("category", no_wrap=True, overflow="ellipsis", max_width=20)
    table.add_column("n", justify="right", no_wrap=True, min_width=3)
    for m in short:
        table.add_column(short[m], justify="right", no_wrap=True, min_width=4)
    for name, s in [*run.categories.items(), ("all", run.overall)]:
        style = "bold" if name == "all" else None
        table.add_row(name, str(s.get("n", 0)), *[cell(m, s.get(m)) for m in short], style=style)
    out.print(table)
    out.print(
        "[dim]pass = case pass rate, R/MRR = Recall/MRR@k of retrieve, src/kw = source/keyword "
        "hit, noA = no-answer accuracy, fRef = false-refusal rate, ctx = context chars, "
        "ask = p50 ms[/dim]"
    )
    o = run.overall
    out.print(
        "latency ms: "
        + ", ".join(
            f"{name} avg {fmt('x_ms_avg', o.get(f'{name}_ms_avg'))} "
            f"p50 {fmt('x_p50', o.get(f'{name}_ms_p50'))} "
            f"p95 {fmt('x_p95', o.get(f'{name}_ms_p95'))}"
            for name in ("retrieve", "ask")
        )
    )
    if o.get("errors"):
        out.print(f"[red]{o['errors']} questions raised errors (see the JSON)[/red]")
    if run.ragas:
        scores = run.ragas
        out.print(
            "ragas: "
            + ", ".join(f"{n} {v:.3f}" for n, v in scores["overall"].items() if v is not None)
        )


def _print_compare(deltas: dict[str, Any], a_name: str, b_name: str) -> None:
    from rich import box

    from rag_app.eval.report import fmt, fmt_delta, improved, label
    from rag_app.eval.runner import METRICS

    def colored(key: str, text: str, delta: Any) -> str:
        better = improved(key, delta)
        color = None if better is None else ("green" if better else "red")
        return f"[{color}]{text}[/{color}]" if color else text

    overall = Table(box=box.SIMPLE_HEAD, title=f"{b_name} vs {a_name} (delta = b - a)")
    for col in ("metric", a_name, b_name, "delta"):
        overall.add_column(col, justify="left" if col == "metric" else "right", overflow="fold")
    for m in ["n", *METRICS]:
        cell = deltas["overall"][m]
        delta_text = str(cell["delta"]) if m == "n" else fmt_delta(m, cell["delta"])
        overall.add_row(
            label(m), fmt(m, cell["a"]), fmt(m, cell["b"]), colored(m, delta_text, cell["delta"])
        )
    out.print(overall)

    short = dict(_EVAL_COLUMNS)

    def compact(key: str, delta: Any) -> str:
        if delta is None:
            return "–"
        if key == "mrr_at_k":
            text = f"{delta:+.2f}"
        elif key in ("avg_context_chars", "retrieve_ms_p50", "ask_ms_p50"):
            text = f"{delta:+.0f}"
        else:
            text = f"{delta * 100:+.0f}"
        return colored(key, text, delta)

    table = Table(box=box.SIMPLE_HEAD, padding=(0, 1, 0, 0), title_justify="left")
    table.title = "delta per category (rates in percentage points)"
    table.add_column("category", no_wrap=True, overflow="ellipsis", max_width=20)
    for m in short:
        table.add_column(short[m], justify="right", no_wrap=True)
    for name, block in [*deltas["categories"].items(), ("all", deltas["overall"])]:
        table.add_row(
            name,
            *[compact(m, block[m]["delta"]) for m in short],
            style="bold" if name == "all" else None,
        )
    out.print(table)


if __name__ == "__main__":  # pragma: no cover
    app()
