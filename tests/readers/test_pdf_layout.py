"""Layout-aware PDF reading: tables as GFM tables, running headers and page numbers dropped,
Chinese wraps joined, headings, two columns, the title (PDFs typeset by tests/readers/pdf_samples.py
with reportlab)."""

from __future__ import annotations

import io
import re

from rag_app.readers import read_bytes
from tests.readers.pdf_samples import Doc

BODY = (
    "本合同所称进行性脊肌萎缩症是指一组以脊髓前角细胞和脑干运动神经元变性为特征的遗传性疾病，"
    "被保险人须经专科医生确诊。保险公司按照约定给付保险金，保险期间内发生保险事故的，受益人可以申请理赔。"
)
HEADER = "某某人寿保险股份有限公司 重大疾病保险条款"
LONG_CELL = "被保险人在保险期间内首次确诊进行性脊肌萎缩症的，按基本保险金额给付重大疾病保险金"


def _policy(columns: int = 1, rows: int = 40) -> bytes:
    doc = Doc(header=HEADER, columns=columns)
    doc.heading("某某人寿重大疾病保险条款", 20).heading("第一章 总则", 15)
    for n in "一二三":
        doc.para(f"第{n}条 {BODY}{BODY}")
    table = [["年龄", "保险金额（元）", "说明"]]
    table += [[f"{20 + i}岁", f"{1000 * (i + 1)}", LONG_CELL] for i in range(rows)]
    doc.table(table, [50, 60, 100] if columns == 2 else [80, 120, 250])
    doc.para("表后的段落。" + BODY)
    return doc.pdf()


def test_a_ruled_table_over_two_pages_is_one_table_with_its_header() -> None:
    parsed = read_bytes(_policy(), "policy.pdf")
    text = parsed.text
    assert parsed.metadata["pages"] == 3 and parsed.metadata["tables"] == 1
    assert text.count("| 年龄 | 保险金额（元） | 说明 |") == 1  # the repeated header dropped
    rows = re.findall(r"^\| (\d+)岁 \| (\d+) \| (.*) \|$", text, flags=re.M)
    assert [int(age) for age, _, _ in rows] == list(range(20, 60))
    assert all(cell == LONG_CELL for _, _, cell in rows)  # the wrapped cell joined whole
    table = text[text.index("| 年龄") : text.index("表后的段落")].strip()
    assert "\n\n" not in table  # one block: no row split off the table
    # every row chunk carries the header
    from rag_app.chunking.parser import StructureAwareNodeParser

    chunks = StructureAwareNodeParser(chunk_size=128).chunk(text, parsed.fmt, parsed.title)
    row_chunks = [c for c in chunks if re.search(r"^\| \d+岁", c.text, flags=re.M)]
    assert len(row_chunks) > 2
    assert all("| 年龄 | 保险金额（元） | 说明 |" in c.text for c in row_chunks)
    # page 2 starts inside the table, at a row that was on page 2
    start = parsed.metadata["page_starts"][1]  # type: ignore[index]
    assert text[start:].startswith("| ") and 0 < start < text.index("表后的段落")


def test_running_header_and_page_numbers_are_dropped_and_kept_as_metadata() -> None:
    parsed = read_bytes(_policy(), "policy.pdf")
    assert HEADER not in parsed.text and "重大疾病保险条款" in parsed.text  # the title stays
    assert not re.search(r"第\s*\d+\s*页", parsed.text)
    assert parsed.metadata["running_header"] == HEADER


def test_a_one_page_header_that_repeats_the_title_goes_whole() -> None:
    """One page: no repetition to go by. A header line printing the title on the left and a
    notice on the right ("内部资料·仅供参考", as an office suite's header does) is dropped whole,
    not only its title half; the title stays as the heading."""
    doc = Doc(header="某某公司差旅费报销标准", header_right="内部资料·仅供参考")
    doc.heading("某某公司差旅费报销标准", 20).para("第一条 " + BODY)
    parsed = read_bytes(doc.pdf(), "travel.pdf")
    assert parsed.metadata["pages"] == 1
    assert "内部资料" not in parsed.text
    assert parsed.text.startswith("# 某某公司差旅费报销标准\n\n第一条 ")
    assert parsed.metadata["running_header"] == "某某公司差旅费报销标准"
    # LibreOffice: the header's right part pushed by its tab onto a second line
    below = Doc(header="某某公司差旅费报销标准", header_below="内部资料·仅供参考")
    below.heading("某某公司差旅费报销标准", 20).para("第一条 " + BODY)
    assert read_bytes(below.pdf(), "below.pdf").text.startswith("# 某某公司差旅费报销标准\n")
    # a one-page notice that does not sit beside an echo of the title stays (no evidence)
    alone = Doc(header="内部资料·仅供参考")
    alone.heading("某某公司差旅费报销标准", 20).para("第一条 " + BODY)
    assert "内部资料·仅供参考" in read_bytes(alone.pdf(), "alone.pdf").text


def test_chinese_wrapped_lines_are_joined_without_a_break() -> None:
    parsed = read_bytes(_policy(), "policy.pdf")
    text = parsed.text
    for n in "一二三":
        assert f"第{n}条 {BODY}{BODY}" in text.split("\n")
    assert text.count("进行性脊肌萎缩症") == 6 + 40 + 1
    assert "表后的段落。" + BODY in text.split("\n")  # continued after the table, then joined


def test_article_headings_and_font_size_headings() -> None:
    from rag_app.chunking.blocks import parse_blocks

    parsed = read_bytes(_policy(), "policy.pdf")
    assert parsed.title == "某某人寿重大疾病保险条款"  # from the first page: no metadata title
    assert parsed.text.startswith("# 某某人寿重大疾病保险条款\n\n## 第一章 总则\n\n第一条 ")
    paths = {b.path for b in parse_blocks(parsed.text, parsed.fmt, parsed.title)}
    for n in "一二三":
        assert ("某某人寿重大疾病保险条款", "第一章 总则", f"第{n}条") in paths, paths


def test_metadata_title_wins_over_the_first_page() -> None:
    data = Doc(title="2023 年度报告").heading("封面大标题", 22).para(BODY).pdf()
    assert read_bytes(data, "r.pdf").title == "2023 年度报告"


def test_two_columns_are_read_left_then_right() -> None:
    doc = Doc(columns=2, footer=False)
    paras = [f"第{n}段，{BODY}" for n in "一二三四五六七八"]
    for p in paras:
        doc.para(p, indent=False)
    parsed = read_bytes(doc.pdf(), "two.pdf")
    found = [parsed.text.find(p) for p in paras]
    assert all(i >= 0 for i in found), parsed.text[:400]
    assert found == sorted(found)


def test_a_two_column_table_runs_on_into_the_right_column_as_one_table() -> None:
    parsed = read_bytes(_policy(columns=2), "two.pdf")
    assert parsed.text.count("| 年龄 | 保险金额（元） | 说明 |") == 1
    rows = re.findall(r"^\| (\d+)岁 \|", parsed.text, flags=re.M)
    assert [int(a) for a in rows] == list(range(20, 60))


def test_merged_header_cells_are_folded_as_in_spreadsheets() -> None:
    from reportlab.pdfgen import canvas

    from tests.readers.pdf_samples import CJK, _register

    _register()
    buffer = io.BytesIO()
    c = canvas.Canvas(buffer, pagesize=(595, 842))
    c.setFont(CJK, 10)
    xs, ys = [72, 172, 272, 372], [700, 680, 660, 640, 620]
    for y in ys:
        c.line(xs[0], y, xs[-1], y)
    for x in (xs[0], xs[-1]):
        c.line(x, ys[0], x, ys[-1])
    c.line(xs[1], ys[0], xs[1], ys[-1])
    c.line(xs[2], ys[1], xs[2], ys[-1])  # 保费 spans two columns in the first row
    c.line(72, 700, 72, 700)
    for (x, y), text in {
        (76, 686): "年龄",
        (176, 686): "保费（元）",
        (176, 666): "男",
        (276, 666): "女",
        (76, 646): "20",
        (176, 646): "100",
        (276, 646): "90",
        (76, 626): "30",
        (176, 626): "150",
        (276, 626): "130",
    }.items():
        c.drawString(x, y, text)
    c.showPage()
    c.save()
    text = read_bytes(buffer.getvalue(), "merged.pdf").text
    assert "| 年龄 | 保费（元）/男 | 保费（元）/女 |" in text
    assert "| 20 | 100 | 90 |" in text and "| 30 | 150 | 130 |" in text


def test_latin_wraps_get_one_space_and_hyphenation_is_undone() -> None:
    from reportlab.pdfgen import canvas

    buffer = io.BytesIO()
    c = canvas.Canvas(buffer, pagesize=(595, 842))
    c.setFont("Helvetica", 11)
    lines = [
        "The insured person must notify the company of any inter-",
        "national travel and of every change of address within",
        "thirty days.",
    ]
    for k, line in enumerate(lines):
        c.drawString(72, 700 - 14 * k, line)
    c.showPage()
    c.save()
    text = read_bytes(buffer.getvalue(), "en.pdf").text
    assert "any international travel and of every change of address within thirty days." in text


def test_a_borderless_table_with_wrapped_cells_is_a_table_over_its_pages() -> None:
    doc = Doc(header="某某统计局 2023 年统计年鉴")
    doc.heading("表 3-1 各地区人口", 12)
    note = "含流动人口和常住人口的合计数"
    rows = [["地区", "年末人口（万人）", "城镇化率（%）", "备注"]]
    rows += [
        [f"第{i}区", f"{100 + i * 7}", f"{50 + i}.5", note if i % 3 == 0 else "—"]
        for i in range(1, 40)
    ]
    doc.table(rows, [80, 110, 110, 90], ruled=False)  # 备注 wraps over two lines
    doc.para("表后的段落。" + BODY)
    parsed = read_bytes(doc.pdf(), "stats.pdf")
    assert parsed.metadata["pages"] == 2 and parsed.metadata["tables"] == 1
    assert parsed.text.count("| 地区 | 年末人口（万人） | 城镇化率（%） | 备注 |") == 1
    found = re.findall(r"^\| 第(\d+)区 \| (\d+) \| ([\d.]+) \| (.*) \|$", parsed.text, flags=re.M)
    assert [int(r[0]) for r in found] == list(range(1, 40))
    assert all(r[3] == (note if int(r[0]) % 3 == 0 else "—") for r in found)


def test_aligned_text_that_is_no_table_stays_text() -> None:
    """Two columns of running text and a numbered list with a wide gap are not tables."""
    doc = Doc(columns=2, footer=False)
    for n in "一二三四五六":
        doc.para(f"第{n}段，{BODY}", indent=False)
    assert "|" not in read_bytes(doc.pdf(), "two.pdf").text
    from reportlab.pdfgen import canvas

    from tests.readers.pdf_samples import CJK, _register

    _register()
    buffer = io.BytesIO()
    c = canvas.Canvas(buffer, pagesize=(595, 842))
    c.setFont(CJK, 10.5)
    for k in range(6):
        c.drawString(72, 700 - 18 * k, f"{k + 1}.")
        c.drawString(110, 700 - 18 * k, f"第{k + 1}项要求：按时提交材料并妥善保管原件。")
    c.showPage()
    c.save()
    text = read_bytes(buffer.getvalue(), "list.pdf").text
    assert "|" not in text and "第1项要求" in text
