"""The sample KB's PDF (data/knowledge/办公设备采购目录与价格标准.pdf, a Word document saved as
PDF by LibreOffice: data/build_sample_pdf.py) read as a reader sees it: one wrapped title, the
body text's size told apart from the smaller table text, a catalogue table over four pages with
its repeated header dropped and the rows a page break cuts joined, numbers cut by a full line of
a narrow column joined whole, the running header and "第 N 页" footer gone."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rag_app.readers import read_file
from rag_app.readers.pdf_layout import join_text

PDF = Path(__file__).resolve().parents[2] / "data" / "knowledge" / "办公设备采购目录与价格标准.pdf"
HEADER_ROW = "| 编号 | 设备名称 | 规格型号 | 单价上限（元） | 指定供应商 | 质保期 |"


@pytest.fixture(scope="module")
def text() -> str:
    return read_file(PDF).text


def test_the_wrapped_title_is_one_heading_and_the_body_is_no_heading(text: str) -> None:
    headings = re.findall(r"^(#+) (.*)$", text, flags=re.M)
    assert headings[0] == ("#", "星河云科技有限公司办公设备采购目录与价格标准（2026 年版）")
    assert [h for h, _ in headings[1:]] == ["##"] * 4  # the four chapters, nothing else
    assert all(t.startswith("第") and t.endswith(("总则", "单价上限", "采购流程", "附则"))
               for _, t in headings[1:])  # fmt: skip


def test_the_catalogue_is_one_table_of_36_whole_rows(text: str) -> None:
    assert text.count(HEADER_ROW) == 1
    rows = re.findall(r"^\| (BG-\d{3}) \|(.*)\|$", text, flags=re.M)
    assert [r for r, _ in rows] == [f"BG-{i:03d}" for i in range(1, 37)]
    assert all(len(cells.split(" | ")) == 5 for _, cells in rows)
    row = dict(rows)
    assert "2288H V7（2×Xeon Gold/256G/4×1.92T SSD） | 68000 |" in row["BG-006"]  # cut by page 1|2
    assert "4000 流明" in row["BG-014"]  # "400" / "0 流明": a number cut at a full line
    assert "Type-C 90W" in row["BG-008"]  # a compound's hyphen at the line end
    assert "512G SSD" in row["BG-004"] and "ADF 80" in row["BG-013"]  # wraps at a space


def test_running_header_and_page_footer_are_gone(text: str) -> None:
    assert "星河云科技有限公司　办公设备采购目录与价格标准" not in text
    assert "星河云科技有限公司 办公设备采购目录与价格标准" not in text
    assert not re.search(r"第\s*\d+\s*页", text)
    parsed = read_file(PDF)
    assert parsed.metadata["pages"] == 4 and parsed.metadata["tables"] == 2


def test_join_text_keeps_compounds() -> None:
    assert join_text("Type-", "C") == "Type-C"
    assert join_text("inter-", "national") == "international"
    assert join_text("in 2019.", "2020 was") == "in 2019. 2020 was"
    assert join_text("Gen", "6") == "Gen 6"
    assert join_text("价格", "标准") == "价格标准"
