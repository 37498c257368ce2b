"""The first pass of :func:`rag_app.chunking.blocks.parse_blocks`: the document's lines scanned into
entries (a fenced code block, a Markdown heading, a 第X编/章/节 division, a table, a list item, a
paragraph), each with its span and, for numbered lines, its marker and whether it is title-like or
titles the body text under it. Where each kind starts and ends is the rule list in
:mod:`rag_app.chunking.blocks`; which entries become headings, lists with a lead-in or captioned
tables is decided by its second pass.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rag_app.chunking.block import Block
from rag_app.chunking.headings import (
    Marker,
    is_title_like,
    match_markdown_heading,
    match_marker,
)

__all__ = ["Entry", "LineScanner"]

_FENCE_OPEN_RE = re.compile(r"^([ \t]*)(`{3,}|~{3,})([^\r]*)")
_FENCE_CLOSE_RE = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*\r?$")
_HR_RE = re.compile(r"^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*\r?$")
_BULLET_RE = re.compile(r"^([ \t]*)([-*+])(?:[ \t]+|\r?$)")
_CM_ORDERED_RE = re.compile(r"^([ \t]*)\d{1,9}[.)](?:[ \t]+|\r?$)")
_DELIM_RE = re.compile(r"^[ \t]*\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*\r?$")
_MARKER_FIRST = frozenset("第（(一二三四五六七八九十百千零〇两0123456789０１２３４５６７８９")
_DIVISIONS = frozenset({"part", "chapter", "section"})
_CM_ITEM_LEVEL = 12  # bullets / CommonMark ordered items: deeper than every Chinese scheme


@dataclass(slots=True)
class Entry:
    kind: str  # code | heading | division | table | item | para
    start: int
    end: int
    marker: Marker | None = None
    level: int = 0
    title_like: bool = False
    titles_body: bool = False
    block: Block | None = None


class LineScanner:
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
    def scan(self) -> list[Entry]:
        lines = self.lines
        n = len(lines)
        entries: list[Entry] = []
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
                    entries.append(Entry("heading", start, end, block=block))
                    i += 1
                    continue
            if "|" in s and self._is_table_start(i):
                i = self._scan_table(i, entries)
                continue
            if c in "-*_" and _HR_RE.match(line):
                entries.append(Entry("para", self._lstart(i), self._lend(i)))
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
                    entries.append(Entry("division", self._lstart(i), self._lend(i), marker=marker))
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
                    Entry(
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
            entries.append(Entry("para", start, end, marker=marker))
            i = j
        return entries

    def _scan_code(self, i: int, m: re.Match[str], entries: list[Entry]) -> int:
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
        entries.append(Entry("code", block.start, block.end, block=block))
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

    def _scan_table(self, i: int, entries: list[Entry]) -> int:
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
        entries.append(Entry("table", block.start, block.end, block=block))
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

    def _scan_cm_item(self, i: int, scheme: str, entries: list[Entry]) -> int:
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
            Entry(
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
