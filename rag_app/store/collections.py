"""Collections: named groups of a tenant's documents (HR policies, IT manuals, product docs).

A document may be in several collections, or in none; deleting a collection removes the group
(its documents stay unless the caller deletes them: :meth:`CollectionStore.delete` says which
documents were in it and in no other). A question asked within collections is scoped to their
documents *before* retrieval, in both branches, as a tenant is (:meth:`CollectionStore.scope`
gives the document ids for :class:`~rag_app.retrieval.scope.Scope`). An API key may be limited
to some collections (``api_key_collections``; no row: the whole tenant).
"""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import Iterable, Sequence
from typing import Any

from pydantic import BaseModel, Field
from sqlalchemy import Select, and_, delete, func, insert, select, update
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import IntegrityError

from rag_app.store.schema import (
    api_key_collections,
    collection_documents,
    doc_collections,
    documents,
)

NAME_MAX = 64
# no path separators or control characters (a name is part of URLs and CLI arguments)
_BAD_NAME = re.compile(r"[/\\\x00-\x1f\x7f]")


class Collection(BaseModel):
    collection_id: str
    name: str
    created_at: float = Field(description="Epoch seconds.")
    documents: int = Field(0, description="Documents of the tenant in it.")


class CollectionError(ValueError):
    """A bad or taken collection name (the message says which)."""


class CollectionNameTaken(CollectionError):
    """Another collection of the tenant has that name."""


class CollectionNotFound(LookupError):
    """No collection of that name in the tenant."""

    def __init__(self, name: str) -> None:
        super().__init__(f"no collection {name!r}")
        self.name = name


class CollectionForbidden(PermissionError):
    """The API key is limited to other collections."""

    def __init__(self, name: str) -> None:
        super().__init__(f"this key may not use collection {name!r}")
        self.name = name


def documents_in(collection_ids: Sequence[str]) -> Select[Any]:
    """The ids of the documents in these collections, as a query (a scope, a document listing's
    filter)."""
    return select(collection_documents.c.doc_id).where(
        collection_documents.c.collection_id.in_(list(collection_ids))
    )


def check_name(name: str) -> str:
    """The name, stripped; CollectionError when it is empty, too long or has '/' or a control
    character."""
    clean = (name or "").strip()
    if not clean:
        raise CollectionError("a collection needs a name")
    if len(clean) > NAME_MAX:
        raise CollectionError(f"a collection name has at most {NAME_MAX} characters")
    if _BAD_NAME.search(clean):
        raise CollectionError("a collection name may not contain '/', '\\' or control characters")
    return clean


class CollectionStore:
    """The collections of a ledger (all tenants; every call names its tenant)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    # ----- collections ----------------------------------------------------------------------
    def create(self, tenant: str, name: str) -> Collection:
        clean = check_name(name)
        found = Collection(collection_id=secrets.token_hex(8), name=clean, created_at=time.time())
        try:
            with self.engine.begin() as conn:
                conn.execute(
                    insert(doc_collections).values(
                        collection_id=found.collection_id,
                        tenant=tenant,
                        name=clean,
                        created_at=found.created_at,
                    )
                )
        except IntegrityError:
            raise CollectionNameTaken(f"collection {clean!r} exists") from None
        return found

    def all(self, tenant: str, only: Iterable[str] | None = None) -> list[Collection]:
        """The tenant's collections by name, with their document counts (``only``: these
        collection ids)."""
        count = (
            select(func.count())
            .select_from(
                collection_documents.join(
                    documents, documents.c.doc_id == collection_documents.c.doc_id
                )
            )
            .where(
                and_(
                    collection_documents.c.collection_id == doc_collections.c.collection_id,
                    documents.c.tenant == tenant,
                )
            )
            .scalar_subquery()
        )
        stmt = (
            select(doc_collections, count.label("documents"))
            .where(doc_collections.c.tenant == tenant)
            .order_by(doc_collections.c.name)
        )
        if only is not None:
            stmt = stmt.where(doc_collections.c.collection_id.in_(list(only)))
        with self.engine.connect() as conn:
            rows = conn.execute(stmt).mappings().all()
        return [
            Collection(
                collection_id=r["collection_id"],
                name=r["name"],
                created_at=r["created_at"],
                documents=int(r["documents"]),
            )
            for r in rows
        ]

    def get(self, tenant: str, name: str) -> Collection:
        """The collection ``name`` of ``tenant`` (CollectionNotFound otherwise)."""
        (found,) = self.all(tenant, only=self.ids(tenant, [name]))
        return found

    def names(self, tenant: str, ids: Sequence[str]) -> list[str]:
        """The names of these collection ids of ``tenant`` (deleted ones left out), in order."""
        by_id = {c.collection_id: c.name for c in self.all(tenant, only=ids)} if ids else {}
        return [by_id[i] for i in ids if i in by_id]

    def _id(self, conn: Connection, tenant: str, name: str) -> str:
        found = conn.execute(
            select(doc_collections.c.collection_id).where(
                and_(doc_collections.c.tenant == tenant, doc_collections.c.name == name.strip())
            )
        ).scalar()
        if found is None:
            raise CollectionNotFound(name)
        return str(found)

    def rename(self, tenant: str, name: str, new_name: str) -> Collection:
        clean = check_name(new_name)
        try:
            with self.engine.begin() as conn:
                collection_id = self._id(conn, tenant, name)
                conn.execute(
                    update(doc_collections)
                    .where(doc_collections.c.collection_id == collection_id)
                    .values(name=clean)
                )
        except IntegrityError:
            raise CollectionNameTaken(f"collection {clean!r} exists") from None
        return self.get(tenant, clean)

    def delete(self, tenant: str, name: str) -> tuple[list[str], list[str]]:
        """Remove the collection (its documents stay). Returns its documents that are in no
        other collection and those that are (for a caller that deletes the former)."""
        with self.engine.begin() as conn:
            collection_id = self._id(conn, tenant, name)
            members = set(
                conn.execute(
                    select(collection_documents.c.doc_id).where(
                        collection_documents.c.collection_id == collection_id
                    )
                ).scalars()
            )
            conn.execute(
                delete(collection_documents).where(
                    collection_documents.c.collection_id == collection_id
                )
            )
            conn.execute(
                delete(doc_collections).where(doc_collections.c.collection_id == collection_id)
            )
            elsewhere = set(
                conn.execute(
                    select(collection_documents.c.doc_id).where(
                        collection_documents.c.doc_id.in_(members)
                    )
                ).scalars()
            )
        # grants of keys to it stay: a key limited to it keeps its limit (and sees less)
        return sorted(members - elsewhere), sorted(members & elsewhere)

    # ----- membership -----------------------------------------------------------------------
    def add_documents(self, tenant: str, name: str, doc_ids: Sequence[str]) -> int:
        """Put documents into the collection; returns how many were not in it yet."""
        now = time.time()
        with self.engine.begin() as conn:
            collection_id = self._id(conn, tenant, name)
            present = set(
                conn.execute(
                    select(collection_documents.c.doc_id).where(
                        and_(
                            collection_documents.c.collection_id == collection_id,
                            collection_documents.c.doc_id.in_(list(doc_ids)),
                        )
                    )
                ).scalars()
            )
            new = sorted(set(doc_ids) - present)
            if new:
                conn.execute(
                    insert(collection_documents),
                    [{"collection_id": collection_id, "doc_id": d, "added_at": now} for d in new],
                )
        return len(new)

    def remove_documents(self, tenant: str, name: str, doc_ids: Sequence[str]) -> int:
        with self.engine.begin() as conn:
            collection_id = self._id(conn, tenant, name)
            result = conn.execute(
                delete(collection_documents).where(
                    and_(
                        collection_documents.c.collection_id == collection_id,
                        collection_documents.c.doc_id.in_(list(doc_ids)),
                    )
                )
            )
        return int(result.rowcount or 0)

    def names_of(self, doc_ids: Sequence[str]) -> dict[str, list[str]]:
        """Each document's collections, by name (documents in none are left out)."""
        if not doc_ids:
            return {}
        stmt = (
            select(collection_documents.c.doc_id, doc_collections.c.name)
            .join(
                doc_collections,
                doc_collections.c.collection_id == collection_documents.c.collection_id,
            )
            .where(collection_documents.c.doc_id.in_(list(doc_ids)))
            .order_by(doc_collections.c.name)
        )
        found: dict[str, list[str]] = {}
        with self.engine.connect() as conn:
            for doc_id, name in conn.execute(stmt):
                found.setdefault(doc_id, []).append(name)
        return found

    # ----- scope ----------------------------------------------------------------------------
    def ids(self, tenant: str, names: Sequence[str]) -> list[str]:
        """The ids of the named collections (CollectionNotFound for the first unknown one)."""
        with self.engine.connect() as conn:
            return [self._id(conn, tenant, name) for name in names]

    def scope(
        self,
        tenant: str,
        names: Sequence[str] | None,
        doc_ids: Sequence[str] | None = None,
        allowed: Sequence[str] | None = None,
        ids: Sequence[str] = (),
    ) -> tuple[str, ...] | None:
        """The document ids a question may see: those of the named collections (or of the
        collection ``ids``, e.g. a conversation's, when none are named; all of ``allowed`` when
        neither is given and the key is limited), within ``doc_ids`` when given. None: no limit
        beyond ``doc_ids`` (which is then returned as given).

        Raises CollectionNotFound for an unknown name, CollectionForbidden for a collection the
        key (``allowed``: its collection ids) may not use."""
        wanted = [n for n in (names or []) if n.strip()]
        if not wanted and not ids and allowed is None:
            return tuple(doc_ids) if doc_ids is not None else None
        if wanted or ids:
            chosen = self.ids(tenant, wanted) if wanted else list(ids)
            if allowed is not None:
                for name, collection_id in zip(wanted or chosen, chosen, strict=True):
                    if collection_id not in allowed:
                        raise CollectionForbidden(name)
        else:
            chosen = list(allowed or [])
        members: set[str] = set()
        if chosen:
            with self.engine.connect() as conn:
                members = set(conn.execute(documents_in(chosen)).scalars())
        if doc_ids is not None:
            members &= set(doc_ids)
        return tuple(sorted(members))

    # ----- keys -----------------------------------------------------------------------------
    def limit_key(self, key_id: str, tenant: str, names: Sequence[str]) -> None:
        """Limit an API key to these collections of its tenant."""
        chosen = self.ids(tenant, names)
        with self.engine.begin() as conn:
            conn.execute(delete(api_key_collections).where(api_key_collections.c.key_id == key_id))
            if chosen:
                conn.execute(
                    insert(api_key_collections),
                    [{"key_id": key_id, "collection_id": c} for c in sorted(set(chosen))],
                )

    def key_limit(self, key_id: str) -> tuple[str, ...] | None:
        """The collection ids a key is limited to; None: not limited."""
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(api_key_collections.c.collection_id).where(
                    api_key_collections.c.key_id == key_id
                )
            ).scalars()
            found = tuple(sorted(rows))
        return found or None
