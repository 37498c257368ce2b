"""Heading and numbering-marker detection for Chinese documents (plain text and Markdown).

Level table (absolute levels; smaller = higher in the hierarchy)::

    level  scheme       examples
    1      part         第一编 总则 / 第一部分 总则
    2      chapter      第三章 责任免除
    3      section      第二节 保险金额
    4      article      第十二条 … / 第一百二十条之二 …  (the *label* is the heading)
    5      cn_enum      一、保险责任
    6      cn_paren     （一）身故保险金 / (一) …
    7      num          1. 总则 / 1、总则 / 1．总则
    8      num2         1.1 合同构成
    9      num3         1.1.1 投保范围
    10     num_rparen   1）… / 1) …
    11     num_paren    （1）… / (1) …
    1-6    markdown     # … ###### (the number of ``#``)

:func:`detect_heading` answers "can this line be a heading on its own?" without context:

* ``# …`` Markdown headings (≤ 3 leading spaces, non-empty text);
* ``第X编/部分/章/节`` lines that are short (≤ ``MAX_HEADING_CHARS``) and read like a title
  (no sentence punctuation);
* ``第X条`` at the start of a line always: the article *label* ("第十二条", plus a short title such
  as "第五条 免责事项" or "第五条 【免责事项】" when the line has one) is the heading, while the line
  itself stays body text;
* numbered lines (一、 （一） 1. 1.1 1.1.1 1） (1)) only when they are short and title-like.

Whether a title-like numbered line is a heading or a *list item* depends on context and is decided
by :mod:`rag_app.chunking.blocks` (a line right after a lead-in ending in "：" is an item).
The levels used for heading paths are re-ranked per document there as well.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rag_app.text.numerals import CN_NUMERALS

__all__ = [
    "HEADING_SCHEMES",
    "ITEM_SCHEMES",
    "MAX_HEADING_CHARS",
    "SCHEME_LEVEL",
    "HeadingScheme",
    "Marker",
    "detect_heading",
    "detect_item",
    "is_title_like",
    "match_marker",
    "match_markdown_heading",
]

MAX_HEADING_CHARS = 40
"""A 第X编/章/节 or numbered line longer than this (stripped) is body text, not a heading."""


@dataclass(frozen=True, slots=True)
class HeadingScheme:
    name: str
    level: int
    examples: str


HEADING_SCHEMES: tuple[HeadingScheme, ...] = (
    HeadingScheme("part", 1, "第一编 总则 / 第一部分"),
    HeadingScheme("chapter", 2, "第三章 责任免除"),
    HeadingScheme("section", 3, "第二节 保险金额"),
    HeadingScheme("article", 4, "第十二条 / 第一百二十条之二"),
    HeadingScheme("cn_enum", 5, "一、"),
    HeadingScheme("cn_paren", 6, "（一） / (一)"),
    HeadingScheme("num", 7, "1. / 1、 / 1．"),
    HeadingScheme("num2", 8, "1.1"),
    HeadingScheme("num3", 9, "1.1.1"),
    HeadingScheme("num_rparen", 10, "1） / 1)"),
    HeadingScheme("num_paren", 11, "（1） / (1)"),
)
SCHEME_LEVEL: dict[str, int] = {s.name: s.level for s in HEADING_SCHEMES}
"""Absolute level of every Chinese scheme (Markdown headings use their ``#`` count)."""

ITEM_SCHEMES = frozenset({"cn_enum", "cn_paren", "num", "num2", "num3", "num_rparen", "num_paren"})
"""Numbering schemes that can mark either a short heading or a list item."""

_CN = CN_NUMERALS
_NUM = rf"(?:[{_CN}]+|[0-9０-９]+)"
_D = "[0-9０-９]"

_MD_HEADING_RE = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*\r?$")
_DIVISION_RE = re.compile(rf"^第{_NUM}(编|部分|章|节)")
_ARTICLE_RE = re.compile(rf"^第{_NUM}条(?:之{_NUM})?")
_ARTICLE_BRACKET_TITLE_RE = re.compile(r"^[【\[［][^】\]］]{1,20}[】\]］]")
_ARTICLE_TITLE_RE = re.compile(
    r"^([^\s，。；：,.;:！？!?、（）()【】\[\]《》“”\"'‘’]{2,12})[ \t\u3000]+(\S)"
)
_ARTICLE_TITLE_STOP = frozenset("的为本是在了对由将把于若如")
_CN_ENUM_RE = re.compile(rf"^[{_CN}]+、")
_CN_PAREN_RE = re.compile(rf"^[（(][{_CN}]+[）)]")
_NUM_PAREN_RE = re.compile(rf"^[（(]{_D}{{1,3}}[）)]")
_NUM3_RE = re.compile(rf"^{_D}{{1,3}}[.．]{_D}{{1,3}}[.．]{_D}{{1,3}}[.．]?")
_NUM2_RE = re.compile(rf"^{_D}{{1,3}}[.．]{_D}{{1,3}}[.．]?")
_NUM_RE = re.compile(rf"^{_D}{{1,3}}[.．、]")
_NUM_RPAREN_RE = re.compile(rf"^{_D}{{1,3}}[)）]")
_WS_RE = re.compile(r"[ \t\u3000]+")

# After a 第X章/节/编 label with no space, these characters mean "a sentence citing the chapter".
_DIVISION_STOP = frozenset("的所规中之至和或及、第条款项内外起")
# After "1.1" with no space, these mean a quantity ("1.5万元"), not a numbering marker.
_QUANTITY_CHARS = frozenset("万千百亿元倍%％个年月日时分秒岁次米克斤吨升度号")
_SENTENCE_PUNCT = frozenset("。！？；;!?")
_TRAILING_PUNCT = frozenset("，,：:、")
_DIGITS = frozenset("0123456789０１２３４５６７８９.．")


@dataclass(frozen=True, slots=True)
class Marker:
    """A numbering marker or heading label found at the start of a (stripped) line.

    Attributes:
        scheme: a name from :data:`HEADING_SCHEMES` or ``"markdown"``.
        level: the absolute level (Markdown: the ``#`` count).
        label: the text used in heading paths: the whole (whitespace-normalized) line for
            headings, "第十二条" (plus a short title if present) for articles.
        end: offset just after the marker in the stripped line (``"（一）"`` → 3).
    """

    scheme: str
    level: int
    label: str
    end: int


def _norm(text: str) -> str:
    return _WS_RE.sub(" ", text.strip())


def is_title_like(line: str) -> bool:
    """Short, with no sentence punctuation and no trailing comma/colon: reads like a title."""
    s = line.strip()
    if not s or len(s) > MAX_HEADING_CHARS:
        return False
    if s[-1] in _TRAILING_PUNCT:
        return False
    return not any(ch in _SENTENCE_PUNCT for ch in s)


def match_markdown_heading(line: str) -> tuple[int, str] | None:
    """``(level, text)`` for an ATX Markdown heading line with non-empty text, else ``None``."""
    if "#" not in line[:4]:
        return None
    m = _MD_HEADING_RE.match(line)
    if m is None:
        return None
    label = (m.group(2) or "").strip()
    if not label:
        return None
    return len(m.group(1)), _norm(label)


def _article_label(s: str, m: re.Match[str]) -> Marker | None:
    rest = s[m.end() :]
    if rest and rest[0] not in " \t\u3000【[［：:．.":
        return None
    label = m.group(0)
    body = rest.lstrip(" \t\u3000")
    if body:
        bm = _ARTICLE_BRACKET_TITLE_RE.match(body)
        if bm is not None:
            label = f"{label} {bm.group(0)}"
        else:
            tm = _ARTICLE_TITLE_RE.match(body)
            if tm is not None:
                title = tm.group(1)
                if not (_ARTICLE_TITLE_STOP & set(title)) and tm.group(2) not in '《“"（(':
                    label = f"{label} {title}"
            elif is_title_like(body) and len(body) <= 12 and not (_ARTICLE_TITLE_STOP & set(body)):
                label = f"{label} {_norm(body)}"
    return Marker("article", SCHEME_LEVEL["article"], label, m.end())


def match_marker(line: str) -> Marker | None:
    """Recognize a heading label or numbering marker at the start of ``line``.

    Context-free and permissive about length: 第X编/章/节 lines are returned whatever their
    length (check :func:`is_title_like` for headings), numbered markers are returned whether the
    line is a title or a sentence. Markdown headings are recognized with up to 3 spaces of indent;
    everything else on the stripped line.
    """
    if not line:
        return None
    md = match_markdown_heading(line)
    if md is not None:
        return Marker("markdown", md[0], md[1], 0)
    s = line.strip()
    if not s:
        return None
    first = s[0]
    if first == "第":
        m = _DIVISION_RE.match(s)
        if m is not None:
            nxt = s[m.end() : m.end() + 1]
            if nxt and not nxt.isspace() and nxt in _DIVISION_STOP:
                return None
            kind = m.group(1)
            scheme = {"编": "part", "部分": "part", "章": "chapter", "节": "section"}[kind]
            return Marker(scheme, SCHEME_LEVEL[scheme], _norm(s), m.end())
        m = _ARTICLE_RE.match(s)
        if m is not None:
            return _article_label(s, m)
        return None
    if first in "（(":
        m = _CN_PAREN_RE.match(s)
        if m is not None:
            return Marker("cn_paren", SCHEME_LEVEL["cn_paren"], _norm(s), m.end())
        m = _NUM_PAREN_RE.match(s)
        if m is not None:
            return Marker("num_paren", SCHEME_LEVEL["num_paren"], _norm(s), m.end())
        return None
    if first in _CN:
        m = _CN_ENUM_RE.match(s)
        if m is not None:
            return Marker("cn_enum", SCHEME_LEVEL["cn_enum"], _norm(s), m.end())
        return None
    if first in _DIGITS:
        for scheme, rx in (("num3", _NUM3_RE), ("num2", _NUM2_RE)):
            m = rx.match(s)
            if m is not None:
                nxt = s[m.end() : m.end() + 1]
                if nxt and (
                    nxt in _DIGITS or nxt in _QUANTITY_CHARS or nxt.isascii() and nxt.isalnum()
                ):
                    return None
                return Marker(scheme, SCHEME_LEVEL[scheme], _norm(s), m.end())
        m = _NUM_RE.match(s)
        if m is not None:
            nxt = s[m.end() : m.end() + 1]
            if nxt and nxt in _DIGITS:
                return None
            return Marker("num", SCHEME_LEVEL["num"], _norm(s), m.end())
        m = _NUM_RPAREN_RE.match(s)
        if m is not None:
            return Marker("num_rparen", SCHEME_LEVEL["num_rparen"], _norm(s), m.end())
    return None


def detect_heading(line: str) -> tuple[int, str] | None:
    """``(level, label)`` if ``line`` can be a heading on its own (see the module docstring).

    Levels are the absolute ones of :data:`HEADING_SCHEMES` (Markdown: the ``#`` count). A numbered
    line (一、 （一） 1. 1.1 …) qualifies only if it is title-like; whether it is then a heading or a
    list item after a lead-in is decided with context by the block parser.
    """
    marker = match_marker(line)
    if marker is None:
        return None
    if marker.scheme in ("markdown", "article"):
        return marker.level, marker.label
    text = line.strip()
    if len(text) <= marker.end or not is_title_like(text):
        return None
    return marker.level, marker.label


def detect_item(line: str) -> tuple[str, int] | None:
    """``(scheme, level)`` if ``line`` starts with a numbering marker that can open a list item."""
    marker = match_marker(line)
    if marker is None or marker.scheme not in ITEM_SCHEMES:
        return None
    return marker.scheme, marker.level
