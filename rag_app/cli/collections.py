"""``rag collections``: named groups of a tenant's documents (HR policies, IT manuals), which
``rag ask``, ``rag retrieve``, ``rag chat`` and ``rag docs`` take with ``--collection``."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import typer
from rich.table import Table

from rag_app.cli.common import (
    JsonOpt,
    KbOpt,
    TenantOpt,
    emit_json,
    err,
    open_kb,
    out,
    resolve_doc,
)

collections_app = typer.Typer(
    help="Collections: named groups of a tenant's documents. Create one, put documents in "
    "(rag ingest --collection, or add), then ask within it: rag ask -c NAME '…'.",
    no_args_is_help=True,
)

NameArg = Annotated[str, typer.Argument(help="The collection's name, e.g. HR制度.")]
DocsArg = Annotated[list[str], typer.Argument(help="Document ids (or unique prefixes; rag docs).")]


def _fail(exc: Exception) -> typer.Exit:
    err.print(f"[red]error:[/red] {exc}", soft_wrap=True)
    return typer.Exit(2)


@collections_app.command("list")
def list_collections(
    kb: KbOpt = None, tenant: TenantOpt = "default", as_json: JsonOpt = False
) -> None:
    """The tenant's collections with their document counts."""
    with open_kb(kb, read_only=True) as base:
        found = base.collections.all(tenant)
    if as_json:
        emit_json([c.model_dump() for c in found])
        return
    if not found:
        out.print(f"no collections in tenant {tenant!r} (create one: rag collections create NAME)")
        return
    table = Table("name", "documents", "created")
    for c in found:
        created = datetime.fromtimestamp(c.created_at).astimezone().strftime("%Y-%m-%d %H:%M")
        table.add_row(c.name, str(c.documents), created)
    out.print(table)


@collections_app.command("create")
def create(name: NameArg, kb: KbOpt = None, tenant: TenantOpt = "default") -> None:
    """Create an empty collection."""
    from rag_app.store.collections import CollectionError

    with open_kb(kb) as base:
        try:
            base.collections.create(tenant, name)
        except CollectionError as exc:
            raise _fail(exc) from exc
    err.print(f"created collection {name.strip()!r} in tenant {tenant!r}")


@collections_app.command("rename")
def rename(
    name: NameArg,
    new_name: Annotated[str, typer.Argument(help="Its new name.")],
    kb: KbOpt = None,
    tenant: TenantOpt = "default",
) -> None:
    """Rename a collection (its documents and API keys' limits follow it)."""
    from rag_app.store.collections import CollectionError, CollectionNotFound

    with open_kb(kb) as base:
        try:
            base.collections.rename(tenant, name, new_name)
        except (CollectionError, CollectionNotFound) as exc:
            raise _fail(exc) from exc
    err.print(f"renamed {name!r} to {new_name.strip()!r}")


@collections_app.command("delete")
def delete(
    name: NameArg,
    kb: KbOpt = None,
    tenant: TenantOpt = "default",
    delete_documents: Annotated[
        bool,
        typer.Option(
            "--delete-documents",
            help="Also delete its documents that are in no other collection (default: they "
            "stay in the knowledge base).",
        ),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Delete a collection. Its documents stay unless --delete-documents."""
    from rag_app.store.collections import CollectionNotFound

    with open_kb(kb) as base:
        try:
            alone, elsewhere = base.collections.delete(tenant, name)
        except CollectionNotFound as exc:
            raise _fail(exc) from exc
        if delete_documents:  # those in no other collection, everywhere
            for doc_id in alone:
                base.documents.delete(doc_id)
    deleted = alone if delete_documents else []
    kept = elsewhere if delete_documents else alone + elsewhere
    if as_json:
        emit_json({"name": name, "documents_deleted": deleted, "documents_kept": kept})
        return
    err.print(
        f"deleted collection {name!r}: {len(deleted)} document(s) deleted, {len(kept)} kept"
        + (" (in another collection)" if delete_documents and kept else "")
    )


@collections_app.command("add")
def add(name: NameArg, doc_ids: DocsArg, kb: KbOpt = None, tenant: TenantOpt = "default") -> None:
    """Put documents of the tenant into a collection."""
    from rag_app.store.collections import CollectionNotFound

    with open_kb(kb) as base:
        ids = [resolve_doc(base, d) for d in doc_ids]
        foreign = [d for d in ids if (doc := base.documents.get(d)) is None or doc.tenant != tenant]
        if foreign:
            err.print(f"[red]error:[/red] not documents of tenant {tenant!r}: {', '.join(foreign)}")
            raise typer.Exit(2)
        try:
            added = base.collections.add_documents(tenant, name, ids)
        except CollectionNotFound as exc:
            raise _fail(exc) from exc
    err.print(f"added {added} document(s) to {name!r} ({len(ids) - added} were in it)")


@collections_app.command("remove")
def remove(
    name: NameArg, doc_ids: DocsArg, kb: KbOpt = None, tenant: TenantOpt = "default"
) -> None:
    """Take documents out of a collection (they stay in the knowledge base)."""
    from rag_app.store.collections import CollectionNotFound

    with open_kb(kb) as base:
        ids = [resolve_doc(base, d) for d in doc_ids]
        try:
            removed = base.collections.remove_documents(tenant, name, ids)
        except CollectionNotFound as exc:
            raise _fail(exc) from exc
    err.print(f"removed {removed} document(s) from {name!r}")
