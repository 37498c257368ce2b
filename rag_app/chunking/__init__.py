"""Chunking: documents → typed blocks → structure-aware chunks (and two baselines).

``build_node_parser("structure" | "sentence" | "fixed", chunk_size, chunk_overlap, section_level)``
returns a LlamaIndex ``NodeParser`` whose nodes follow the contract in
:mod:`rag_app.chunking.nodes`; :func:`chunk_document` is the pure function behind the structure
parser.
"""

from __future__ import annotations

from typing import Literal

from llama_index.core.node_parser import NodeParser

from rag_app.chunking.baselines import FixedSizeNodeParser, SentenceNodeParser
from rag_app.chunking.block import Block
from rag_app.chunking.blocks import parse_blocks
from rag_app.chunking.headings import detect_heading
from rag_app.chunking.nodes import CHUNK_METADATA_KEYS, Chunk, restrict_embed_metadata
from rag_app.chunking.parser import StructureAwareNodeParser, chunk_document
from rag_app.chunking.tokens import count_tokens

__all__ = [
    "CHUNK_METADATA_KEYS",
    "CHUNKER_NAMES",
    "Block",
    "Chunk",
    "FixedSizeNodeParser",
    "SentenceNodeParser",
    "StructureAwareNodeParser",
    "build_node_parser",
    "chunk_document",
    "count_tokens",
    "detect_heading",
    "parse_blocks",
    "restrict_embed_metadata",
]

ChunkerName = Literal["fixed", "sentence", "structure"]
CHUNKER_NAMES: tuple[str, ...] = ("fixed", "sentence", "structure")


def build_node_parser(
    name: ChunkerName,
    chunk_size: int = 512,
    chunk_overlap: int = 64,
    section_level: int = 2,
) -> NodeParser:
    """The node parser called ``name``; ``section_level`` only matters for ``"structure"``."""
    if name == "structure":
        return StructureAwareNodeParser(
            chunk_size=chunk_size, chunk_overlap=chunk_overlap, section_level=section_level
        )
    if name == "sentence":
        return SentenceNodeParser(chunk_size=chunk_size, chunk_overlap=chunk_overlap)
    if name == "fixed":
        return FixedSizeNodeParser(chunk_size=chunk_size, chunk_overlap=chunk_overlap)
    raise ValueError(f"unknown chunker {name!r}; choose one of {', '.join(CHUNKER_NAMES)}")
