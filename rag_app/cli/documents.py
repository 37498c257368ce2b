"""``rag ingest``, ``docs``, ``chunks``, ``delete``, ``doctor`` and ``migrate``: the commands
that fill, list and maintain a knowledge base."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from rag_app.cli.common import (
    JsonOpt,
    KbOpt,
    TenantOpt,
    check_collections,
    emit_json,
    err,
    kb_settings,
    open_kb,
    out,
    resolve_doc,
)
from rag_app.cli_output import short_ids

if TYPE_CHECKING:
    from rag_app.types import FileResult


def ingest(
    paths: Annotated[list[Path], typer.Argument(help="Files and folders (recursive).")],
    kb: KbOpt = None,
    tenant: TenantOpt = "default",
    collection: Annotated[
        str | None,
        typer.Option(
            "--collection",
            "-c",
            help="Put the files into this collection (create it first: rag collections create).",
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Parse, chunk, embed and store documents (.md .txt .pdf .docx .html .xlsx .xls .csv .pptx).

    Unchanged files are skipped (content hash); a changed file replaces its old chunks.
    Exit code 1 when any file failed (the others are still ingested). With --collection, every
    file given (new, unchanged or failed, as an upload) is put into it.
    """
    from rag_app.embeddings import EmbeddingLoadError

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

    def on_file(result: FileResult, done: int, total: int) -> None:
        progress.update(task, completed=done, total=total, description=Path(result.path).name)

    with open_kb(kb) as base:
        check_collections(base, tenant, [collection] if collection else None)
        try:
            with progress:
                report = base.ingest(paths, tenant=tenant, progress=on_file)
        except EmbeddingLoadError as exc:
            err.print(f"[red]error:[/red] {exc}")
            raise typer.Exit(2) from exc
        if collection:
            # as an upload into it: a file that failed is listed there with its reason
            placed = [f.doc_id for f in report.files if f.doc_id]
            base.collections.add_documents(tenant, collection, placed)
    if as_json:
        emit_json(report.model_dump())
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


def docs(
    kb: KbOpt = None,
    tenant: TenantOpt = "default",
    all_tenants: Annotated[bool, typer.Option("--all-tenants", help="List every tenant.")] = False,
    collection: Annotated[
        str | None, typer.Option("--collection", "-c", help="Only this collection's documents.")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """List documents with their status, version and chunk count.

    The doc_id column shows each id's shortest unique prefix (8 characters or more), which
    `rag chunks` and `rag delete` accept; --json has the full ids.
    """
    with open_kb(kb, read_only=True) as base:
        within = None
        if collection:
            check_collections(base, tenant, [collection])
            within = base.collections.ids(tenant, [collection])
        items = base.documents.list(tenant=None if all_tenants else tenant, collections=within)
        # unique among every tenant's documents: what `rag chunks` / `rag delete` resolve
        every = items if all_tenants else base.documents.list(tenant=None)
    if as_json:
        emit_json(
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


def chunks(
    doc: Annotated[str, typer.Argument(help="Document id (or a unique prefix).")],
    kb: KbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Show a document's active chunks with heading paths and character spans."""
    with open_kb(kb, read_only=True) as base:
        items = base.documents.chunks(resolve_doc(base, doc))
    if as_json:
        emit_json([c.model_dump() for c in items])
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


def delete(
    doc: Annotated[str, typer.Argument(help="Document id (or a unique prefix).")],
    kb: KbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Delete a document, its chunks and its vectors."""
    with open_kb(kb) as base:
        doc_id = resolve_doc(base, doc)
        deleted = base.documents.delete(doc_id)
    if as_json:
        emit_json({"doc_id": doc_id, "deleted": deleted})
    else:
        out.print(f"deleted {doc_id}" if deleted else f"nothing to delete for {doc_id}")


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
    with open_kb(kb, read_only=dry_run) as base:
        result = base.doctor(
            repair=not dry_run,
            sample=sample,
            rebuild_vectors=rebuild_vectors,
            min_recall=min_recall,
        )
    if as_json:
        emit_json(result)
    else:
        for key, value in result.items():
            out.print(f"{key:>20}: {value}")


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

    settings = kb_settings(kb)
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
        emit_json({"source": _redact(source_url), "target": _redact(to), "rows": counts})
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
