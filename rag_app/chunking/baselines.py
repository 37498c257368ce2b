"""Baseline chunkers kept for comparison, with the same node contract as the structure parser.

* ``FixedSizeNodeParser`` ("fixed"): windows of ``chunk_size`` tokens (the
  :func:`~rag_app.chunking.tokens.count_tokens` tokens), consecutive windows sharing
  ``chunk_overlap`` tokens; no structure, ``title_path`` and ``block_types`` empty.
* ``SentenceNodeParser`` ("sentence"): LlamaIndex's ``MarkdownNodeParser`` (Markdown input only)
  then ``SentenceSplitter(chunk_size, chunk_overlap)`` on each section, with our token count and a
  Chinese sentence splitter (Punkt does not split Chinese). ``title_path`` is the section's
  ``header_path`` from ``MarkdownNodeParser`` plus the section's own heading (so it means the same
  as the structure parser's path); ``""`` for plain text. ``block_types`` is empty.

Both locate every chunk in the source, so ``start_char``/``end_char`` are honest and
``prefix_chars == suffix_chars == 0`` (overlap is shared source text, spans overlap).
"""

from __future__ import annotations

import re
from typing import Any

from llama_index.core.bridge.pydantic import Field, PrivateAttr, model_validator
from llama_index.core.node_parser import MarkdownNodeParser, SentenceSplitter
from llama_index.core.schema import Document

from rag_app.chunking.nodes import Chunk, ChunkNodeParser
from rag_app.chunking.parser import FORMATS, validate_sizes
from rag_app.chunking.tokens import count_tokens, tokenize

__all__ = ["FixedSizeNodeParser", "SentenceNodeParser", "split_sentences_zh"]

_TOKEN_RE = re.compile(r"[A-Za-z0-9]{1,4}|\S")
_SENTENCE_RE = re.compile(r"[^。！？；!?;\n]+[。！？；!?;\n]*|[。！？；!?;\n]+")
_MD_HEADER_RE = re.compile(r"^(#+)\s(.*)")
_PATH_SEP = "\x1f"  # header_path separator that cannot occur in a heading


def split_sentences_zh(text: str) -> list[str]:
    """Split after 。！？；!?; and line breaks; the pieces concatenate back to ``text``."""
    return _SENTENCE_RE.findall(text)


def _check_fmt(fmt: str) -> None:
    if fmt not in FORMATS:
        raise ValueError(f"fmt must be one of {FORMATS}, got {fmt!r}")


def _locate(haystack: str, needle: str, start: int) -> tuple[int, int] | None:
    """Span of ``needle`` in ``haystack`` from ``start``; whitespace may differ as a fallback."""
    pos = haystack.find(needle, start)
    if pos >= 0:
        return pos, pos + len(needle)
    words = needle.split()
    if not words:
        return None
    m = re.compile(r"\s*".join(re.escape(w) for w in words)).search(haystack, start)
    return (m.start(), m.end()) if m else None


class FixedSizeNodeParser(ChunkNodeParser):
    """Fixed windows of ``chunk_size`` tokens, ``chunk_overlap`` tokens shared (the "fixed" baseline)."""

    chunk_size: int = Field(512, gt=0, description="Tokens per window.")
    chunk_overlap: int = Field(64, ge=0, description="Tokens shared by consecutive windows.")

    @model_validator(mode="after")
    def _check_sizes(self) -> FixedSizeNodeParser:
        validate_sizes(self.chunk_size, self.chunk_overlap)
        return self

    @classmethod
    def class_name(cls) -> str:
        return "FixedSizeNodeParser"

    def _chunk(self, text: str, fmt: str, title: str | None) -> list[Chunk]:
        _check_fmt(fmt)
        starts: list[int] = []
        ends: list[int] = []
        for m in _TOKEN_RE.finditer(text):
            starts.append(m.start())
            ends.append(m.end())
        n = len(starts)
        step = self.chunk_size - self.chunk_overlap
        chunks: list[Chunk] = []
        i = 0
        while i < n:
            j = min(i + self.chunk_size, n)
            s, e = starts[i], ends[j - 1]
            body = text[s:e]
            tc = count_tokens(body)
            chunks.append(Chunk(body, s, e, 0, 0, [], [], tc, tc > self.chunk_size))
            if j == n:
                break
            i += step
        return chunks


class SentenceNodeParser(ChunkNodeParser):
    """``MarkdownNodeParser`` (Markdown only) + ``SentenceSplitter`` (the "sentence" baseline)."""

    chunk_size: int = Field(512, gt=0, description="Token budget of a chunk.")
    chunk_overlap: int = Field(64, ge=0, description="Token overlap of SentenceSplitter.")

    _splitter: SentenceSplitter = PrivateAttr()
    _markdown: MarkdownNodeParser = PrivateAttr()

    @model_validator(mode="after")
    def _check_sizes(self) -> SentenceNodeParser:
        validate_sizes(self.chunk_size, self.chunk_overlap)
        return self

    def model_post_init(self, __context: Any) -> None:
        self._splitter = SentenceSplitter(
            chunk_size=self.chunk_size,
            chunk_overlap=self.chunk_overlap,
            tokenizer=tokenize,
            chunking_tokenizer_fn=split_sentences_zh,
            separator=" ",
            paragraph_separator="\n\n",
            include_metadata=False,
            include_prev_next_rel=False,
        )
        self._markdown = MarkdownNodeParser(
            header_path_separator=_PATH_SEP, include_metadata=True, include_prev_next_rel=False
        )

    @classmethod
    def class_name(cls) -> str:
        return "SentenceNodeParser"

    def _sections(self, text: str, fmt: str) -> list[tuple[int, int, list[str]]]:
        if fmt != "markdown":
            return [(0, len(text), [])]
        sections: list[tuple[int, int, list[str]]] = []
        cursor = 0
        for node in self._markdown.get_nodes_from_node(Document(text=text)):
            body = node.get_content()
            span = _locate(text, body, cursor)
            if span is None:  # cannot happen with MarkdownNodeParser's output; be safe
                continue
            parents = [p for p in str(node.metadata.get("header_path", "")).split(_PATH_SEP) if p]
            m = _MD_HEADER_RE.match(body)
            path = [*parents, m.group(2).strip()] if m else parents
            sections.append((span[0], span[1], path))
            cursor = span[1]
        return sections

    def _overlap_floor(self, section: str, start: int, end: int) -> int:
        """The earliest offset the chunk after ``section[start:end]`` can start at."""
        if self.chunk_overlap == 0:
            return end
        starts = [m.start() for m in _TOKEN_RE.finditer(section, start, end)]
        if len(starts) <= self.chunk_overlap:
            return start
        return starts[len(starts) - self.chunk_overlap]

    def _chunk(self, text: str, fmt: str, title: str | None) -> list[Chunk]:
        _check_fmt(fmt)
        chunks: list[Chunk] = []
        for s0, e0, path in self._sections(text, fmt):
            section = text[s0:e0]
            cursor = covered = 0
            for split in self._splitter.split_text(section):
                span = _locate(section, split, cursor)
                # a split repeating text of the previous chunk ("x = 1" twice) is the later
                # occurrence: the one that reaches past what is already covered
                while span is not None and span[1] <= covered:
                    later = _locate(section, split, span[0] + 1)
                    if later is None:
                        break
                    span = later
                if span is None:
                    continue
                covered = max(covered, span[1])
                s, e = s0 + span[0], s0 + span[1]
                body = text[s:e]
                tc = count_tokens(body)
                chunks.append(Chunk(body, s, e, 0, 0, list(path), [], tc, tc > self.chunk_size))
                # the next chunk starts after this one's start, and at most ``chunk_overlap``
                # tokens before its end (SentenceSplitter's overlap): search from there
                cursor = max(span[0] + 1, self._overlap_floor(section, span[0], span[1]))
        return chunks
