"""Word's automatic numbering: which paragraphs are numbered and the label Word shows for each.

A paragraph is numbered through ``w:numPr`` (``w:numId`` + ``w:ilvl``), given directly or by its
paragraph style (styles inherit through ``w:basedOn``). A ``w:num`` names an ``w:abstractNum``
(the levels: ``w:start``, ``w:numFmt``, ``w:lvlText`` such as ``"第%1条"``, ``w:lvlRestart``,
``w:isLgl``, ``w:suff``) and may override levels (``w:lvlOverride``: ``w:startOverride`` or a
whole ``w:lvl``). An abstract numbering may only point at a numbering style
(``w:numStyleLink``), whose ``w:numPr`` names the ``w:num`` that holds the levels.

Counting follows Word: one set of counters per abstract numbering (lists that share one continue
each other); advancing a level restarts the deeper ones (unless their ``w:lvlRestart`` says
otherwise); a ``w:num`` with a ``w:startOverride`` restarts its level the first time it is used;
a level named in a label that never ran shows its start value.

Hostile input is bounded: only levels 0..8 exist (Word's nine), a ``w:ilvl`` past 8 is read as
8; style and numbering-style links are followed at most :data:`MAX_LINK_DEPTH` steps and never
around a cycle; start values are clamped to :data:`MAX_START`; level texts, and the labels
they expand to, are cut at :data:`MAX_LEVEL_TEXT` characters. Unresolvable numbering leaves
the paragraph unnumbered.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from docx.oxml.ns import qn

from rag_app.readers.docx_numfmt import BULLET, expand_level_text

__all__ = ["Label", "Level", "Numbering", "StyleSheet"]

LEVELS = 9
MAX_LINK_DEPTH = 16
MAX_START = 10**9
MAX_LEVEL_TEXT = 64

_VAL = qn("w:val")


def _val(element: Any, tag: str) -> str | None:
    child = element.find(qn(tag)) if element is not None else None
    return child.get(_VAL) if child is not None else None


def _int(text: str | None, default: int | None = None) -> int | None:
    if text is None:
        return default
    try:
        return int(text.strip())
    except ValueError:
        return default


@dataclass(frozen=True)
class NumPr:
    """A ``w:numPr``: either part may be missing (then inherited or defaulted)."""

    num_id: str | None
    ilvl: int | None


def _num_pr(ppr: Any) -> NumPr | None:
    numpr = ppr.find(qn("w:numPr")) if ppr is not None else None
    if numpr is None:
        return None
    ilvl = _int(_val(numpr, "w:ilvl"))
    return NumPr(_val(numpr, "w:numId"), None if ilvl is None else min(max(ilvl, 0), LEVELS - 1))


@dataclass(frozen=True)
class StyleInfo:
    style_id: str
    name: str
    based_on: str | None
    num_pr: NumPr | None
    outline_level: int | None


class StyleSheet:
    """The paragraph and numbering styles of ``word/styles.xml``, by style id."""

    def __init__(self, styles_element: Any | None) -> None:
        self.styles: dict[str, StyleInfo] = {}
        self.default_paragraph: str | None = None
        self._chains: dict[str | None, list[StyleInfo]] = {}  # this document's, computed once
        if styles_element is None:
            return
        for style in styles_element.iterchildren(qn("w:style")):
            kind = style.get(qn("w:type"))
            style_id = style.get(qn("w:styleId"))
            if kind not in ("paragraph", "numbering") or not style_id:
                continue
            ppr = style.find(qn("w:pPr"))
            info = StyleInfo(
                style_id=style_id,
                name=(_val(style, "w:name") or "").strip(),
                based_on=_val(style, "w:basedOn"),
                num_pr=_num_pr(ppr),
                outline_level=_int(_val(ppr, "w:outlineLvl")),
            )
            self.styles.setdefault(style_id, info)
            if kind == "paragraph" and style.get(qn("w:default")) in ("1", "true", "on"):
                self.default_paragraph = style_id

    def chain(self, style_id: str | None) -> list[StyleInfo]:
        """The style and the styles it is based on, nearest first (cycles cut, depth bounded)."""
        cached = self._chains.get(style_id)
        if cached is not None:
            return cached
        out: list[StyleInfo] = []
        seen: set[str] = set()
        current = style_id if style_id is not None else self.default_paragraph
        while current is not None and current not in seen and len(out) < MAX_LINK_DEPTH:
            seen.add(current)
            info = self.styles.get(current)
            if info is None:
                break
            out.append(info)
            current = info.based_on
        self._chains[style_id] = out
        return out

    def num_pr(self, style_id: str | None) -> NumPr | None:
        """The numbering a style gives its paragraphs: numId and ilvl, each from the nearest
        style in the chain that sets it."""
        num_id: str | None = None
        ilvl: int | None = None
        for info in self.chain(style_id):
            if info.num_pr is None:
                continue
            if num_id is None:
                num_id = info.num_pr.num_id
            if ilvl is None:
                ilvl = info.num_pr.ilvl
            if num_id is not None and ilvl is not None:
                break
        return NumPr(num_id, ilvl) if num_id is not None else None


@dataclass(frozen=True)
class Level:
    """One ``w:lvl``."""

    start: int = 1
    fmt: str = "decimal"
    text: str | None = None  # None: no w:lvlText (Word shows no number)
    restart: int | None = None  # w:lvlRestart (1-based level after which this one restarts)
    legal: bool = False
    suffix: str = "tab"
    pstyle: str | None = None


def _level(lvl: Any, base: Level | None = None) -> Level:
    base = base or Level()
    start = _int(_val(lvl, "w:start"), base.start)
    text = _val(lvl, "w:lvlText")
    legal = lvl.find(qn("w:isLgl"))
    return Level(
        start=min(max(start if start is not None else 1, 0), MAX_START),
        fmt=_val(lvl, "w:numFmt") or base.fmt,
        text=text[:MAX_LEVEL_TEXT] if text is not None else base.text,
        restart=_int(_val(lvl, "w:lvlRestart"), base.restart),
        legal=(legal.get(_VAL) not in ("0", "false", "off")) if legal is not None else base.legal,
        suffix=_val(lvl, "w:suff") or base.suffix,
        pstyle=_val(lvl, "w:pStyle") or base.pstyle,
    )


def _levels(parent: Any) -> dict[int, Level]:
    levels: dict[int, Level] = {}
    for lvl in parent.iterchildren(qn("w:lvl")):
        ilvl = _int(lvl.get(qn("w:ilvl")))
        if ilvl is not None and 0 <= ilvl < LEVELS and ilvl not in levels:
            levels[ilvl] = _level(lvl)
    return levels


@dataclass
class _Abstract:
    levels: dict[int, Level]
    num_style_link: str | None


@dataclass
class _Num:
    abstract_id: str
    start_overrides: dict[int, int] = field(default_factory=dict)
    level_overrides: dict[int, Level] = field(default_factory=dict)


@dataclass(frozen=True)
class Label:
    """The number Word shows before a paragraph."""

    text: str  # "第一条", "1.2", "（3）"; "" for bullets and "none"
    bullet: bool
    level: int  # 0-based list level
    suffix: str  # what follows the number: "" or " "


@dataclass
class _Counters:
    values: list[int | None] = field(default_factory=lambda: [None] * LEVELS)


class Numbering:
    """The numbering definitions of a document and the counters of one pass over its body."""

    def __init__(self, numbering_element: Any | None, styles: StyleSheet) -> None:
        self.styles = styles
        self.abstracts: dict[str, _Abstract] = {}
        self.nums: dict[str, _Num] = {}
        self.counters: dict[str, _Counters] = {}
        self.started: set[str] = set()
        if numbering_element is None:
            return
        for element in numbering_element.iterchildren(qn("w:abstractNum")):
            abstract_id = element.get(qn("w:abstractNumId"))
            if abstract_id is not None and abstract_id not in self.abstracts:
                self.abstracts[abstract_id] = _Abstract(
                    _levels(element), _val(element, "w:numStyleLink")
                )
        for element in numbering_element.iterchildren(qn("w:num")):
            num_id = element.get(qn("w:numId"))
            abstract_id = _val(element, "w:abstractNumId")
            if num_id is None or abstract_id is None or num_id in self.nums:
                continue
            num = _Num(abstract_id)
            for override in element.iterchildren(qn("w:lvlOverride")):
                ilvl = _int(override.get(qn("w:ilvl")))
                if ilvl is None or not 0 <= ilvl < LEVELS:
                    continue
                start = _int(_val(override, "w:startOverride"))
                if start is not None:
                    num.start_overrides[ilvl] = min(max(start, 0), MAX_START)
                lvl = override.find(qn("w:lvl"))
                if lvl is not None:
                    num.level_overrides[ilvl] = _level(lvl)
            self.nums[num_id] = num

    def _abstract_for(self, num_id: str) -> tuple[str, _Abstract] | None:
        """The abstract numbering holding ``num_id``'s levels, through numbering-style links."""
        seen: set[str] = set()
        current = num_id
        for _ in range(MAX_LINK_DEPTH):
            num = self.nums.get(current)
            if num is None or current in seen:
                return None
            seen.add(current)
            abstract = self.abstracts.get(num.abstract_id)
            if abstract is None:
                return None
            if abstract.num_style_link is None or abstract.levels:
                return num.abstract_id, abstract
            linked = self.styles.num_pr(abstract.num_style_link)
            if linked is None or linked.num_id is None:
                return None
            current = linked.num_id
        return None

    def resolve(self, ppr: Any, style_id: str | None) -> tuple[str, int] | None:
        """``(numId, ilvl)`` of a paragraph, or None when it is not numbered."""
        direct = _num_pr(ppr)
        styled = self.styles.num_pr(style_id)
        num_id = direct.num_id if direct is not None and direct.num_id is not None else None
        if num_id is None and styled is not None:
            num_id = styled.num_id
        if num_id is None or num_id.strip() in ("0", "") or num_id not in self.nums:
            return None
        ilvl = direct.ilvl if direct is not None else None
        if ilvl is None and styled is not None and styled.num_id == num_id:
            ilvl = styled.ilvl
        if ilvl is None:
            ilvl = self._level_of_style(num_id, style_id)
        return num_id, ilvl

    def _level_of_style(self, num_id: str, style_id: str | None) -> int:
        """The level whose ``w:pStyle`` is the paragraph's style (heading numbering), else 0."""
        found = self._abstract_for(num_id)
        if found is None or style_id is None:
            return 0
        for ilvl, level in sorted(found[1].levels.items()):
            if level.pstyle == style_id:
                return ilvl
        return 0

    def _levels_of(self, num_id: str, abstract: _Abstract) -> list[Level]:
        num = self.nums[num_id]
        return [
            num.level_overrides.get(i) or abstract.levels.get(i) or Level() for i in range(LEVELS)
        ]

    def next_label(self, num_id: str, ilvl: int) -> Label | None:
        """Advance the counters for a paragraph numbered ``(num_id, ilvl)``; its label."""
        found = self._abstract_for(num_id)
        if found is None:
            return None
        abstract_id, abstract = found
        levels = self._levels_of(num_id, abstract)
        counters = self.counters.setdefault(abstract_id, _Counters()).values
        num = self.nums[num_id]
        if num_id not in self.started:  # a restarted list: its overridden levels start afresh
            self.started.add(num_id)
            for overridden in num.start_overrides:
                counters[overridden] = None
        starts = [num.start_overrides.get(i, levels[i].start) for i in range(LEVELS)]
        current = counters[ilvl]
        counters[ilvl] = starts[ilvl] if current is None else current + 1
        for deeper in range(ilvl + 1, LEVELS):
            restart = levels[deeper].restart
            if restart is None or (restart != 0 and ilvl < restart):
                counters[deeper] = None
        level = levels[ilvl]
        if level.fmt == BULLET:
            return Label("", True, ilvl, " ")
        text = ""
        if level.text is not None:
            values = [
                counters[i] if counters[i] is not None else starts[i] for i in range(ilvl + 1)
            ]
            formats = [lv.fmt for lv in levels[: ilvl + 1]]
            text = expand_level_text(level.text, values, formats, legal=level.legal)
            text = text[:MAX_LEVEL_TEXT].strip()
        suffix = "" if level.suffix == "nothing" or not text else " "
        return Label(text, False, ilvl, suffix)
