"""StructureAwareNodeParser: blocks → chunks with heading paths, table/list rules and overlap.

Rules (``chunk_document`` implements them; the node parser wraps it):

* The document is parsed into blocks (:mod:`rag_app.chunking.blocks`). Every chunk carries a
  heading path rooted at the document title when given (a first heading equal to the title is not
  repeated).
* Sections: a heading (or 第X条 label) of level ≤ ``section_level`` starts a section; a chunk never
  holds content of two sections and overlap never crosses one. A section with nothing but its
  heading (a document title right before ``## 第一章``) is carried into the next section's first
  chunk rather than becoming a heading-only chunk.
* The heading path of a chunk is the common prefix of the paths of its non-heading blocks.
* Inside a section, neighbouring blocks are merged greedily up to ``chunk_size`` tokens. A
  heading-led group (a heading or 第X条 and everything under it) that does not fit in what is left
  of the current chunk starts a new chunk when the group fits in one chunk, or when the current
  chunk is at least half full; headings left at the end of a chunk move to the next one. When a
  heading and the paragraph, list or table under it do not fit together, that block is split so
  its first piece follows the heading (no heading-only chunk), even if it would fit alone.
* A block over the budget is split: paragraphs at sentence boundaries (。！？；\\n, then ，, then
  anywhere; equivalent to langchain's ``RecursiveCharacterTextSplitter`` with Chinese separators),
  tables by rows with caption + header + separator repeated (:mod:`.tables`), lists between items
  with the lead-in repeated (:mod:`.lists`), code by lines with the fence repeated and closed
  (:mod:`.pieces`). Its first piece may fill the rest of the current chunk (if at least a quarter
  of the budget is left); its last piece may be followed by the next blocks.
* Overlap: a chunk that starts with a paragraph (or paragraph piece) continuing the same heading
  path as the paragraph that ended the previous chunk gets, as ``prefix``, the longest run of
  whole sentences at the end of that paragraph within ``chunk_overlap`` tokens (and within what
  the budget leaves). No overlap into or out of tables, lists, code or headings.
* ``count_tokens(chunk.text) <= chunk_size`` unless ``oversized`` (an atomic unit was cut or a
  unit alone exceeds the budget).
"""

from __future__ import annotations

from llama_index.core.bridge.pydantic import Field, model_validator

from rag_app.chunking.block import Block
from rag_app.chunking.blocks import parse_blocks
from rag_app.chunking.lists import ListSplitter
from rag_app.chunking.nodes import Chunk, ChunkNodeParser
from rag_app.chunking.pieces import Piece, split_code, split_paragraph, whole
from rag_app.chunking.sentences import overlap_start
from rag_app.chunking.tables import TableSplitter
from rag_app.chunking.tokens import count_tokens

__all__ = ["Chunk", "StructureAwareNodeParser", "chunk_document", "validate_sizes"]

FORMATS = ("markdown", "text")


def validate_sizes(chunk_size: int, chunk_overlap: int) -> None:
    """Raise ``ValueError`` with a helpful message for an impossible size/overlap pair."""
    if chunk_size <= 0:
        raise ValueError(f"chunk_size must be a positive token count, got {chunk_size}")
    if chunk_overlap < 0:
        raise ValueError(f"chunk_overlap must be >= 0, got {chunk_overlap}")
    if chunk_overlap >= chunk_size:
        raise ValueError(
            f"chunk_overlap ({chunk_overlap}) must be smaller than chunk_size ({chunk_size}); "
            "lower chunk_overlap or raise chunk_size"
        )


def _norm(label: str) -> str:
    return "".join(label.split()).lstrip("#")


class _Packer:
    def __init__(
        self,
        text: str,
        blocks: list[Block],
        *,
        title: str | None,
        chunk_size: int,
        chunk_overlap: int,
        section_level: int,
    ) -> None:
        self.text = text
        self.blocks = blocks
        self.size = chunk_size
        self.overlap = chunk_overlap
        self.section_level = section_level
        self.root = " ".join(title.split()) if title and title.strip() else None
        self.tables = TableSplitter(chunk_size)
        self.lists = ListSplitter(chunk_size)
        self.chunks: list[Chunk] = []
        self.acc: list[Piece] = []
        self.acc_t = 0
        self.acc_cap = chunk_size
        self.prev_last: Piece | None = None

    # -- driver ----------------------------------------------------------------------------
    def run(self) -> list[Chunk]:
        blocks = self.blocks
        n = len(blocks)
        tokens = [count_tokens(b.text) for b in blocks]
        prefix_sum = [0] * (n + 1)
        for i, t in enumerate(tokens):
            prefix_sum[i + 1] = prefix_sum[i] + t
        group = [0] * n
        open_groups: list[int] = []
        for i, b in enumerate(blocks):
            if b.level is not None:
                while open_groups and blocks[open_groups[-1]].level >= b.level:  # type: ignore[operator]
                    j = open_groups.pop()
                    group[j] = prefix_sum[i] - prefix_sum[j]
                open_groups.append(i)
        for j in open_groups:
            group[j] = prefix_sum[n] - prefix_sum[j]
        for i, b in enumerate(blocks):
            if b.level is not None and b.level <= self.section_level:
                # a section holding nothing but headings (a title right before a chapter
                # heading) is carried into the next section instead of becoming a chunk
                if not self._only_headings():
                    self._flush(None)
                self.prev_last = None
            self._place(b, tokens[i], group[i])
        self._flush(None)
        return self.chunks

    # -- placing blocks --------------------------------------------------------------------
    def _place(self, b: Block, t: int, g: int) -> None:
        size = self.size
        if (
            b.level is not None
            and self.acc
            and not self._only_headings()
            and self.acc_t + g > self.acc_cap
            and (g <= size or 2 * self.acc_t >= self.acc_cap)
        ):
            # a heading-led group that does not fit starts a new chunk
            self._flush(t)
        if self.acc and self.acc_t + t <= self.acc_cap:
            self._add(whole(b, t))
            return
        if t <= size:
            if self.acc and self._only_headings() and b.kind in ("paragraph", "list", "table"):
                # rather than emit a heading-only chunk, split the text under the heading
                self._split_and_place(b, t)
                return
            if self.acc:
                self._flush(t)
            if self.acc and self.acc_t + t <= size:
                self._add(whole(b, t))
            else:
                self._flush(None)
                self._start(whole(b, t))
            return
        self._split_and_place(b, t)

    def _split_and_place(self, b: Block, t: int) -> None:
        pieces: list[Piece] | None = None
        if self.acc and not self._only_headings():
            room = self.acc_cap - self.acc_t
            if room >= self.size // 4:  # fill the current chunk with the first piece
                pieces = self._split(b, room, fresh=False)
            if pieces is None:
                self._flush(t)  # trailing headings are carried if small
        if pieces is None and self.acc:  # only headings: the first piece goes under them
            if self.acc_t <= self.size // 4:
                # a paragraph may be cut at a comma to fit; a list item or table row may not
                fresh = b.kind not in ("list", "table", "code")
                pieces = self._split(b, self.size - self.acc_t, fresh=fresh)
            if pieces is None:
                self._flush(None)
        if pieces is None:
            pieces = self._split(b, self._fresh_budget(b), fresh=True)
        assert pieces
        first, rest = pieces[0], pieces[1:]
        if self.acc:
            self._add(first)
        else:
            self._start(first)
        for p in rest:
            self._flush(None)
            self._start(p)
        if pieces[-1].suffix:
            self._flush(None)

    def _split(self, b: Block, first_budget: int, *, fresh: bool) -> list[Piece] | None:
        text, size = self.text, self.size
        if b.kind == "table":
            return self.tables.split(text, b, first_budget, fresh=fresh)
        if b.kind == "list":
            return self.lists.split(text, b, first_budget, fresh=fresh)
        if b.kind == "code":
            return split_code(text, b, first_budget, size, fresh=fresh)
        rest_budget = size - self.overlap if self.overlap else size
        return split_paragraph(text, b, first_budget, rest_budget, fresh=fresh)

    def _fresh_budget(self, b: Block) -> int:
        if b.kind == "paragraph" and b.level is None and self._overlap_source(b.path) is not None:
            return self.size - self.overlap
        return self.size

    # -- the accumulator -------------------------------------------------------------------
    def _only_headings(self) -> bool:
        return all(p.kind == "heading" for p in self.acc)

    def _overlap_source(self, path: tuple[str, ...]) -> Piece | None:
        prev = self.prev_last
        if (
            self.overlap
            and prev is not None
            and prev.kind == "paragraph"
            and prev.path == path
            and not prev.suffix
        ):
            return prev
        return None

    def _start(self, p: Piece) -> None:
        self.acc = [p]
        self.acc_t = p.tokens
        eligible = (
            p.kind == "paragraph"
            and not p.prefix
            and not p.opens_label
            and self._overlap_source(p.path) is not None
        )
        self.acc_cap = self.size - self.overlap if eligible else self.size

    def _add(self, p: Piece) -> None:
        self.acc.append(p)
        self.acc_t += p.tokens

    def _flush(self, carry_for: int | None) -> None:
        """Emit the accumulated pieces; with ``carry_for`` (the tokens of what comes next),
        trailing headings move to the next chunk if they fit with it."""
        acc = self.acc
        if not acc:
            return
        k = len(acc)
        while k > 0 and acc[k - 1].kind == "heading":
            k -= 1
        if carry_for is not None and 0 < k < len(acc):
            heads = acc[k:]
            heads_t = sum(p.tokens for p in heads)
            if heads_t + carry_for <= self.size or (
                carry_for > self.size and heads_t <= self.size // 4
            ):
                self._emit(acc[:k], self.acc_t - heads_t)
                self.acc, self.acc_t, self.acc_cap = heads, heads_t, self.size
                return
        self._emit(acc, self.acc_t)
        self.acc, self.acc_t, self.acc_cap = [], 0, self.size

    def _emit(self, units: list[Piece], body_t: int) -> None:
        text = self.text
        first, last = units[0], units[-1]
        start, end = first.start, last.end
        prefix, suffix = first.prefix, last.suffix
        if not prefix and first.kind == "paragraph" and not first.opens_label:
            src = self._overlap_source(first.path)
            if src is not None:
                allowed = min(self.overlap, self.size - body_t)
                b = overlap_start(text, src.start, src.end, allowed)
                if b is not None:
                    prefix = text[b:start]
        chunk_text = prefix + text[start:end] + suffix
        token_count = count_tokens(chunk_text)
        # the path is the common prefix of the content's paths; headings in the chunk are the
        # ancestors (or first lines) of the content after them, so they do not shorten it
        content = [u for u in units if u.kind != "heading"] or units
        path = content[0].path
        for u in content[1:]:
            if u.path != path:
                n = 0
                for a, c in zip(path, u.path, strict=False):
                    if a != c:
                        break
                    n += 1
                path = path[:n]
        title_path = list(path)
        if self.root is not None and not (title_path and _norm(title_path[0]) == _norm(self.root)):
            title_path.insert(0, self.root)
        self.chunks.append(
            Chunk(
                text=chunk_text,
                start_char=start,
                end_char=end,
                prefix_chars=len(prefix),
                suffix_chars=len(suffix),
                title_path=title_path,
                block_types=sorted({u.kind for u in units}),
                token_count=token_count,
                oversized=token_count > self.size or any(u.oversized for u in units),
            )
        )
        self.prev_last = last


def chunk_document(
    text: str,
    fmt: str = "markdown",
    *,
    title: str | None = None,
    chunk_size: int = 512,
    chunk_overlap: int = 64,
    section_level: int = 2,
) -> list[Chunk]:
    """Chunk one document (``fmt``: ``"markdown"`` or ``"text"``); see the module docstring."""
    validate_sizes(chunk_size, chunk_overlap)
    if fmt not in FORMATS:
        raise ValueError(f"fmt must be one of {FORMATS}, got {fmt!r}")
    if not text.strip():
        return []
    blocks = parse_blocks(text, fmt, title)
    packer = _Packer(
        text,
        blocks,
        title=title,
        chunk_size=chunk_size,
        chunk_overlap=chunk_overlap,
        section_level=section_level,
    )
    return packer.run()


class StructureAwareNodeParser(ChunkNodeParser):
    """Structure-aware chunking of Markdown and plain-text Chinese documents.

    Reads ``fmt`` and ``title`` from each document's metadata and emits ``TextNode``s with
    ``title_path``, ``block_types``, ``start_char``, ``end_char``, ``prefix_chars``,
    ``suffix_chars``, ``chunk_index``, ``token_count`` and ``oversized`` metadata; see
    :func:`chunk_document` and :mod:`rag_app.chunking.nodes` for the contract.
    """

    chunk_size: int = Field(512, gt=0, description="Token budget of a chunk (count_tokens).")
    chunk_overlap: int = Field(
        64, ge=0, description="Overlap in tokens, whole sentences, inside a section only."
    )
    section_level: int = Field(
        2,
        ge=0,
        description="Headings of this level or above (smaller numbers) are never merged across.",
    )

    @model_validator(mode="after")
    def _check_sizes(self) -> StructureAwareNodeParser:
        validate_sizes(self.chunk_size, self.chunk_overlap)
        return self

    @classmethod
    def class_name(cls) -> str:
        return "StructureAwareNodeParser"

    def _chunk(self, text: str, fmt: str, title: str | None) -> list[Chunk]:
        return chunk_document(
            text,
            fmt,
            title=title,
            chunk_size=self.chunk_size,
            chunk_overlap=self.chunk_overlap,
            section_level=self.section_level,
        )

    def chunk(self, text: str, fmt: str = "markdown", title: str | None = None) -> list[Chunk]:
        """Chunk one text with this parser's settings (no LlamaIndex objects)."""
        return self._chunk(text, fmt, title)
