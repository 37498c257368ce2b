"""/api/documents: upload, list, read, chunks, reparse, delete (tenant from the API key)."""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, Request, status
from fastapi.responses import JSONResponse

from rag_app.ingestion.files import make_doc_id
from rag_app.service.access import (
    can_read,
    own_document,
    remove_document,
    usable,
    visible_collections,
)
from rag_app.service.auth import KeyInfo
from rag_app.service.deps import EditorDep, KeyDep, ServiceState, StateDep
from rag_app.service.schemas import (
    Accepted,
    ChunkList,
    Deleted,
    DocumentList,
    DocumentOut,
)
from rag_app.service.upload_body import check_declared_length, read_upload
from rag_app.service.uploads import UploadRejected, check_content, sanitize_filename
from rag_app.store.collections import Collection
from rag_app.store.jobs import PendingDocument
from rag_app.types import DocumentInfo

router = APIRouter(prefix="/api/documents", tags=["documents"])

# the request body's schema for /docs: the route reads the body itself (upload_body.py)
_UPLOAD_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "required": ["file"],
                    "properties": {"file": {"type": "string", "format": "binary"}},
                }
            }
        },
    }
}


def _out(state: ServiceState, key: KeyInfo, doc: DocumentInfo) -> DocumentOut:
    job = state.queue.latest_for([doc.doc_id]).get(doc.doc_id)
    names = state.kb.collections.names_of([doc.doc_id]).get(doc.doc_id, [])
    return DocumentOut.of(doc, job, visible_collections(state, key, names))


def _upload_collection(state: ServiceState, key: KeyInfo, name: str | None) -> Collection | None:
    """The collection an upload goes into: the one named (404 / 403), a limited key's only
    collection when none is named, else none (422 for a limited key with several)."""
    if name:
        return usable(state, key, name)
    if key.collections is None:
        return None
    mine = state.kb.collections.all(key.tenant, only=key.collections)
    if len(mine) == 1:
        return mine[0]
    raise HTTPException(
        422,
        "this key is limited to several collections: name one with ?collection=",
    )


NAME_TAKEN = (
    "a document of this name exists that this key may not change; rename the file and upload "
    "it again"
)


def _target_id(state: ServiceState, key: KeyInfo, name: str, into: Collection | None) -> str:
    """The document an upload of ``name`` writes: the tenant's document of that name (a new
    version of it) when the key may read it or none exists. A key limited to some collections
    never writes a document outside them: when the name is taken there, its upload becomes a
    separate document of that name in its collection (409 naming nothing when that one too is
    out of reach, e.g. taken out of the collection since)."""
    doc_id = make_doc_id(key.tenant, name)
    if _writable(state, key, doc_id):
        return doc_id
    if into is None:  # a key of the whole tenant reads every document; a limited one has `into`
        raise HTTPException(status.HTTP_409_CONFLICT, NAME_TAKEN)
    own_id = make_doc_id(key.tenant, f"{name}\n{into.collection_id}")
    if _writable(state, key, own_id):
        return own_id
    raise HTTPException(status.HTTP_409_CONFLICT, NAME_TAKEN)


def _writable(state: ServiceState, key: KeyInfo, doc_id: str) -> bool:
    """No document holds this id yet, or the key may read (and so write) the one that does."""
    return state.kb.documents.get(doc_id) is None or can_read(state, key, doc_id)


def _duplicate(state: ServiceState, key: KeyInfo, digest: str) -> str | None:
    """A document the key may read that holds (or is queued with) the same content. Copies out
    of the key's reach are not named: the upload then goes ahead as a document of its own."""
    found = state.kb.documents.with_hash(key.tenant, digest)
    found += state.queue.pending_hashes(key.tenant, digest)
    return next((doc_id for doc_id in found if can_read(state, key, doc_id)), None)


def _store(upload_dir: Path, doc_id: str, digest: str, name: str, data: bytes) -> Path:
    """Write the upload under uploads/<doc id>/<hash>/<name>, atomically."""
    folder = upload_dir / doc_id / digest[:16]
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / name
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".upload-")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


@router.post(
    "", status_code=status.HTTP_202_ACCEPTED, response_model=Accepted, openapi_extra=_UPLOAD_BODY
)
async def upload_document(
    request: Request,
    key: EditorDep,
    state: StateDep,
    collection: Annotated[
        str | None, Query(max_length=64, description="Put the document into this collection.")
    ] = None,
) -> Accepted | JSONResponse:
    """Upload a file (multipart field ``file``); ingestion runs in the background (202).

    The key and the collection are checked (401/403/404) and a declared Content-Length over
    RAG_UPLOAD_MAX_MB refused (413) before the body is read; without one, reading stops at the
    limit (413)."""
    into = _upload_collection(state, key, collection)
    limit = state.settings.upload_max_bytes
    try:
        check_declared_length(request.headers.get("content-length"), limit)
        raw_name, data = await read_upload(
            request.headers.get("content-type"),
            request.stream(),
            limit,
            state.settings.body_timeout,
        )
        name = sanitize_filename(raw_name)
        doc_type = check_content(name, data)
    except UploadRejected as exc:
        return JSONResponse({"detail": exc.detail}, status_code=exc.status_code)
    digest = hashlib.sha256(data).hexdigest()
    duplicate = _duplicate(state, key, digest)
    if duplicate:
        detail = "the same content was already uploaded"
        if into:
            detail += (
                f"; put it into the collection with POST /api/collections/{into.name}/documents"
            )
        return JSONResponse(
            {"detail": detail, "doc_id": duplicate}, status_code=status.HTTP_409_CONFLICT
        )
    doc_id = _target_id(state, key, name, into)
    path = _store(state.upload_dir, doc_id, digest, name, data)
    job = state.queue.enqueue(
        doc_id=doc_id,
        tenant=key.tenant,
        kind="ingest",
        path=str(path),
        rel_path=name,
        content_hash=digest,
        document=PendingDocument(doc_type=doc_type, size=len(data)),
    )
    if into:
        state.kb.collections.add_documents(key.tenant, into.name, [doc_id])
    state.wake_workers()
    return Accepted(
        doc_id=doc_id, filename=name, job_id=job.job_id, collection=into.name if into else None
    )


MAX_PAGE = 1000
MAX_OFFSET = 2**31 - 1  # SQL integers are 64-bit; a larger offset was a 500


@router.get("", response_model=DocumentList)
def list_documents(
    key: KeyDep,
    state: StateDep,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE, description="documents per page")] = 200,
    offset: Annotated[
        int, Query(ge=0, le=MAX_OFFSET, description="documents to skip (ordered by path)")
    ] = 0,
    collection: Annotated[
        str | None, Query(max_length=64, description="Only the documents of this collection.")
    ] = None,
) -> DocumentList:
    """The tenant's documents by path, a page at a time (``total`` counts them all); a key
    limited to some collections sees theirs."""
    within = [usable(state, key, collection).collection_id] if collection else key.collections
    docs = state.kb.documents.list(key.tenant, limit=limit, offset=offset, collections=within)
    latest = state.queue.latest_for([d.doc_id for d in docs])
    names = state.kb.collections.names_of([d.doc_id for d in docs])
    return DocumentList(
        documents=[
            DocumentOut.of(
                d, latest.get(d.doc_id), visible_collections(state, key, names.get(d.doc_id, []))
            )
            for d in docs
        ],
        total=state.kb.documents.count(key.tenant, collections=within),
        limit=limit,
        offset=offset,
    )


@router.get("/{doc_id}", response_model=DocumentOut)
def get_document(doc_id: str, key: KeyDep, state: StateDep) -> DocumentOut:
    return _out(state, key, own_document(state, key, doc_id))


@router.get("/{doc_id}/chunks", response_model=ChunkList)
def get_chunks(doc_id: str, key: KeyDep, state: StateDep) -> ChunkList:
    doc = own_document(state, key, doc_id)
    return ChunkList(doc_id=doc_id, version=doc.version, chunks=state.kb.documents.chunks(doc_id))


@router.post("/{doc_id}/reparse", status_code=status.HTTP_202_ACCEPTED, response_model=Accepted)
def reparse_document(doc_id: str, key: EditorDep, state: StateDep) -> Accepted:
    """Parse, chunk and embed the stored file again as a new version (old one served meanwhile)."""
    doc = own_document(state, key, doc_id)
    if not Path(doc.source).is_file():
        raise HTTPException(
            status.HTTP_409_CONFLICT, "the document's stored file is gone; upload it again"
        )
    job = state.queue.enqueue(
        doc_id=doc_id,
        tenant=key.tenant,
        kind="reparse",
        path=doc.source,
        rel_path=doc.rel_path,
        content_hash=doc.content_hash,
        document=PendingDocument(doc_type=doc.doc_type, size=doc.size_bytes),
    )
    state.wake_workers()
    return Accepted(doc_id=doc_id, filename=doc.rel_path, job_id=job.job_id)


@router.delete("/{doc_id}", response_model=Deleted)
def delete_document(doc_id: str, key: EditorDep, state: StateDep) -> Deleted:
    """Delete the document from the ledger, the keyword index and the vector index.

    A key limited to some collections deletes only what is theirs alone: a document that other
    collections hold too is taken out of the key's collections (``deleted: false``,
    ``removed_from``) and stays for the others."""
    own_document(state, key, doc_id)
    if key.collections is not None:
        names = state.kb.collections.names_of([doc_id]).get(doc_id, [])
        mine = visible_collections(state, key, names)
        if len(mine) < len(names):
            for name in mine:
                state.kb.collections.remove_documents(key.tenant, name, [doc_id])
            return Deleted(doc_id=doc_id, deleted=False, removed_from=mine)
    remove_document(state, doc_id)
    return Deleted(doc_id=doc_id)
