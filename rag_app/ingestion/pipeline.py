"""Ingestion pipeline: Document -> node parser -> embedding, as a LlamaIndex ``IngestionPipeline``.

The pipeline only turns one parsed document into embedded nodes; writing them to the ledger and
the vector index (with the versioned flip) is the ingestion service's job
(``rag_app/ingestion/service.py``).
"""

from __future__ import annotations

import bisect
import hashlib
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from llama_index.core import Document
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.ingestion import IngestionPipeline, run_transformations
from llama_index.core.schema import BaseNode, MetadataMode

from rag_app.chunking import build_node_parser
from rag_app.config import Settings
from rag_app.ingestion.row_entries import row_keywords
from rag_app.readers import ParsedFile
from rag_app.text.tokenizer import tokenize

# Document-level metadata keys; everything the chunker adds on top is chunk-level.
DOC_KEYS = ("doc_id", "tenant", "source", "fmt", "title", "doc_type")
# Paged documents (PDF) also carry where each page starts and which pages were OCR'd, as
# comma-separated strings (metadata values are scalars); ``number_chunks`` turns them into each
# chunk's ``pages`` and ``ocr``.
PAGE_KEYS = ("page_starts", "ocr_pages")


class IngestCancelled(Exception):
    """The job was stopped between embedding batches: its document was deleted or a newer
    version of it was queued (the message says which)."""


# what a running job checks between embedding batches: None to go on, else why it stops
StopCheck = Callable[[], str | None]
_STOP_CHECK: ContextVar[StopCheck | None] = ContextVar("rag_ingest_stop_check", default=None)


@contextmanager
def stoppable(check: StopCheck) -> Iterator[None]:
    """Within the block, the embedding of a document (:func:`embed_chunks`, in this thread)
    asks ``check`` before each batch and raises :class:`IngestCancelled` when it gives a
    reason (the worker's job, rag_app/service/worker.py)."""
    token = _STOP_CHECK.set(check)
    try:
        yield
    finally:
        _STOP_CHECK.reset(token)


def embed_batches(embed_model: BaseEmbedding, texts: Sequence[str]) -> list[list[float]]:
    """The texts' vectors, one ``embed_batch_size`` batch at a time (the batches the model's
    own ``get_text_embedding_batch`` makes, so the same vectors); within :func:`stoppable`,
    the check runs before each batch."""
    check = _STOP_CHECK.get()
    if check is None:
        return embed_model.get_text_embedding_batch(list(texts))
    size = max(1, int(embed_model.embed_batch_size))
    out: list[list[float]] = []
    for start in range(0, len(texts), size):
        reason = check()
        if reason is not None:
            raise IngestCancelled(reason)
        out.extend(embed_model.get_text_embedding_batch(list(texts[start : start + size])))
    return out


@dataclass
class EmbeddedChunk:
    """One chunk ready for the ledger (``row``) and the vector index (``embedding``, ``metadata``;
    a PDF chunk's metadata also has ``pages`` ("3" or "3-4") and ``ocr`` (text from OCR)."""

    row: dict[str, Any]
    embedding: list[float]
    metadata: dict[str, Any]
    embed_text: str


def pipeline_fingerprint(settings: Settings) -> str:
    """Identifies the chunking + embedding configuration: a change means re-chunking."""
    key = "|".join(
        str(v)
        for v in (
            settings.chunker,
            settings.chunk_size,
            settings.chunk_overlap,
            settings.section_level,
            settings.embedding,
            # v2: a .txt title line roots the heading path; PDF pages without text are OCR'd
            # v3: keyword tokens carry a canonical year-month token (2021年03月); a keyword-only
            # change now bumps tokenizer.TOKENS_VERSION instead (store/retokenize.py: no
            # re-chunking or re-embedding)
            "v3",
            # only when on, so that the fingerprints of knowledge bases without it stay as they were
            *(["rows"] if settings.table_row_entries else []),
        )
    )
    return hashlib.sha1(key.encode()).hexdigest()[:16]


def build_ingestion_pipeline(settings: Settings, embed_model: BaseEmbedding) -> IngestionPipeline:
    parser = build_node_parser(
        settings.chunker,
        chunk_size=settings.chunk_size,
        chunk_overlap=settings.chunk_overlap,
        section_level=settings.section_level,
    )
    return IngestionPipeline(transformations=[parser, embed_model], disable_cache=True)


def to_document(parsed: ParsedFile, *, doc_id: str, tenant: str, source: str) -> Document:
    metadata: dict[str, Any] = {
        "doc_id": doc_id,
        "tenant": tenant,
        "source": source,
        "fmt": parsed.fmt,
        "title": parsed.title or "",
        "doc_type": parsed.doc_type,
    }
    for key in PAGE_KEYS:
        values = parsed.metadata.get(key)
        if isinstance(values, list) and values:
            metadata[key] = ",".join(str(int(v)) for v in values)
    return Document(
        id_=doc_id,
        text=parsed.text,
        metadata=metadata,
        excluded_embed_metadata_keys=[*DOC_KEYS, *PAGE_KEYS],
        excluded_llm_metadata_keys=[*DOC_KEYS, *PAGE_KEYS],
    )


def page_metadata(meta: dict[str, Any], start: int, end: int) -> dict[str, Any]:
    """``{"pages": "3" | "3-4", "ocr": bool}`` for the chunk ``[start, end)`` of a paged document
    (1-based pages; ``ocr``: some of its pages were OCR'd); ``{}`` for other documents."""
    raw = str(meta.get("page_starts", ""))
    if not raw:
        return {}
    starts = [int(v) for v in raw.split(",")]
    first = bisect.bisect_right(starts, start)
    last = max(first, bisect.bisect_right(starts, max(end - 1, start)))
    ocr = {int(v) for v in str(meta.get("ocr_pages", "")).split(",") if v}
    return {
        "pages": str(first) if first == last else f"{first}-{last}",
        "ocr": any(page in ocr for page in range(first, last + 1)),
    }


def _keywords(texts: Sequence[str], stop: threading.Event | None = None) -> list[str]:
    """Each text's keyword tokens; ``stop``: set when the embedding stopped (left unfinished)."""
    out: list[str] = []
    for text in texts:
        if stop is not None and stop.is_set():
            break
        out.append(" ".join(tokenize(text)))
    return out


def _split_pipeline(
    pipeline: IngestionPipeline,
) -> tuple[list[Any], BaseEmbedding] | None:
    """(chunking transformations, embedding model) when the pipeline ends with the model."""
    *before, last = pipeline.transformations
    if isinstance(last, BaseEmbedding) and not any(isinstance(t, BaseEmbedding) for t in before):
        return before, last
    return None


@dataclass
class PreparedDocument:
    """A document chunked, embedded and keyword-tokenized, not yet numbered with a version."""

    doc_id: str
    tenant: str
    nodes: Sequence[BaseNode]
    embed_texts: list[str]
    keywords: list[str]


def prepare_document(pipeline: IngestionPipeline, document: Document) -> PreparedDocument:
    """Chunk, embed and keyword-tokenize one document (no version yet: see ``number_chunks``).

    Same nodes and embeddings as ``pipeline.run(documents=[document])``: the chunking
    transformations, then the embedding model on each node's EMBED text (heading path + text) in
    ``embed_batch_size`` batches (``embed_chunks``).
    """
    split = _split_pipeline(pipeline)
    if split is None:  # a custom pipeline: run it as it is, keywords afterwards
        nodes: Sequence[BaseNode] = pipeline.run(documents=[document], show_progress=False)
        embed_texts = [n.get_content(metadata_mode=MetadataMode.EMBED) for n in nodes]
        return PreparedDocument(
            doc_id=document.metadata["doc_id"],
            tenant=document.metadata["tenant"],
            nodes=nodes,
            embed_texts=embed_texts,
            keywords=_keywords(embed_texts),
        )
    chunkers, _ = split
    nodes = run_transformations([document], chunkers) if chunkers else [document]
    return embed_chunks(
        pipeline, nodes, doc_id=document.metadata["doc_id"], tenant=document.metadata["tenant"]
    )


def chunks_then_model(pipeline: IngestionPipeline) -> bool:
    """The pipeline is chunking transformations followed by the embedding model (the built one):
    its chunks can be made elsewhere (a parse child) and handed to ``embed_chunks``."""
    return _split_pipeline(pipeline) is not None


def embed_chunks(
    pipeline: IngestionPipeline, nodes: Sequence[BaseNode], *, doc_id: str, tenant: str
) -> PreparedDocument:
    """Embed and keyword-tokenize the chunks of one document with the pipeline's model.

    The EMBED texts are built once (for the model and the keyword index) and the keyword tokens
    (jieba, pure Python) are computed in a helper thread while the model embeds (its numpy matrix
    products release the GIL). The model embeds one batch at a time, so the vectors do not depend
    on how the document was ingested; a worker's job may stop between batches
    (:func:`stoppable`).
    """
    split = _split_pipeline(pipeline)
    if split is None:
        raise ValueError("embed_chunks needs a pipeline that ends with its embedding model")
    _, embed_model = split
    embed_texts = [n.get_content(metadata_mode=MetadataMode.EMBED) for n in nodes]
    if len(embed_texts) > 1:
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ingest-keywords")
        stop = threading.Event()
        pending = pool.submit(_keywords, embed_texts, stop)
        try:
            embeddings = embed_batches(embed_model, embed_texts)
        except BaseException:  # stopped (or failed): the keywords are not waited for
            stop.set()
            raise
        finally:
            pool.shutdown(wait=False)
        keywords = pending.result()
    else:
        embeddings = embed_batches(embed_model, embed_texts) if embed_texts else []
        keywords = _keywords(embed_texts)
    for node, embedding in zip(nodes, embeddings, strict=True):
        node.embedding = embedding
    return PreparedDocument(
        doc_id=doc_id, tenant=tenant, nodes=nodes, embed_texts=embed_texts, keywords=keywords
    )


def number_chunks(
    prepared: PreparedDocument, *, version: int, table_rows: bool = False
) -> list[EmbeddedChunk]:
    """The prepared chunks as version ``version``: chunk ids ``<doc_id>:<version>:<index>``.

    ``table_rows``: each row also gets ``row_keywords``, the keyword tokens of every table row
    of the chunk (ingestion/row_entries.py)."""
    doc_id, tenant = prepared.doc_id, prepared.tenant
    out: list[EmbeddedChunk] = []
    for index, node in enumerate(prepared.nodes):
        meta = node.metadata
        if node.embedding is None:
            raise RuntimeError(f"chunk {index} of {doc_id} came out of the pipeline unembedded")
        chunk_id = f"{doc_id}:{version}:{index}"
        row = {
            "chunk_id": chunk_id,
            "chunk_index": index,
            "text": node.get_content(metadata_mode=MetadataMode.NONE),
            "title_path": str(meta.get("title_path", "")),
            "start_char": int(meta["start_char"]),
            "end_char": int(meta["end_char"]),
            "prefix_chars": int(meta.get("prefix_chars", 0)),
            "suffix_chars": int(meta.get("suffix_chars", 0)),
            "token_count": int(meta.get("token_count", 0)),
            "block_types": str(meta.get("block_types", "")),
            # the keyword index sees what the embedding sees: heading path + text
            "keywords": prepared.keywords[index],
        }
        if table_rows:
            row["row_keywords"] = row_keywords(row)
        out.append(
            EmbeddedChunk(
                row=row,
                embedding=list(node.embedding),
                metadata={
                    "tenant": tenant,
                    "doc_id": doc_id,
                    "version": version,
                    "chunk_index": index,
                    **page_metadata(meta, int(meta["start_char"]), int(meta["end_char"])),
                },
                embed_text=prepared.embed_texts[index],
            )
        )
    return out


def embed_document(
    pipeline: IngestionPipeline, document: Document, *, version: int
) -> list[EmbeddedChunk]:
    """Chunk and embed one document; chunk ids are ``<doc_id>:<version>:<index>``."""
    return number_chunks(prepare_document(pipeline, document), version=version)
