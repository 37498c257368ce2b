"""Answer units: the pieces of evidence an answer can be made of.

A unit is a sentence of prose, a list item carried with its lead-in ("有下列情形之一的：" + "（二）…"),
or a table row carried with its header (cells paired with their column names). Each unit keeps
its character span inside its evidence node, so a citation can point at the exact sentence/row.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from llama_index.core.schema import NodeWithScore

from rag_app.answer.decision import AnswerUnit
from rag_app.retrieval.record import record_of

_SENTENCE = re.compile(r"[^。！？；!?\n]+[。！？；!?]?")
_SEPARATOR = re.compile(r"^\|?\s*:?-{2,}")
_ITEM = re.compile(
    r"^[*\s]*(?:[（(][一二三四五六七八九十\d]+[)）]|[一二三四五六七八九十]+、|\d+[.、)）](?!\d)|[-*•] )"
)
_MARKUP = re.compile(r"^[#>*\s]+|\*\*")


def cells_of(line: str) -> list[str]:
    inner = line.strip()
    inner = inner[1:] if inner.startswith("|") else inner
    inner = inner[:-1] if inner.endswith("|") else inner
    return [c.strip() for c in re.split(r"(?<!\\)\|", inner)]


def split_units(text: str, source: int, headings: frozenset[str] = frozenset()) -> list[AnswerUnit]:
    """The units of one evidence text (``headings``: heading lines to skip)."""
    units: list[AnswerUnit] = []
    header: list[str] | None = None
    lead_in = ""
    lines = text.splitlines(keepends=True)
    offset = 0
    for i, raw in enumerate(lines):
        start_of_line = offset
        offset += len(raw)
        line = raw.strip()
        if not line or line.startswith("```"):
            continue
        lstart = start_of_line + (len(raw) - len(raw.lstrip()))
        if line.startswith("|"):
            if _SEPARATOR.match(line):
                continue
            nxt = lines[i + 1].strip() if i + 1 < len(lines) else ""
            if header is None or _SEPARATOR.match(nxt):
                header = cells_of(line)
                continue
            cells = cells_of(line)
            pairs = [f"{h}：{c}" for h, c in zip(header, cells, strict=False) if c]
            units.append(
                AnswerUnit(
                    source=source, index=len(units), kind="row", text="，".join(pairs),
                    context=" ".join(header), start=lstart, end=lstart + len(line),
                    header=list(header), cells=cells,
                )
            )  # fmt: skip
            continue
        header = None
        plain = _MARKUP.sub("", line).strip()
        if not plain or line.startswith("#") or plain in headings:
            continue
        is_item = bool(_ITEM.match(line))
        if not is_item:
            lead_in = ""
        if is_item and len(line) <= 300:
            units.append(
                AnswerUnit(
                    source=source, index=len(units), kind="item", text=plain, context=lead_in,
                    start=lstart, end=lstart + len(line),
                )
            )  # fmt: skip
            continue
        for match in _SENTENCE.finditer(raw):
            sentence = _MARKUP.sub("", match.group(0)).strip()
            if len(sentence) < 4:
                continue
            units.append(
                AnswerUnit(
                    source=source, index=len(units), kind="sentence", text=sentence,
                    start=start_of_line + match.start(), end=start_of_line + match.end(),
                )
            )  # fmt: skip
        if plain.endswith(("：", ":")):
            lead_in = plain
    return units


def evidence_units(nodes: Sequence[NodeWithScore]) -> list[AnswerUnit]:
    """Units of every evidence node, numbered by node (1-based, the citation order)."""
    out: list[AnswerUnit] = []
    for n, node in enumerate(nodes, start=1):
        path = record_of(node.node).title_path
        headings = frozenset(p.strip().lstrip("#").strip() for p in path.split(" > ") if p.strip())
        out.extend(split_units(node.node.get_content(), n, headings))
    return out
