"""Which documents and collections an API key may use: the scope of a question (collections,
documents), a collection by name, a document by id, and a document's removal with what the
service keeps of it. Shared by the routes (documents, questions, conversations, collections,
feedback)."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Sequence

from fastapi import HTTPException, status

from rag_app.faults import fault_point
from rag_app.service.auth import KeyInfo
from rag_app.service.deps import ServiceState
from rag_app.store.collections import Collection, CollectionForbidden, CollectionNotFound
from rag_app.store.feedback import FeedbackRecord
from rag_app.types import DocumentInfo


def scope_for(
    state: ServiceState,
    key: KeyInfo,
    collections: str | Sequence[str] | None,
    doc_ids: Sequence[str] | None = None,
    ids: Sequence[str] = (),
) -> tuple[str, ...] | None:
    """The documents a question of ``key`` may read: those of the named collections (or of
    the collection ``ids`` when none is named: a conversation's; of a limited key: of its
    collections when neither is given), within ``doc_ids``; 404 for an unknown collection, 403
    for one the key may not use."""
    names = as_names(collections)
    try:
        return state.kb.collections.scope(
            key.tenant, names, doc_ids, allowed=key.collections, ids=ids
        )
    except CollectionNotFound as exc:
        raise HTTPException(status.HTTP_404_NOT_FOUND, str(exc)) from None
    except CollectionForbidden as exc:
        raise HTTPException(status.HTTP_403_FORBIDDEN, str(exc)) from None


def as_names(collections: str | Sequence[str] | None) -> list[str]:
    """A request's ``collection`` (a name, a list of them, or none) as a list."""
    return [collections] if isinstance(collections, str) else list(collections or [])


def usable(state: ServiceState, key: KeyInfo, name: str) -> Collection:
    """The collection ``name`` of the key's tenant, if the key may use it (404 / 403)."""
    try:
        found = state.kb.collections.get(key.tenant, name)
    except CollectionNotFound as exc:
        raise HTTPException(status.HTTP_404_NOT_FOUND, str(exc)) from None
    if key.collections is not None and found.collection_id not in key.collections:
        raise HTTPException(status.HTTP_403_FORBIDDEN, str(CollectionForbidden(name)))
    return found


def own_document(state: ServiceState, key: KeyInfo, doc_id: str) -> DocumentInfo:
    """The document, if it belongs to the key's tenant (and, for a key limited to some
    collections, is in one of them); another's document is a plain 404."""
    doc = state.kb.documents.get(doc_id)
    if doc is None or doc.tenant != key.tenant or scope_for(state, key, None, [doc_id]) == ():
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no document {doc_id}")
    return doc


def can_read(state: ServiceState, key: KeyInfo, doc_id: str) -> bool:
    """Whether the document exists, is the key's tenant's and (for a key limited to some
    collections) is in one of them."""
    doc = state.kb.documents.get(doc_id)
    return (
        doc is not None and doc.tenant == key.tenant and scope_for(state, key, None, [doc_id]) != ()
    )


def own_collection_names(state: ServiceState, key: KeyInfo) -> set[str]:
    """The names of the collections a limited key may use (none for a key of the whole
    tenant, which is limited by none)."""
    if key.collections is None:
        return set()
    return {c.name for c in state.kb.collections.all(key.tenant, only=key.collections)}


def visible_collections(state: ServiceState, key: KeyInfo, names: list[str]) -> list[str]:
    """The collection names a key may see among ``names``: all for a key of the whole tenant,
    a limited key's own otherwise (a document shared with other collections names only these)."""
    if key.collections is None or not names:
        return names
    mine = own_collection_names(state, key)
    return [name for name in names if name in mine]


def feedback_filter(
    state: ServiceState, key: KeyInfo, collection: str | None = None
) -> Callable[[FeedbackRecord], bool]:
    """Whether a feedback record belongs to the collection (or, for a limited key without one,
    to its collections): asked there, or citing one of its documents."""
    if collection is None and key.collections is None:
        return lambda record: True
    names = (
        {usable(state, key, collection).name} if collection else own_collection_names(state, key)
    )
    members = set(scope_for(state, key, collection) or ())
    return lambda record: bool(
        names & set(record.settings.get("collections") or [])
        or members & {str(s.get("doc_id", "")) for s in record.sources}
    )


def sources_within_reach(
    state: ServiceState, key: KeyInfo, records: list[FeedbackRecord]
) -> list[FeedbackRecord]:
    """The records as a limited key sees them: no source outside its collections."""
    if key.collections is not None:
        reach = set(scope_for(state, key, None) or ())
        for record in records:
            record.sources = [s for s in record.sources if str(s.get("doc_id", "")) in reach]
    return records


def remove_document(state: ServiceState, doc_id: str) -> None:
    """Delete a document everywhere the service keeps it: its queued jobs first (so that none
    ingests it again), then the ledger, keyword and vector rows, then its stored uploads."""
    state.queue.cancel_for_document(doc_id)
    state.kb.documents.delete(doc_id)
    fault_point("delete.after_stores")
    shutil.rmtree(state.upload_dir / doc_id, ignore_errors=True)
