"""Parse a document into typed blocks with character spans.

Over the ~400-line guide on purpose: it is one line scanner whose block rules (fences, headings,
tables, lists, paragraphs) decide against each other line by line; split apart, each rule would
have to re-check the others' state.

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
from dataclasses import dataclass, field

from rag_app.chunking.headings import (
    SCHEME_LEVEL,
    Marker,
    is_title_like,
    match_markdown_heading,
    match_marker,
)

__all__ = ["Block", "parse_blocks"]

BLOCK_KINDS = ("heading", "paragraph", "list", "table", "code")

_FENCE_OPEN_RE = re.compile(r"^([ \t]*)(`{3,}|~{3,})([^\r]*)")
_FENCE_CLOSE_RE = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*\r?$")
_HR_RE = re.compile(r"^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*\r?$")
_BULLET_RE = re.compile(r"^([ \t]*)([-*+])(?:[ \t]+|\r?$)")
_CM_ORDERED_RE = re.compile(r"^([ \t]*)\d{1,9}[.)](?:[ \t]+|\r?$)")
_DELIM_RE = re.compile(r"^[ \t]*\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*\r?$")
_LEAD_IN_BOUNDARY_RE = re.compile(r"[。！？!?\n]")
_CAPTION_PUNCT = frozenset("。！？；;!?")
_MARKER_FIRST = frozenset("第（(一二三四五六七八九十百千零〇两0123456789０１２３４５６７８９")
_DIVISIONS = frozenset({"part", "chapter", "section"})
_WS_RE = re.compile(r"\s+")
_CM_ITEM_LEVEL = 12  # bullets / CommonMark ordered items: deeper than every Chinese scheme
_MAX_CAPTION_CHARS = 60


@dataclass(slots=True)
class Block:
    """A typed span of the document.

    Attributes:
        kind: ``heading`` | ``paragraph`` | ``list`` | ``table`` | ``code``.
        start, end: the span ``text[start:end]`` (trimmed of surrounding whitespace).
        text: ``text[start:end]``.
        level: the document-relative heading level (see the module docstring) for headings and
            for blocks that open a 第X条 article (their label joins the heading path), else None.
        label: the heading-path label for such blocks ("第三章 责任免除", "第十二条").
        scheme: the scheme of a heading or labelled block (``"markdown"`` for ``#`` headings,
            ``"article"`` for 第X条, ``"title"`` for a first line equal to the document title,
            else a name from the headings level table).
        item_scheme: lists: the numbering scheme of the first item (``"bullet"``/``"ordered"``
            for CommonMark items).
        path: the heading path at this block, its own label included.
        lead_in_span: lists: the lead-in sentence ending in "：" (inside the block), if any.
        items: lists: the span of every item (marker line to the end of its content).
        caption: tables: the caption text repeated with the header (``""`` if none).
        caption_span: tables: the caption's span when it is a line absorbed into the block.
        header_span, separator_span, rows: tables: the header row, the ``| --- |`` row, the rows.
        open_span, close_span: code: the opening fence line and the closing one (None if unclosed).
        fence: code: the closing fence to append to a piece (e.g. ```` ``` ````).
        info: code: the info string of the opening fence (e.g. ``python``).
    """

    kind: str
    start: int
    end: int
    text: str = ""
    level: int | None = None
    label: str | None = None
    scheme: str | None = None
    item_scheme: str | None = None
    path: tuple[str, ...] = ()
    lead_in_span: tuple[int, int] | None = None
    items: list[tuple[int, int]] = field(default_factory=list)
    caption: str = ""
    caption_span: tuple[int, int] | None = None
    header_span: tuple[int, int] | None = None
    separator_span: tuple[int, int] | None = None
    rows: list[tuple[int, int]] = field(default_factory=list)
    open_span: tuple[int, int] | None = None
    close_span: tuple[int, int] | None = None
    fence: str = ""
    info: str = ""


@dataclass(slots=True)
class _Entry:
    kind: str  # code | heading | division | table | item | para
    start: int
    end: int
    marker: Marker | None = None
    level: int = 0
    title_like: bool = False
    titles_body: bool = False
    block: Block | None = None


class _Scanner:
    def __init__(self, text: str, markdown: bool) -> None:
        self.text = text
        self.markdown = markdown
        self.lines = text.split("\n")
        starts = [0] * len(self.lines)
        pos = 0
        for i, line in enumerate(self.lines):
            starts[i] = pos
            pos += len(line) + 1
        self.starts = starts

    # -- spans -----------------------------------------------------------------------------
    def _lstart(self, i: int) -> int:
        line = self.lines[i]
        return self.starts[i] + len(line) - len(line.lstrip())

    def _lend(self, i: int) -> int:
        return self.starts[i] + len(self.lines[i].rstrip())

    # -- line tests ------------------------------------------------------------------------
    def _is_table_start(self, i: int) -> bool:
        nxt = i + 1
        return (
            nxt < len(self.lines)
            and "|" in self.lines[i]
            and "|" in self.lines[nxt]
            and "-" in self.lines[nxt]
            and _DELIM_RE.match(self.lines[nxt]) is not None
        )

    def _fence_open(self, line: str) -> re.Match[str] | None:
        m = _FENCE_OPEN_RE.match(line)
        if m is None:
            return None
        if m.group(2)[0] == "`" and "`" in m.group(3):
            return None
        return m

    def _interrupts(self, i: int) -> bool:
        """Does line ``i`` (non-blank) start a new block inside a paragraph or item?"""
        line = self.lines[i]
        s = line.strip()
        c = s[0]
        if c in "`~" and self._fence_open(line) is not None and len(line) - len(line.lstrip()) < 4:
            return True
        if c == "#" and match_markdown_heading(line) is not None:
            return True
        if "|" in s and self._is_table_start(i):
            return True
        if c in "-*_+" and (_HR_RE.match(line) or _BULLET_RE.match(line)):
            return True
        if c in _MARKER_FIRST:
            marker = match_marker(s)
            if marker is not None:
                if marker.scheme in _DIVISIONS:
                    return is_title_like(s)
                return True
        return False

    # -- scanning --------------------------------------------------------------------------
    def scan(self) -> list[_Entry]:
        lines = self.lines
        n = len(lines)
        entries: list[_Entry] = []
        i = 0
        while i < n:
            line = lines[i]
            s = line.strip()
            if not s:
                i += 1
                continue
            c = s[0]
            indent = len(line) - len(line.lstrip())
            if c in "`~" and indent < 4:
                m = self._fence_open(line)
                if m is not None:
                    i = self._scan_code(i, m, entries)
                    continue
            if c == "#":
                h = match_markdown_heading(line)
                if h is not None:
                    start, end = self._lstart(i), self._lend(i)
                    block = Block("heading", start, end, level=h[0], label=h[1], scheme="markdown")
                    entries.append(_Entry("heading", start, end, block=block))
                    i += 1
                    continue
            if "|" in s and self._is_table_start(i):
                i = self._scan_table(i, entries)
                continue
            if c in "-*_" and _HR_RE.match(line):
                entries.append(_Entry("para", self._lstart(i), self._lend(i)))
                i += 1
                continue
            if c in "-*+":
                bm = _BULLET_RE.match(line)
                if bm is not None:
                    i = self._scan_cm_item(i, "bullet", entries)
                    continue
            if self.markdown and c.isdigit():
                om = _CM_ORDERED_RE.match(line)
                if om is not None:
                    i = self._scan_cm_item(i, "ordered", entries)
                    continue
            marker = match_marker(s) if c in _MARKER_FIRST else None
            if marker is not None and marker.scheme in _DIVISIONS:
                if is_title_like(s):
                    entries.append(
                        _Entry("division", self._lstart(i), self._lend(i), marker=marker)
                    )
                    i += 1
                    continue
                marker = None
            if marker is not None and marker.scheme != "article":
                title_like = len(s) > marker.end and is_title_like(s)
                j = i + 1
                if not title_like:
                    while j < n and lines[j].strip() and not self._interrupts(j):
                        j += 1
                entries.append(
                    _Entry(
                        "item",
                        self._lstart(i),
                        self._lend(j - 1),
                        marker=marker,
                        level=marker.level,
                        title_like=title_like,
                        # a short numbered title with body text right under it is a heading
                        titles_body=title_like
                        and j < n
                        and bool(lines[j].strip())
                        and not self._interrupts(j),
                    )
                )
                i = j
                continue
            j = i + 1
            while j < n and lines[j].strip() and not self._interrupts(j):
                j += 1
            start, end = self._lstart(i), self._lend(j - 1)
            entries.append(_Entry("para", start, end, marker=marker))
            i = j
        return entries

    def _scan_code(self, i: int, m: re.Match[str], entries: list[_Entry]) -> int:
        fence = m.group(2)
        close = self._find_fence_close(i + 1, fence)
        if close is not None:
            end_line = close
        else:  # unclosed: the code runs to the last non-blank line of the document
            end_line = len(self.lines) - 1
            while end_line > i and not self.lines[end_line].strip():
                end_line -= 1
        block = Block(
            "code",
            self._lstart(i),
            self._lend(end_line),
            open_span=(self._lstart(i), self._lend(i)),
            close_span=(self._lstart(close), self._lend(close)) if close is not None else None,
            fence=fence,
            info=m.group(3).strip(),
        )
        entries.append(_Entry("code", block.start, block.end, block=block))
        return end_line + 1

    def _find_fence_close(self, j: int, fence: str) -> int | None:
        lines = self.lines
        for k in range(j, len(lines)):
            line = lines[k]
            if fence[0] in line:
                cm = _FENCE_CLOSE_RE.match(line)
                if cm is not None and cm.group(1)[0] == fence[0] and len(cm.group(1)) >= len(fence):
                    return k
        return None

    def _scan_table(self, i: int, entries: list[_Entry]) -> int:
        lines = self.lines
        n = len(lines)
        j = i + 2
        rows: list[tuple[int, int]] = []
        while j < n and "|" in lines[j] and lines[j].strip():
            rows.append((self._lstart(j), self._lend(j)))
            j += 1
        block = Block(
            "table",
            self._lstart(i),
            self._lend(j - 1),
            header_span=(self._lstart(i), self._lend(i)),
            separator_span=(self._lstart(i + 1), self._lend(i + 1)),
            rows=rows,
        )
        entries.append(_Entry("table", block.start, block.end, block=block))
        return j

    @staticmethod
    def _indent(line: str) -> int:
        width = 0
        for ch in line:
            if ch == " ":
                width += 1
            elif ch == "\t":
                width += 4 - width % 4
            else:
                break
        return width

    def _scan_cm_item(self, i: int, scheme: str, entries: list[_Entry]) -> int:
        """A bullet / ordered item: its marker line, lazy continuation lines, and indented
        content (also after blank lines), nested fenced code included. A new marker ends it."""
        lines = self.lines
        n = len(lines)
        cont = self._indent(lines[i]) + 2
        last = i
        j = i + 1
        while j < n:
            line = lines[j]
            if not line.strip():
                k = j + 1
                while k < n and not lines[k].strip():
                    k += 1
                if k < n and self._indent(lines[k]) >= cont and not self._is_cm_marker(lines[k]):
                    j = k
                    continue
                break
            if self._is_cm_marker(line):
                break
            ind = self._indent(line)
            if ind >= cont and line.lstrip()[:1] in "`~":
                fm = self._fence_open(line)
                if fm is not None:
                    close = self._find_fence_close(j + 1, fm.group(2))
                    last = close if close is not None else n - 1
                    j = last + 1
                    continue
            if ind < cont and self._interrupts(j):
                break
            last = j
            j += 1
        entries.append(
            _Entry(
                "item",
                self._lstart(i),
                self._lend(last),
                level=_CM_ITEM_LEVEL,
                marker=Marker(scheme, _CM_ITEM_LEVEL, "", 0),
            )
        )
        return j

    @staticmethod
    def _is_cm_marker(line: str) -> bool:
        s = line.lstrip()
        if not s:
            return False
        if s[0] in "-*+":
            return _BULLET_RE.match(line) is not None and _HR_RE.match(line) is None
        return False


def _ends_with_colon(text: str) -> bool:
    return text.rstrip().endswith(("：", ":"))


def _caption_like(text: str) -> bool:
    s = text.strip()
    if not s or "\n" in s or len(s) > _MAX_CAPTION_CHARS:
        return False
    return not any(ch in _CAPTION_PUNCT for ch in s)


def _group(text: str, entries: list[_Entry], markdown: bool) -> list[Block]:
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
    entries = _Scanner(text, markdown).scan()
    blocks = _group(text, entries, markdown)
    _mark_title_line(text, blocks, title)
    _assign_levels_and_paths(text, blocks)
    return blocks
