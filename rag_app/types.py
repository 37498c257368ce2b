"""Public data types returned by the knowledge base (pydantic models: JSON-ready)."""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, Field, field_validator


class DocStatus(StrEnum):
    PENDING = "PENDING"
    PROCESSING = "PROCESSING"
    SUCCESS = "SUCCESS"
    FAILED = "FAILED"


class Source(BaseModel):
    """One retrieved chunk, with everything a citation needs."""

    text: str
    source: str = Field(description="Path of the file the chunk came from.")
    doc_id: str
    chunk_id: str
    chunk_index: int
    version: int
    score: float
    title_path: str = ""
    start_char: int
    end_char: int
    prefix_chars: int = Field(
        0, description="Leading characters repeated from earlier (a table header, a lead-in)."
    )
    suffix_chars: int = Field(0, description="Trailing characters repeated in the next chunk.")
    block_types: str = ""
    tenant: str = "default"
    chunk_parts: list[tuple[int, int, int]] = Field(
        default_factory=list,
        description="Merged evidence (a hit with its neighbours): per chunk (chunk_index, "
        "offset, base): its part starts at ``offset`` of ``text``, and position m of it is "
        "position m - offset + base of that chunk's own text. Empty for a single chunk.",
    )


class FileResult(BaseModel):
    """What happened to one input file during ingestion."""

    path: str
    doc_id: str | None = None
    status: str = Field(description="SUCCESS | UNCHANGED | FAILED | SKIPPED | CANCELLED")
    chunks: int = 0
    version: int | None = None
    reason: str | None = None
    seconds: float = 0.0
    platform: bool = Field(
        False,
        description="FAILED because the platform (vector store, database) was unreachable, "
        "not because of the file: a service worker queues it again.",
    )


class IngestReport(BaseModel):
    tenant: str
    files: list[FileResult] = Field(default_factory=list)
    seconds: float = 0.0

    def count(self, status: str) -> int:
        return sum(1 for f in self.files if f.status == status)

    @property
    def succeeded(self) -> int:
        return self.count("SUCCESS")

    @property
    def unchanged(self) -> int:
        return self.count("UNCHANGED")

    @property
    def failed(self) -> int:
        return self.count("FAILED")

    @property
    def total_chunks(self) -> int:
        return sum(f.chunks for f in self.files)


class DocumentInfo(BaseModel):
    doc_id: str
    tenant: str
    source: str
    rel_path: str = ""
    doc_type: str
    title: str | None = None
    content_hash: str | None = None
    version: int
    status: DocStatus
    error: str | None = None
    chunk_count: int = 0
    size_bytes: int = 0
    created_at: datetime | None = None
    updated_at: datetime | None = None

    @field_validator("created_at", "updated_at")
    @classmethod
    def _utc(cls, value: datetime | None) -> datetime | None:
        """The ledger stores UTC; SQLite gives it back without its offset: say it (ISO 8601
        with ``+00:00`` in the API and JSON output)."""
        if value is not None and value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value


class ChunkInfo(BaseModel):
    chunk_id: str
    doc_id: str
    version: int
    chunk_index: int
    text: str
    title_path: str = ""
    start_char: int
    end_char: int
    prefix_chars: int = 0
    suffix_chars: int = 0
    token_count: int = 0
    block_types: str = ""
    pages: str = Field("", description="A paged document's (PDF) pages of the chunk: 3 or 3-4.")
    ocr: bool = Field(False, description="Some of its text was read by OCR from a scanned page.")


REFUSAL = "当前知识库中未找到足够依据。"


class Citation(BaseModel):
    """A cited answer unit (sentence, list item or table row) inside ``sources[source-1]``."""

    source: int = Field(description="1-based number of the source (the [n] marker).")
    kind: str = Field(description="sentence | item | row")
    text: str
    start: int = Field(description="Start of the unit in the source's text.")
    end: int = Field(description="End of the unit in the source's text.")
    probability: float = Field(description="The answer model's probability for the unit.")


Outcome = Literal["answered", "qualified", "refused"]


class AnnotationRef(BaseModel):
    """The annotation (人工标注) an answer is: who wrote it, when, and how the question matched."""

    annotation_id: int
    author: str = Field("", description="The API key (name) that wrote or last edited it.")
    updated_at: float = Field(description="Last edited, epoch seconds.")
    collection_id: str | None = Field(None, description="Its collection; None: tenant-wide.")
    match: Literal["exact", "similar"] = Field(
        description="exact: the same question (whitespace, punctuation and case aside); "
        "similar: a close paraphrase stating the same numbers, codes and names."
    )
    similarity: float = Field(description="Cosine of the two questions' embeddings (1: exact).")
    annotated_question: str
    citation: Literal["current", "updated", "deleted"] | None = Field(
        None,
        description="Its cited chunk: still as annotated (then the source), or re-parsed / "
        "deleted since (then no source, and the answer says so); None: it cites none.",
    )


class AnswerFields(BaseModel):
    """An answer's fields but its sources (the API serves them with file names): marker ``[n]``
    refers to ``sources[n-1]``.

    A refusal has ``refused`` set, ``reason`` (a machine code), ``explanation`` (what was
    missing, in words), in ``sources`` the closest sources found and, in ``closest``, the unit
    of them the answer model ranks best."""

    question: str
    answer: str
    refused: bool = False
    outcome: Outcome = Field(
        "answered",
        description="answered; qualified: the knowledge base may not hold what was asked (a "
        "stated value or name its evidence lacks, a borderline decision, or no unit the "
        "reader finds stating it), so the first line says so before the closest it has; "
        "refused.",
    )
    caveat: str | None = Field(
        None,
        description="A qualified answer: the first line's caveat (知识库中没有…；最接近的是：).",
    )
    reading: float | None = Field(
        None,
        description="P(the answer's leading units state the answer), by the cross reader; "
        "None when not read (a refusal, or RAG_CROSS_READER=false).",
    )
    reason: str | None = Field(None, description="Machine-readable refusal reason.")
    explanation: str | None = Field(None, description="The refusal reason in words.")
    absent_values: list[str] = Field(
        default_factory=list,
        description="Values the question states (65岁, 2021年10月) that the evidence lacks: the "
        "answer is the closest the knowledge base has, not the asked one.",
    )
    absent_names: list[str] = Field(
        default_factory=list,
        description="Names the question uses (SAP, 《员工手册》, 张某某) that the evidence never "
        "mentions: the answer is about what the knowledge base has, not the named one.",
    )
    citations: list[Citation] = Field(default_factory=list)
    closest: list[Citation] = Field(
        default_factory=list,
        description="A refusal: the evidence's best unit (in the closest sources), the nearest "
        "the knowledge base has to an answer, shown as such; empty for an answer.",
    )
    confidence: float = Field(
        0.0, description="P(the evidence answers the question), by the answer model's gate."
    )
    threshold: float = Field(
        0.0,
        description="The gate's threshold for this question: refused when the confidence is "
        "below it (0: the gate is off).",
    )
    mode: str = "extractive"
    reviewed: bool = Field(
        False,
        description="The gate would have refused (confidence below the threshold) and the LLM "
        "read the evidence (RAG_LLM_REVIEW): an answer is the LLM's; a refusal keeps the "
        "gate's reason.",
    )
    llm_error: str | None = Field(
        None,
        description="With an LLM endpoint: why its answer was not used (down, timed out, empty, "
        "or citing no source); the extractive answer (or the gate's refusal) stands instead.",
    )
    timings: dict[str, float] = Field(default_factory=dict)
    annotation: AnnotationRef | None = Field(
        None,
        description="The answer is an editor's annotation of a matching question (mode "
        "'annotation'), given before retrieval; None: the knowledge base answered.",
    )


class Answer(AnswerFields):
    """An answer with backend citations (see :class:`AnswerFields`)."""

    sources: list[Source] = Field(
        default_factory=list, description="Cited sources; for a refusal the closest ones."
    )
