"""Ingestion pipeline: Document -> node parser -> embedding, as a LlamaIndex ``IngestionPipeline``.

The pipeline only turns one parsed document into embedded nodes; writing them to the ledger and
the vector index (with the versioned flip) is the knowledge base's job (``rag_app.kb``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from llama_index.core import Document
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.ingestion import IngestionPipeline
from llama_index.core.schema import BaseNode, MetadataMode

from rag_app.chunking import build_node_parser
from rag_app.config import Settings
from rag_app.readers import ParsedFile
from rag_app.retrieval.tokenizer import tokenize

# Document-level metadata keys; everything the chunker adds on top is chunk-level.
DOC_KEYS = ("doc_id", "tenant", "source", "fmt", "title", "doc_type")


@dataclass
class EmbeddedChunk:
    """One chunk ready for the ledger (``row``) and the vector index (``embedding``, ``metadata``)."""

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
            "v1",
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
    return Document(
        id_=doc_id,
        text=parsed.text,
        metadata={
            "doc_id": doc_id,
            "tenant": tenant,
            "source": source,
            "fmt": parsed.fmt,
            "title": parsed.title or "",
            "doc_type": parsed.doc_type,
        },
        excluded_embed_metadata_keys=list(DOC_KEYS),
        excluded_llm_metadata_keys=list(DOC_KEYS),
    )


def embed_document(
    pipeline: IngestionPipeline, document: Document, *, version: int
) -> list[EmbeddedChunk]:
    """Chunk and embed one document; chunk ids are ``<doc_id>:<version>:<index>``."""
    nodes: Sequence[BaseNode] = pipeline.run(documents=[document], show_progress=False)
    doc_id = document.metadata["doc_id"]
    tenant = document.metadata["tenant"]
    out: list[EmbeddedChunk] = []
    for index, node in enumerate(nodes):
        meta = node.metadata
        if node.embedding is None:
            raise RuntimeError(f"chunk {index} of {doc_id} came out of the pipeline unembedded")
        chunk_id = f"{doc_id}:{version}:{index}"
        text = node.get_content(metadata_mode=MetadataMode.NONE)
        embed_text = node.get_content(metadata_mode=MetadataMode.EMBED)
        row = {
            "chunk_id": chunk_id,
            "chunk_index": index,
            "text": text,
            "title_path": str(meta.get("title_path", "")),
            "start_char": int(meta["start_char"]),
            "end_char": int(meta["end_char"]),
            "prefix_chars": int(meta.get("prefix_chars", 0)),
            "suffix_chars": int(meta.get("suffix_chars", 0)),
            "token_count": int(meta.get("token_count", 0)),
            "block_types": str(meta.get("block_types", "")),
            # the keyword index sees what the embedding sees: heading path + text
            "keywords": " ".join(tokenize(embed_text)),
        }
        out.append(
            EmbeddedChunk(
                row=row,
                embedding=list(node.embedding),
                metadata={
                    "tenant": tenant,
                    "doc_id": doc_id,
                    "version": version,
                    "chunk_index": index,
                },
                embed_text=embed_text,
            )
        )
    return out
