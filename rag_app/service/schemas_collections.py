"""The request and response bodies of /api/collections."""

from __future__ import annotations

from pydantic import BaseModel, Field

from rag_app.service.schemas import MAX_DOC_IDS, DocId
from rag_app.store.collections import NAME_MAX, Collection
from rag_app.time_format import EpochTime


class CollectionIn(BaseModel):
    name: str = Field(
        min_length=1,
        max_length=NAME_MAX,
        description="e.g. HR制度, IT手册 (no '/', '\\' or control characters).",
    )


class CollectionOut(BaseModel):
    name: str
    documents: int = Field(description="Documents of the tenant in it.")
    created_at: EpochTime = Field(description="ISO 8601, UTC.")

    @classmethod
    def of(cls, found: Collection) -> CollectionOut:
        return cls(name=found.name, documents=found.documents, created_at=found.created_at)


class CollectionList(BaseModel):
    collections: list[CollectionOut]


class CollectionDeleted(BaseModel):
    name: str
    documents_deleted: list[str] = Field(
        description="With documents=delete: its documents that were in no other collection."
    )
    documents_kept: list[str] = Field(description="Its documents still in the knowledge base.")


class MembersIn(BaseModel):
    doc_ids: list[DocId] = Field(min_length=1, max_length=MAX_DOC_IDS)


class MembersOut(BaseModel):
    name: str
    changed: int = Field(description="Documents added (or removed) by this request.")
