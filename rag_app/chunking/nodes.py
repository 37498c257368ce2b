"""The chunk contract shared by every node parser here: ``Chunk`` and ``Chunk`` → ``TextNode``.

``node.text == prefix + document.text[start_char:end_char] + suffix`` exactly, where the prefix and
suffix are the text repeated on purpose (``prefix_chars``/``suffix_chars`` long). Metadata values are
JSON scalars (Chroma rejects lists). The embedded / keyword-indexed text is
``title_path + "\\n" + node.text`` (just ``node.text`` when the path is empty): every metadata key
except ``title_path`` is excluded from the EMBED and LLM views, computed from the node's actual keys
after the document metadata has been merged in.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from llama_index.core.node_parser import NodeParser
from llama_index.core.schema import (
    BaseNode,
    Document,
    MetadataMode,
    NodeRelationship,
    TextNode,
)
from llama_index.core.utils import get_tqdm_iterable

__all__ = [
    "CHUNK_METADATA_KEYS",
    "PATH_SEPARATOR",
    "Chunk",
    "ChunkNodeParser",
    "chunk_metadata",
    "restrict_embed_metadata",
]

PATH_SEPARATOR = " > "
CHUNK_METADATA_KEYS = (
    "title_path",
    "block_types",
    "start_char",
    "end_char",
    "prefix_chars",
    "suffix_chars",
    "chunk_index",
    "token_count",
    "oversized",
)
EMBED_METADATA_TEMPLATE = "{value}"
EMBED_TEXT_TEMPLATE = "{metadata_str}\n{content}"


@dataclass(slots=True)
class Chunk:
    """One chunk of a document: ``text == prefix + source[start_char:end_char] + suffix``."""

    text: str
    start_char: int
    end_char: int
    prefix_chars: int
    suffix_chars: int
    title_path: list[str]
    block_types: list[str]
    token_count: int
    oversized: bool

    @property
    def prefix(self) -> str:
        return self.text[: self.prefix_chars]

    @property
    def suffix(self) -> str:
        return self.text[len(self.text) - self.suffix_chars :]

    @property
    def body(self) -> str:
        """The part of ``text`` that is ``source[start_char:end_char]``."""
        return self.text[self.prefix_chars : len(self.text) - self.suffix_chars]


def chunk_metadata(chunk: Chunk, index: int) -> dict[str, Any]:
    """The node metadata of ``chunk`` (JSON scalars only)."""
    return {
        "title_path": PATH_SEPARATOR.join(chunk.title_path),
        "block_types": ",".join(chunk.block_types),
        "start_char": chunk.start_char,
        "end_char": chunk.end_char,
        "prefix_chars": chunk.prefix_chars,
        "suffix_chars": chunk.suffix_chars,
        "chunk_index": index,
        "token_count": chunk.token_count,
        "oversized": chunk.oversized,
    }


def restrict_embed_metadata(node: BaseNode) -> None:
    """Make the EMBED and LLM views ``title_path + "\\n" + text``: exclude every other key.

    Call it again if you add metadata keys to a node after parsing.
    """
    others = [key for key in node.metadata if key != "title_path"]
    node.excluded_embed_metadata_keys = list(others)
    node.excluded_llm_metadata_keys = list(others)
    node.metadata_template = EMBED_METADATA_TEMPLATE
    if isinstance(node, TextNode):
        node.text_template = EMBED_TEXT_TEMPLATE


class ChunkNodeParser(NodeParser):
    """Base of the node parsers here: ``_chunk`` one document, wrap the chunks as ``TextNode``s.

    Reads ``fmt`` (``"markdown"`` | ``"text"``, default ``"text"``) and ``title`` from the
    document metadata; the base class merges the document metadata into the nodes and links them.
    """

    @abstractmethod
    def _chunk(self, text: str, fmt: str, title: str | None) -> list[Chunk]: ...

    def _parse_nodes(
        self,
        nodes: Sequence[BaseNode],
        show_progress: bool = False,
        **kwargs: Any,
    ) -> list[BaseNode]:
        out: list[BaseNode] = []
        for node in get_tqdm_iterable(nodes, show_progress, "Chunking documents"):
            text = node.get_content(metadata_mode=MetadataMode.NONE)
            fmt = str(node.metadata.get("fmt") or "text")
            title = node.metadata.get("title") or None
            chunks = self._chunk(text, fmt, str(title) if title is not None else None)
            source = node.as_related_node_info()
            for i, chunk in enumerate(chunks):
                tn = TextNode(
                    id_=self.id_func(i, node),
                    text=chunk.text,
                    metadata=chunk_metadata(chunk, i),
                    relationships={NodeRelationship.SOURCE: source},
                    start_char_idx=chunk.start_char,
                    end_char_idx=chunk.end_char,
                )
                restrict_embed_metadata(tn)
                out.append(tn)
        return out

    def _postprocess_parsed_nodes(
        self, nodes: list[BaseNode], parent_doc_map: dict[str, Document]
    ) -> list[BaseNode]:
        # The base class would re-find every node's text in its document: quadratic on big
        # documents, and wrong for chunks with a repeated prefix. The spans are already set, so
        # do its document part here and let it merge the SOURCE metadata and link prev/next.
        for node in nodes:
            parent = parent_doc_map.get(node.ref_doc_id or "")
            if parent is None:
                continue
            if parent.source_node is not None:
                node.relationships[NodeRelationship.SOURCE] = parent.source_node
            if self.include_metadata:
                node.metadata = {**parent.metadata, **node.metadata}
        nodes = super()._postprocess_parsed_nodes(nodes, {})
        for node in nodes:
            restrict_embed_metadata(node)
        return nodes
