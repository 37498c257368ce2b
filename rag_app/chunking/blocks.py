"""Parse a document into typed blocks (:class:`rag_app.chunking.block.Block`) with character spans.

Two passes: :mod:`rag_app.chunking.line_scan` scans the lines into entries (where each kind of
block starts and ends); this module groups them: numbered lines into headings or lists (with
their lead-in), captions onto tables, then each block's level and heading path.

One line scanner serves both formats (markdown-it-py alone parses at ~1.7 MB/s here, below the
chunker's throughput target, and it does not know Chinese numbering):

* fenced code (```` ``` ```` / ``~~~``, any info string) is one ``code`` block: nothing inside a fence
  is a heading, table or list; an unclosed fence runs to the end of the document;
* ATX headings ``#``…``######`` (≤ 3 spaces of indent) are ``heading`` blocks;
* a GFM table (a row containing ``|`` followed by a delimiter row) is one ``table`` block; its rows
  continue while lines contain ``|``. Caption: the immediately preceding block if it is a heading
  (its text is repeated, the heading stays its own block) or a single short line without sentence
  punctuation such as "附表一 …", "表1 …" or "各年龄保费如下：" (absorbed into the table block);
* list items are ``-``/``*``/``+`` bullets, CommonMark ordered items ``1.``/``1)`` followed by a
  space (Markdown only; in plain text ``1. 总则`` is a Chinese numbered line) and Chinese numbered
  lines 一、 （一） (一) 1、 1． 1.1 1.1.1 1） (1) （1）. Consecutive items form one ``list`` block
  (blank lines between them allowed); a later item of a *shallower* numbering scheme than the
  list's first item ends the list, the same or a deeper scheme continues it (nested items);
* anything else is a ``paragraph``: consecutive non-blank lines, ended by a blank line or by a line
  that starts another block (fence, heading, table, bullet, 第X条, a Chinese numbered line, a
  title-like 第X章/节/编 line). Markdown's soft-wrapped paragraphs are kept; Chinese markers at a
  line start interrupt a paragraph in both formats.

Heading versus list item (the rule, in order):

1. A numbered line right after a paragraph that ends with "：" or ":" is a list item; that
   paragraph's last sentence is the list's *lead-in* (the list block starts there; earlier
   sentences stay a paragraph of their own). Later numbered lines of the same or a deeper scheme
   stay items of that list even when they are short and title-like ("1．中华人民共和国…条例").
   Exception: a short title-like numbered line with body text directly under it (no blank
   line, not another numbered line) titles that text: it is a heading even after a lead-in.
2. Otherwise a short title-like numbered line (≤ 40 chars, no 。！？；, not ending in ，：、) is a
   heading ("一、保险责任", "（一）身故保险金", "1.1 合同构成").
3. Otherwise it is a list item of a list without lead-in ("一、删除《解释》第一条第二项。").

``第X编/部分/章/节`` title-like lines are headings. A ``第X条`` line is body text whose *label*
("第十二条", "第五条 免责事项") becomes a heading-path element: the block carries ``label`` and
``level`` but keeps its kind (paragraph, or list when the article line is a lead-in).

Levels used for paths and sections are re-ranked per document: Markdown headings keep their ``#``
count; the Chinese schemes used as headings in the document are ranked in table order (编 < 章 <
节 < 条 < 一、 < （一） < 1. < 1.1 < 1.1.1 < 1） < (1)) and placed just below the deepest Markdown
heading level in use, or below the (implicit) document title, level 1, when there is none. So in a
plain-text statute 第X章 is level 2 and 第X条 level 3, and in a Markdown statute with ``## 第一章``
the articles are level 3 as well; when a plain-text document has no chapters, its articles (or its
一、 sections) are level 2, i.e. its top-level sections.
"""

from __future__ import annotations

import re

from rag_app.chunking.block import Block
from rag_app.chunking.headings import SCHEME_LEVEL
from rag_app.chunking.line_scan import Entry, LineScanner

__all__ = ["parse_blocks"]

_LEAD_IN_BOUNDARY_RE = re.compile(r"[。！？!?\n]")
_CAPTION_PUNCT = frozenset("。！？；;!?")
_WS_RE = re.compile(r"\s+")
_MAX_CAPTION_CHARS = 60


def _ends_with_colon(text: str) -> bool:
    return text.rstrip().endswith(("：", ":"))


def _caption_like(text: str) -> bool:
    s = text.strip()
    if not s or "\n" in s or len(s) > _MAX_CAPTION_CHARS:
        return False
    return not any(ch in _CAPTION_PUNCT for ch in s)


def _group(text: str, entries: list[Entry], markdown: bool) -> list[Block]:
    blocks: list[Block] = []
    cur_list: Block | None = None
    cur_level = 0
    for e in entries:
        if e.kind == "item":
            assert e.marker is not None
            if e.titles_body:
                cur_list = None
                blocks.append(
                    Block("heading", e.start, e.end, label=e.marker.label, scheme=e.marker.scheme)
                )
                continue
            if cur_list is not None and e.level >= cur_level:
                cur_list.items.append((e.start, e.end))
                cur_list.end = e.end
                continue
            cur_list = None
            prev = blocks[-1] if blocks else None
            if (
                prev is not None
                and prev.kind == "paragraph"
                and _ends_with_colon(text[prev.start : prev.end])
            ):
                lst = _list_with_lead_in(text, blocks, prev)
            elif e.title_like:
                blocks.append(
                    Block("heading", e.start, e.end, label=e.marker.label, scheme=e.marker.scheme)
                )
                continue
            else:
                lst = Block("list", e.start, e.end)
            lst.items.append((e.start, e.end))
            lst.end = e.end
            lst.item_scheme = e.marker.scheme
            blocks.append(lst)
            cur_list, cur_level = lst, e.level
            continue
        cur_list = None
        if e.kind == "para":
            b = Block("paragraph", e.start, e.end)
            if e.marker is not None:  # a 第X条 article
                b.label, b.scheme = e.marker.label, "article"
            blocks.append(b)
        elif e.kind == "division":
            assert e.marker is not None
            blocks.append(
                Block("heading", e.start, e.end, label=e.marker.label, scheme=e.marker.scheme)
            )
        elif e.kind == "table":
            assert e.block is not None
            table = e.block
            prev = blocks[-1] if blocks else None
            if prev is not None and prev.kind == "heading" and prev.label:
                table.caption = prev.label
            elif prev is not None and prev.kind == "paragraph":
                prev_text = text[prev.start : prev.end]
                if _caption_like(prev_text):
                    blocks.pop()
                    table.caption = prev_text.strip()
                    table.caption_span = (prev.start, prev.end)
                    table.start = prev.start
                    table.label, table.scheme = prev.label, prev.scheme
            blocks.append(table)
        else:  # heading, code
            assert e.block is not None
            blocks.append(e.block)
    return blocks


def _list_with_lead_in(text: str, blocks: list[Block], prev: Block) -> Block:
    """Turn the paragraph ``prev`` (the last block) into a lead-in: split off earlier sentences."""
    body = text[prev.start : prev.end]
    cut = None
    for m in _LEAD_IN_BOUNDARY_RE.finditer(body, 0, len(body) - 1):
        cut = m.end()
    lead_start = prev.start
    if cut is not None:
        rest = body[cut:]
        lead_start = prev.start + cut + (len(rest) - len(rest.lstrip()))
        head = body[:cut].rstrip()
        if not head.strip():
            lead_start = prev.start
            cut = None
    if cut is None:
        blocks.pop()
        return Block(
            "list",
            prev.start,
            prev.end,
            lead_in_span=(prev.start, prev.end),
            label=prev.label,
            scheme=prev.scheme,
        )
    prev.end = prev.start + len(body[:cut].rstrip())
    return Block("list", lead_start, prev.end, lead_in_span=(lead_start, prev.start + len(body)))


def _assign_levels_and_paths(text: str, blocks: list[Block]) -> None:
    md_max = 0
    used: set[str] = set()
    for b in blocks:
        if b.label is None:
            continue
        if b.scheme == "markdown":
            md_max = max(md_max, b.level or 0)
        elif b.scheme is not None and b.scheme != "title":
            used.add(b.scheme)
    depth = md_max if md_max else 1
    rank = {s: depth + r for r, s in enumerate(sorted(used, key=SCHEME_LEVEL.__getitem__), 1)}
    stack: list[tuple[int, str]] = []
    for b in blocks:
        b.text = text[b.start : b.end]
        if b.label is not None:
            if b.scheme not in ("markdown", "title"):
                assert b.scheme is not None
                b.level = rank[b.scheme]
            assert b.level is not None
            while stack and stack[-1][0] >= b.level:
                stack.pop()
            stack.append((b.level, b.label))
        b.path = tuple(label for _, label in stack)


def _mark_title_line(text: str, blocks: list[Block], title: str | None) -> None:
    """A first paragraph that is just the document title becomes a level-1 heading."""
    if not title or not blocks:
        return
    first = blocks[0]
    if first.kind != "paragraph" or first.label is not None:
        return
    line = text[first.start : first.end]
    if "\n" in line or "".join(line.split()) != "".join(title.split()):
        return
    first.kind, first.label, first.scheme, first.level = (
        "heading",
        _WS_RE.sub(" ", line),
        "title",
        1,
    )


def parse_blocks(text: str, fmt: str = "markdown", title: str | None = None) -> list[Block]:
    """Split ``text`` into blocks (see the module docstring). ``fmt``: ``markdown`` or ``text``.

    With ``title``, a first paragraph consisting of exactly the title (whitespace aside) becomes a
    level-1 heading, like a Markdown ``#`` title.
    """
    if fmt not in ("markdown", "text"):
        raise ValueError(f"fmt must be 'markdown' or 'text', got {fmt!r}")
    markdown = fmt == "markdown"
    entries = LineScanner(text, markdown).scan()
    blocks = _group(text, entries, markdown)
    _mark_title_line(text, blocks, title)
    _assign_levels_and_paths(text, blocks)
    return blocks
