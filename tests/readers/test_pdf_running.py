"""Running headers, footers and page numbers by repetition (rag_app/readers/pdf_running.py), on
lines as the layout step makes them."""

from __future__ import annotations

import pytest

from rag_app.readers.pdf_layout import Line
from rag_app.readers.pdf_running import find_running, is_page_number

H = 842.0


def line(text: str, top: float, size: float = 10.5) -> Line:
    return Line(text, 72.0, top, 72.0 + 10 * len(text), top + size, size, False)


def body(page: int) -> list[Line]:
    return [line(f"第{page}页正文第{k}行，内容各不相同。", 120.0 + 20 * k) for k in range(30)]


@pytest.mark.parametrize(
    "text",
    ["第 3 页", "第3页 共10页", "- 3 -", "— 12 —", "Page 3 of 10", "3/10", "12", "（3）", "iv"],
)
def test_page_number_forms(text: str) -> None:
    assert is_page_number(text)


@pytest.mark.parametrize("text", ["第三章 总则", "2023 年度报告", "mild", "第3条"])
def test_text_that_is_no_page_number(text: str) -> None:
    assert not is_page_number(text)


def test_alternating_headers_and_numbered_footers_are_running() -> None:
    pages = []
    for p in range(1, 7):
        header = "某某保险股份有限公司" if p % 2 else "重大疾病保险条款"
        lines = [line(header, 30, 9), *body(p), line(f"- {p} -", 800, 9)]
        pages.append((lines, H))
    running = find_running(pages)
    for (lines, _), gone in zip(pages, running.drop, strict=True):
        assert {lines[i].text for i in gone} == {lines[0].text, lines[-1].text}
    assert running.header in ("某某保险股份有限公司", "重大疾病保险条款")
    assert running.footer is None  # page numbers are no footer text


def test_a_title_under_a_header_that_repeats_it_is_kept() -> None:
    pages = []
    for p in range(1, 4):
        lines = [line("员工手册", 30, 8), *body(p)]
        if p == 1:
            lines.insert(1, line("员工手册", 60, 22))  # the title, in the band, larger
        pages.append((lines, H))
    running = find_running(pages)
    assert running.drop[0] == {0} and running.drop[1] == {0}
    assert running.header == "员工手册"


def test_body_lines_in_the_band_on_a_few_pages_stay() -> None:
    titles = ["总则", "保险责任", "责任免除", "保险金申请", "释义"]
    pages = [([line(titles[p], 40), *body(p)], H) for p in range(5)]
    assert find_running(pages).drop == [set()] * 5
