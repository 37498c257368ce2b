"""/api/collections: named groups of the tenant's documents; questions asked within them.

Creating, renaming and deleting collections takes an editor key of the whole tenant; putting
documents in or taking them out, an editor key that may use the collection. A key limited to
some collections (``rag keys create --collections``) sees only those and their documents.
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, HTTPException, Query, status

from rag_app.service.access import own_document, remove_document, usable
from rag_app.service.auth import KeyInfo
from rag_app.service.deps import EditorDep, KeyDep, StateDep
from rag_app.service.json_body import body_schema, json_body
from rag_app.service.schemas_collections import (
    CollectionDeleted,
    CollectionIn,
    CollectionList,
    CollectionOut,
    MembersIn,
    MembersOut,
)
from rag_app.store.collections import CollectionError, CollectionNameTaken, CollectionNotFound

router = APIRouter(prefix="/api/collections", tags=["collections"])

CollectionBody = Annotated[CollectionIn, Depends(json_body(CollectionIn))]
MembersBody = Annotated[MembersIn, Depends(json_body(MembersIn))]


def _whole_tenant(key: KeyInfo) -> None:
    if key.collections is not None:
        raise HTTPException(
            status.HTTP_403_FORBIDDEN,
            "this key is limited to some collections: creating, renaming and deleting "
            "collections takes an editor key of the whole tenant",
        )


def _bad_name(exc: CollectionError) -> HTTPException:
    taken = isinstance(exc, CollectionNameTaken)
    return HTTPException(status.HTTP_409_CONFLICT if taken else 422, str(exc))


@router.get("", response_model=CollectionList)
def list_collections(key: KeyDep, state: StateDep) -> CollectionList:
    """The tenant's collections (a limited key's: its own), by name, with document counts."""
    found = state.kb.collections.all(key.tenant, only=key.collections)
    return CollectionList(collections=[CollectionOut.of(c) for c in found])


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    response_model=CollectionOut,
    openapi_extra=body_schema(CollectionIn),
)
def create_collection(key: EditorDep, body: CollectionBody, state: StateDep) -> CollectionOut:
    """Create a collection (409 when the name is taken)."""
    _whole_tenant(key)
    try:
        return CollectionOut.of(state.kb.collections.create(key.tenant, body.name))
    except CollectionError as exc:
        raise _bad_name(exc) from None


@router.patch("/{name}", response_model=CollectionOut, openapi_extra=body_schema(CollectionIn))
def rename_collection(
    name: str, key: EditorDep, body: CollectionBody, state: StateDep
) -> CollectionOut:
    """Rename a collection (its documents and keys' limits follow it)."""
    _whole_tenant(key)
    try:
        return CollectionOut.of(state.kb.collections.rename(key.tenant, name, body.name))
    except CollectionNotFound as exc:
        raise HTTPException(status.HTTP_404_NOT_FOUND, str(exc)) from None
    except CollectionError as exc:
        raise _bad_name(exc) from None


@router.delete("/{name}", response_model=CollectionDeleted)
def delete_collection(
    name: str,
    key: EditorDep,
    state: StateDep,
    documents: Annotated[
        Literal["keep", "delete"],
        Query(
            description="keep (default): its documents stay in the knowledge base; delete: "
            "those in no other collection are deleted too (the rest stay)."
        ),
    ] = "keep",
) -> CollectionDeleted:
    """Delete a collection; say what becomes of its documents with ``documents``."""
    _whole_tenant(key)
    try:
        alone, elsewhere = state.kb.collections.delete(key.tenant, name)
    except CollectionNotFound as exc:
        raise HTTPException(status.HTTP_404_NOT_FOUND, str(exc)) from None
    if documents == "delete":
        for doc_id in alone:  # as DELETE /api/documents/{id}: jobs, rows, vectors, uploads
            remove_document(state, doc_id)
    return CollectionDeleted(
        name=name,
        documents_deleted=alone if documents == "delete" else [],
        documents_kept=elsewhere if documents == "delete" else alone + elsewhere,
    )


@router.post("/{name}/documents", response_model=MembersOut, openapi_extra=body_schema(MembersIn))
def add_documents(name: str, key: EditorDep, body: MembersBody, state: StateDep) -> MembersOut:
    """Put documents of the tenant into the collection (404 for one that is not yours)."""
    usable(state, key, name)
    for doc_id in body.doc_ids:  # the tenant's, and a limited key's own (404 otherwise)
        own_document(state, key, doc_id)
    added = state.kb.collections.add_documents(key.tenant, name, body.doc_ids)
    return MembersOut(name=name, changed=added)


@router.delete("/{name}/documents", response_model=MembersOut, openapi_extra=body_schema(MembersIn))
def remove_documents(name: str, key: EditorDep, body: MembersBody, state: StateDep) -> MembersOut:
    """Take documents out of the collection (they stay in the knowledge base)."""
    usable(state, key, name)
    removed = state.kb.collections.remove_documents(key.tenant, name, body.doc_ids)
    return MembersOut(name=name, changed=removed)
