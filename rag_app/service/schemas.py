"""Request and response bodies of the HTTP API."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, Field, StringConstraints

from rag_app.store.jobs import Job
from rag_app.types import AnswerFields, ChunkInfo, DocumentInfo, Source


class JobOut(BaseModel):
    job_id: int
    kind: str
    status: str
    error: str | None = None
    attempts: int = 0

    @classmethod
    def of(cls, job: Job) -> JobOut:
        return cls(
            job_id=job.job_id,
            kind=job.kind,
            status=job.status,
            error=job.error,
            attempts=job.attempts,
        )


class DocumentOut(BaseModel):
    doc_id: str
    filename: str
    doc_type: str
    title: str | None = None
    status: str
    error: str | None = None
    version: int
    chunk_count: int
    size_bytes: int
    created_at: datetime | None = None
    updated_at: datetime | None = None
    job: JobOut | None = None
    collections: list[str] = Field(default_factory=list, description="Collections it is in.")

    @classmethod
    def of(
        cls, doc: DocumentInfo, job: Job | None, collections: list[str] | None = None
    ) -> DocumentOut:
        return cls(
            doc_id=doc.doc_id,
            filename=doc.rel_path,
            doc_type=doc.doc_type,
            title=doc.title,
            status=doc.status.value,
            error=doc.error,
            version=doc.version,
            chunk_count=doc.chunk_count,
            size_bytes=doc.size_bytes,
            created_at=doc.created_at,
            updated_at=doc.updated_at,
            job=JobOut.of(job) if job else None,
            collections=collections or [],
        )


class DocumentList(BaseModel):
    documents: list[DocumentOut]
    total: int = Field(description="documents of the tenant in all")
    limit: int
    offset: int


class Accepted(BaseModel):
    doc_id: str
    filename: str
    status: str = "PENDING"
    job_id: int
    collection: str | None = Field(None, description="The collection it was put into.")


class Deleted(BaseModel):
    doc_id: str
    deleted: bool = True
    removed_from: list[str] = Field(
        default_factory=list,
        description="A limited key's delete of a document other collections hold too: the "
        "collections it was taken out of (it stays in the others; deleted is false).",
    )


class ChunkList(BaseModel):
    doc_id: str
    version: int
    chunks: list[ChunkInfo]


class SourceOut(BaseModel):
    """A citation: the chunk's text and location (from the ledger, never from a model)."""

    text: str
    filename: str
    doc_id: str
    chunk_id: str
    chunk_index: int
    version: int
    score: float
    title_path: str = ""
    start_char: int
    end_char: int
    prefix_chars: int = 0
    suffix_chars: int = 0
    block_types: str = ""
    chunk_parts: list[tuple[int, int, int]] = Field(
        default_factory=list,
        description="Merged evidence: per chunk (chunk_index, offset in text, base in the "
        "chunk's own text); empty for a single chunk.",
    )

    @classmethod
    def of(cls, source: Source, filename: str) -> SourceOut:
        data = source.model_dump(exclude={"source", "tenant"})
        return cls(filename=filename, **data)


MAX_DOC_IDS = 4096  # a scope is bound into SQL; SQLite allows 32,766 variables per statement
DocId = Annotated[str, StringConstraints(max_length=128)]
CollectionName = Annotated[str, StringConstraints(min_length=1, max_length=64)]
CollectionScope = CollectionName | Annotated[list[CollectionName], Field(max_length=64)]
COLLECTION_HELP = (
    "Only the documents of this collection (a name) or these collections (a list); a key "
    "limited to some collections reads only those."
)


class AskIn(BaseModel):
    question: str = Field(min_length=1, max_length=2000)
    top_k: int = Field(5, ge=1, le=50, strict=True)
    doc_ids: list[DocId] | None = Field(
        None,
        max_length=MAX_DOC_IDS,
        description=f"Only these documents (of your tenant), at most {MAX_DOC_IDS}.",
    )
    collection: CollectionScope | None = Field(None, description=COLLECTION_HELP)
    stream: bool = Field(
        False,
        strict=True,
        description="Server-sent events (text/event-stream): `delta` {text} as the answer is "
        "written, then `answer` (this response's fields), then `end`; see docs/api.md.",
    )


class RetrieveIn(BaseModel):
    query: str = Field(min_length=1, max_length=2000)
    top_k: int = Field(5, ge=1, le=50, strict=True)
    doc_ids: list[DocId] | None = Field(
        None,
        max_length=MAX_DOC_IDS,
        description=f"Only these documents (of your tenant), at most {MAX_DOC_IDS}.",
    )
    collection: CollectionScope | None = Field(None, description=COLLECTION_HELP)


class AnswerOut(AnswerFields):
    """What /api/ask answers: the knowledge base's :class:`~rag_app.types.Answer`, its sources
    with their file names."""

    sources: list[SourceOut] = Field(
        description="Cited sources ([n] is sources[n-1]); for a refusal, the closest ones."
    )


class RetrieveOut(BaseModel):
    sources: list[SourceOut]


class Me(BaseModel):
    tenant: str
    role: str
    key_id: str
    collections: list[str] | None = Field(
        None, description="The collections the key is limited to; null: its whole tenant."
    )


class WorkerExit(BaseModel):
    worker: str = Field(description="Which worker process exited, e.g. `worker 1`.")
    code: int = Field(description="Its exit status; negative: the signal that killed it.")
    reason: str = Field(description="In words: `killed by signal 9 (SIGKILL)`, `exit code 1`.")
    seconds_ago: float


class WorkerProcess(BaseModel):
    name: str
    alive: bool
    restarts: int = Field(description="Times `rag serve` restarted it after it exited.")


class WorkersHealth(BaseModel):
    mode: Literal["processes", "threads", "external"] = Field(
        description="`processes`: `rag worker` children of `rag serve`; `threads`: in the API "
        "process (--workers-in-process); `external`: none here (jobs left to `rag worker`s)."
    )
    configured: int
    alive: int
    restarts: int = Field(0, description="Restarts of all worker processes since start-up.")
    last_exit: WorkerExit | None = Field(None, description="The latest worker process exit.")
    processes: list[WorkerProcess] = Field(default_factory=list)


class Health(BaseModel):
    status: Literal["ok", "degraded"] = Field(
        description="`degraded` while fewer workers are alive than configured (still HTTP 200)."
    )
    version: str
    embedding: str
    queue: dict[str, int]
    workers: WorkersHealth
