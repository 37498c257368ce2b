"""ChunkRecord: what a retrieved chunk carries from retrieval to synthesis, and its one accessor.

A retrieved chunk travels through LlamaIndex as a ``NodeWithScore`` whose ``TextNode.metadata``
is a flat dict (what LlamaIndex's postprocessors copy along with the node). That dict is the
serialised form of one :class:`ChunkRecord`: it is written only here (:func:`chunk_node` when
the retriever makes the node, :func:`with_fields` when a later stage adds its fields: the
reranker's scores, the neighbour expansion's merged parts) and read only here
(:func:`record_of`). Nowhere else does code read a chunk field from node metadata by string key
(tests/test_imports.py checks it).
"""

from __future__ import annotations

from typing import Any, Final

from llama_index.core.schema import BaseNode, TextNode
from pydantic import BaseModel, ConfigDict, Field

from rag_app.types import ChunkInfo, Source


class ChunkRecord(BaseModel):
    """One retrieved chunk (or a hit merged with its neighbours): the ledger's fields, where it
    came from, and what each stage of the query path learnt about it."""

    model_config = ConfigDict(frozen=True)

    chunk_id: str
    doc_id: str
    version: int
    chunk_index: int
    title_path: str = ""
    start_char: int
    end_char: int
    prefix_chars: int = 0
    suffix_chars: int = 0
    block_types: str = ""
    source: str = Field("", description="Path of the file the chunk came from.")
    tenant: str = ""
    # the retriever's branches (0: not found by that branch)
    dense_rank: int = 0
    keyword_rank: int = 0
    dense_score: float = 0.0
    keyword_score: float = 0.0
    # LexicalReranker: the fused score before reranking, the question's term coverage
    retrieval_score: float | None = None
    rerank_coverage: float | None = None
    # NeighborExpansion: the merged chunks (see Source.chunk_parts)
    chunk_ids: str = Field("", description="Comma-separated ids of the merged chunks.")
    chunk_parts: list[tuple[int, int, int]] = Field(default_factory=list)
    expanded: bool = False

    def updated(self, **fields: Any) -> ChunkRecord:
        """A copy with ``fields`` set, validated (a name the record doesn't have is an error)."""
        unknown = sorted(fields.keys() - type(self).model_fields.keys())
        if unknown:
            raise TypeError(f"ChunkRecord has no field {', '.join(unknown)}")
        return type(self).model_validate({**self.model_dump(), **fields})

    @classmethod
    def of_chunk(cls, chunk: ChunkInfo, **fields: Any) -> ChunkRecord:
        """The record of a ledger chunk (its text aside) with ``fields`` (where it came from,
        the retriever's ranks)."""
        return cls(**chunk.model_dump(include=_SHARED_WITH_CHUNK), **fields)

    def chunk(self, text: str) -> ChunkInfo:
        """The ledger chunk this record describes, with ``text`` (the node's)."""
        return ChunkInfo(text=text, **self.model_dump(include=_SHARED_WITH_CHUNK))

    def to_source(self, text: str, score: float) -> Source:
        """A citation-ready :class:`~rag_app.types.Source` (fields from the ledger, not a
        model)."""
        return Source(text=text, score=score, **self.model_dump(include=_SHARED_WITH_SOURCE))


# the ledger's fields (ChunkInfo: all but text, token_count, pages, ocr) and a Source's (all but
# text and score)
_SHARED_WITH_CHUNK: Final = set(ChunkRecord.model_fields) & set(ChunkInfo.model_fields)
_SHARED_WITH_SOURCE: Final = set(ChunkRecord.model_fields) & set(Source.model_fields)


def chunk_node(record: ChunkRecord, text: str) -> TextNode:
    """The node that carries ``record`` (its id is the chunk's)."""
    return TextNode(id_=record.chunk_id, text=text, metadata=record.model_dump(exclude_none=True))


def record_of(node: BaseNode) -> ChunkRecord:
    """The record a node carries (the one place that reads chunk fields from node metadata)."""
    return ChunkRecord.model_validate(node.metadata)


def with_fields(node: BaseNode, **fields: Any) -> TextNode:
    """A copy of ``node`` whose record has ``fields`` set (validated), e.g. the reranker's
    ``retrieval_score`` and ``rerank_coverage``; ``node`` itself is left as it was."""
    return chunk_node(record_of(node).updated(**fields), node.get_content())
