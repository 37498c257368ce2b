"""A PDF as an office suite writes it: a .docx (python-docx) with a running header, a "第 N 页"
footer field, Word headings, 第X条 articles and a 60-row ruled table whose header row repeats on
every page, converted by LibreOffice (headless). Skipped when LibreOffice is not installed."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from rag_app.readers import read_bytes

SOFFICE = shutil.which("soffice") or shutil.which("libreoffice")
pytestmark = pytest.mark.skipif(SOFFICE is None, reason="LibreOffice (soffice) not installed")

HEADER = "某某公司 员工手册"
BODY = (
    "员工应当遵守公司的各项规章制度，患有进行性脊肌萎缩症等重大疾病的员工可以申请特别休假，"
    "具体办法由人力资源部另行规定，并报公司管理层批准后执行。"
)
NOTE = "工作满一年后享受，跨年度未休的年假可以顺延至次年第一季度，逾期作废。"


def _field(paragraph: object, code: str) -> None:
    from docx.oxml import OxmlElement
    from docx.oxml.ns import qn

    for kind, text in (("begin", None), (None, code), ("end", None)):
        run = paragraph.add_run()  # type: ignore[attr-defined]
        if kind:
            element = OxmlElement("w:fldChar")
            element.set(qn("w:fldCharType"), kind)
        else:
            element = OxmlElement("w:instrText")
            element.text = text
        run._r.append(element)


def _handbook(path: Path) -> Path:
    from docx import Document
    from docx.oxml import OxmlElement
    from docx.oxml.ns import qn

    doc = Document()
    section = doc.sections[0]
    section.header.paragraphs[0].text = HEADER
    footer = section.footer.paragraphs[0]
    footer.add_run("第 ")
    _field(footer, "PAGE")
    footer.add_run(" 页")
    doc.add_heading("员工手册", 0)
    for chapter in "一二三":
        doc.add_heading(f"第{chapter}章 总则", 1)
        for article in "一二三":
            doc.add_paragraph(f"第{article}条 {BODY}{BODY}")
    table = doc.add_table(rows=1, cols=3)
    table.style = "Table Grid"
    for cell, text in zip(table.rows[0].cells, ("职级", "年假天数", "说明"), strict=True):
        cell.text = text
    for i in range(60):
        cells = table.add_row().cells
        cells[0].text, cells[1].text, cells[2].text = f"P{i}", str(5 + i % 10), NOTE
    repeat = OxmlElement("w:tblHeader")
    repeat.set(qn("w:val"), "true")
    table.rows[0]._tr.get_or_add_trPr().append(repeat)
    doc.add_paragraph("表后说明：" + BODY)
    docx = path / "handbook.docx"
    doc.save(str(docx))
    subprocess.run(
        [str(SOFFICE), "--headless", f"-env:UserInstallation=file://{path}/profile",
         "--convert-to", "pdf", "--outdir", str(path), str(docx)],
        check=True, capture_output=True, timeout=180,
    )  # fmt: skip
    return path / "handbook.pdf"


def test_a_libreoffice_pdf_reads_as_its_document(tmp_path: Path) -> None:
    parsed = read_bytes(_handbook(tmp_path).read_bytes(), "handbook.pdf")
    text = parsed.text
    assert int(str(parsed.metadata["pages"])) >= 3 and parsed.metadata["tables"] == 1
    assert parsed.title == "员工手册" and text.startswith("# 员工手册\n\n## 第一章 总则\n\n第一条 ")
    assert HEADER not in text and parsed.metadata["running_header"] == HEADER
    assert not re.search(r"第\s*\d+\s*页", text)
    lines = text.split("\n")
    assert sum(1 for line in lines if line == f"第一条 {BODY}{BODY}") == 3  # wraps joined
    assert text.count("| 职级 | 年假天数 | 说明 |") == 1
    rows = re.findall(r"^\| P(\d+) \| (\d+) \| (.*) \|$", text, flags=re.M)
    # every row whole, a row that broke across pages included
    assert [(int(p), c) for p, _, c in rows] == [(i, NOTE) for i in range(60)]
    assert "表后说明：" + BODY in lines
