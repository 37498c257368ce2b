"""Markdown → .docx as a Chinese office writes it: Word's automatic numbering, Word tables.

Built with python-docx plus raw numbering XML (no office suite needed):

* ``第X章`` / ``第X节`` headings (Heading 2/3) and ``第X条`` articles are *numbered paragraphs*:
  ``numbering.xml`` abstract lists with ``w:numFmt chineseCounting`` (articles past 99:
  ``chineseCountingThousand``, see :func:`numeral_format`) and ``lvlText`` "第%1章",
  "第%1节", "第%1条" (a space after the number). The number is removed from the paragraph's
  text, so only Word's numbering carries it. Chapters and articles count on through the
  document; sections restart in each chapter (a new ``w:num`` with a start override); where the
  statute's own numbering jumps (a repealed article) a new ``w:num`` starts at its number, so
  Word shows the statute's numbers. Articles such as "第十条之一" stay literal text (Word has no
  number for them), as do the ``（一）`` items.
* Markdown tables → Word tables (style "Table Grid", the header row marked to repeat).
* A page header naming the document (with :data:`render_pdf.HEADER_MARK`) and a "第 N 页" footer
  (a PAGE field) in the section, as office templates have.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from docx import Document
from docx.oxml import parse_xml
from docx.oxml.ns import nsdecls, qn
from docx.shared import Pt
from render_pdf import HEADER_MARK

CN_DIGITS = "零一二三四五六七八九"
_CN = "零〇一二三四五六七八九十百千两"
ARTICLE = re.compile(rf"^(?:\*\*)?第([{_CN}]+)条(?:\*\*)?(?:[\s\u3000]+(.*))?$")
HEADING = re.compile(rf"^(#+)\s*第([{_CN}]+)(章|节)[\s\u3000]*(.*)$")
ABSTRACT_IDS = {"章": 801, "节": 802, "条": 803}


def cn_number(text: str) -> int | None:
    """一百零五 → 105 (statute numerals, up to the thousands)."""
    digits = {c: i for i, c in enumerate(CN_DIGITS)} | {"〇": 0, "两": 2}
    total, current = 0, 0
    for ch in text:
        if ch in digits:
            current = digits[ch]
        elif ch in "十百千":
            unit = {"十": 10, "百": 100, "千": 1000}[ch]
            total += (current or 1) * unit
            current = 0
        else:
            return None
    return total + current


def _abstract_num(abstract_id: int, label: str, fmt: str, start: int = 1) -> Any:
    return parse_xml(
        f'<w:abstractNum {nsdecls("w")} w:abstractNumId="{abstract_id}">'
        '<w:multiLevelType w:val="singleLevel"/>'
        f'<w:lvl w:ilvl="0"><w:start w:val="{start}"/><w:numFmt w:val="{fmt}"/>'
        f'<w:suff w:val="space"/><w:lvlText w:val="第%1{label}"/><w:lvlJc w:val="left"/>'
        '<w:pPr><w:ind w:left="0" w:firstLine="0"/></w:pPr></w:lvl></w:abstractNum>'
    )


class Numbering:
    """The document's numbering part: the three lists (章, 节, 条); hands out ``w:num`` ids.

    A list that starts again at another value (a statute's book starting at 第九百八十九条, a
    gap in the articles) gets a list of its own whose ``w:start`` is that value, not a
    ``w:startOverride`` on a shared one: LibreOffice's .doc export keeps an override for the
    first paragraph only (第九百八十九条, 第一条, 第二条 …), Word and LibreOffice show both alike."""

    def __init__(self, doc: Any, formats: dict[str, str]) -> None:
        self.root = doc.part.numbering_part.element
        self.formats = formats
        abstracts = self.root.findall(qn("w:abstractNum"))
        self.anchor = abstracts[-1] if abstracts else None
        self.next_abstract = max(ABSTRACT_IDS.values()) + 1
        self.next_id = 1 + max((int(n.get(qn("w:numId"))) for n in self.root.num_lst), default=0)
        self.expected: dict[str, int] = {}
        self.current: dict[str, int] = {}
        self.instances = 0

    def _abstract(self, label: str, start: int) -> int:
        aid = ABSTRACT_IDS[label] if start == 1 and label not in self.expected else None
        if aid is None:
            aid, self.next_abstract = self.next_abstract, self.next_abstract + 1
        node = _abstract_num(aid, label, self.formats.get(label, "chineseCounting"), start)
        if self.anchor is None:  # abstract numberings come before the w:num elements
            self.root.insert(0, node)
        else:
            self.anchor.addnext(node)
        self.anchor = node
        return aid

    def num_for(self, label: str, value: int) -> int:
        """The ``w:num`` that shows ``value`` on the next paragraph of list ``label``: the
        current one when it counts on to ``value``, else a new list starting there."""
        if label in self.current and self.expected.get(label) == value:
            self.expected[label] = value + 1
            return self.current[label]
        aid = self._abstract(label, value)
        num_id = self.next_id
        self.next_id += 1
        self.instances += 1
        self.root.append(
            parse_xml(
                f'<w:num {nsdecls("w")} w:numId="{num_id}"><w:abstractNumId w:val="{aid}"/></w:num>'
            )
        )
        self.current[label], self.expected[label] = num_id, value + 1
        return num_id

    def restart(self, label: str) -> None:
        self.current.pop(label, None)


def numeral_format(markdown: str) -> str:
    """``chineseCounting`` (一…九十九, as the brief's statutes up to 99 articles), else
    ``chineseCountingThousand``: Word writes chineseCounting's 100 as 一〇〇, so a statute past
    article 99 is numbered as 一百一十 (Word shows 101 as 一百〇一, the statutes 一百零一)."""
    top = 0
    for line in markdown.splitlines():
        m = ARTICLE.match(line.strip())
        top = max(top, (cn_number(m.group(1)) or 0) if m else 0)
    return "chineseCounting" if top <= 99 else "chineseCountingThousand"


def _number(paragraph: Any, num_id: int) -> None:
    ppr = paragraph._p.get_or_add_pPr()
    ppr.append(parse_xml(f'<w:numPr {nsdecls("w")}><w:ilvl w:val="0"/>'
                         f'<w:numId w:val="{num_id}"/></w:numPr>'))  # fmt: skip


def _page_furniture(doc: Any, title: str) -> None:
    section = doc.sections[0]
    section.header.paragraphs[0].text = f"{title}\t\t{HEADER_MARK}"
    footer = section.footer.paragraphs[0]
    footer.text = "第 "
    footer._p.append(
        parse_xml(
            f'<w:fldSimple {nsdecls("w")} w:instr="PAGE"><w:r><w:t>1</w:t></w:r></w:fldSimple>'
        )
    )
    footer.add_run(" 页")


def _table(doc: Any, rows: list[list[str]]) -> None:
    width = max(len(r) for r in rows)
    table = doc.add_table(rows=0, cols=width)
    table.style = "Table Grid"
    for i, cells in enumerate(rows):
        row = table.add_row()
        for j, text in enumerate(cells):
            row.cells[j].text = text
        if i == 0:
            row._tr.get_or_add_trPr().append(parse_xml(f"<w:tblHeader {nsdecls('w')}/>"))


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def to_docx(markdown: str, title: str, target: Path) -> dict[str, int]:
    """Write ``markdown`` as a .docx at ``target``; counts of what was numbered."""
    doc = Document()
    normal = doc.styles["Normal"]
    normal.font.size = Pt(10.5)
    normal.element.get_or_add_rPr().get_or_add_rFonts().set(qn("w:eastAsia"), "宋体")
    numbering = Numbering(doc, {"条": numeral_format(markdown)})
    _page_furniture(doc, title)
    counts = {"articles": 0, "chapters": 0, "sections": 0, "literal_articles": 0, "tables": 0}
    lines = markdown.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].rstrip()
        i += 1
        if not line.strip() or line.startswith("<!--"):
            continue
        if line.startswith("|"):
            block = [line]
            while i < len(lines) and lines[i].startswith("|"):
                block.append(lines[i].rstrip())
                i += 1
            rows = [_cells(r) for r in block if not re.fullmatch(r"\|?[\s:|-]+\|?", r)]
            _table(doc, rows)
            counts["tables"] += 1
            continue
        heading = HEADING.match(line)
        value = cn_number(heading.group(2)) if heading else None
        if heading and value:
            label = heading.group(3)
            level = min(len(heading.group(1)), 4)
            p = doc.add_heading(heading.group(4).strip(), level=level)
            if label == "章":
                numbering.restart("节")
            _number(p, numbering.num_for(label, value))
            counts["chapters" if label == "章" else "sections"] += 1
            continue
        if line.startswith("#"):
            level = min(len(line) - len(line.lstrip("#")), 4)
            doc.add_heading(line.lstrip("#").strip(), level=0 if level == 1 else level)
            continue
        article = ARTICLE.match(line)
        value = cn_number(article.group(1)) if article else None
        if article and value:
            p = doc.add_paragraph((article.group(2) or "").strip())
            _number(p, numbering.num_for("条", value))
            counts["articles"] += 1
            continue
        if re.match(rf"^第[{_CN}]+条之", line):
            counts["literal_articles"] += 1
        doc.add_paragraph(line.strip())
    counts["num_instances"] = numbering.instances
    target.parent.mkdir(parents=True, exist_ok=True)
    doc.save(str(target))
    return counts
