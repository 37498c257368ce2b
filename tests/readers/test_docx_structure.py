"""The .docx reader beyond paragraphs: headers/footers, footnotes, merged cells, text boxes, and
hostile numbering (cycles, 1,000 levels, huge values) that must stay bounded."""

from __future__ import annotations

import pytest

from rag_app.readers import ReaderError, read_bytes
from tests.readers.docx_builders import (
    NS,
    abstract,
    add_raw,
    footnote_reference_paragraph,
    footnotes_xml,
    lvl,
    num,
    number,
    numbering_xml,
    save,
    style_numbering,
    text_box_paragraph,
)


def _document():  # type: ignore[no-untyped-def]
    from docx import Document

    return Document()


def test_headers_and_footers_stay_out_of_the_body_text() -> None:
    document = _document()
    section = document.sections[0]
    section.header.paragraphs[0].text = "星河云科技有限公司 考勤管理制度"
    section.footer.paragraphs[0].text = "第 1 页 共 3 页"
    document.add_paragraph("员工每年享有带薪年假十天。")
    parsed = read_bytes(save(document), "h.docx")
    assert parsed.text == "员工每年享有带薪年假十天。"
    assert parsed.metadata["header"] == "星河云科技有限公司 考勤管理制度"
    assert parsed.title == "星河云科技有限公司 考勤管理制度"  # no heading, no core title


def test_footnotes_are_marked_in_place_and_listed_at_the_end() -> None:
    document = _document()
    document.add_heading("年假", level=1)
    add_raw(document, footnote_reference_paragraph("员工每年享有带薪年假十天", 2, "。"))
    add_raw(document, footnote_reference_paragraph("病假须提交证明", 1, "。"))
    notes = footnotes_xml({1: "三级以上医院出具。", 2: "工龄满一年的员工。", 3: "未被引用的脚注。"})
    parsed = read_bytes(save(document, footnotes=notes), "n.docx")
    assert parsed.text == (
        "# 年假\n\n员工每年享有带薪年假十天[^1]。\n\n病假须提交证明[^2]。\n\n## 脚注\n\n"
        "[^1]: 工龄满一年的员工。\n[^2]: 三级以上医院出具。"
    )
    assert parsed.metadata["footnotes"] == 2


def test_merged_cells_are_filled_and_the_two_row_header_folded_as_in_spreadsheets() -> None:
    document = _document()
    table = document.add_table(rows=4, cols=3)
    table.cell(0, 0).merge(table.cell(1, 0)).text = "年龄"  # vertical merge (w:vMerge)
    table.cell(0, 1).merge(table.cell(0, 2)).text = "年交保费（元）"  # horizontal (w:gridSpan)
    table.cell(1, 1).text, table.cell(1, 2).text = "男", "女"
    table.cell(2, 0).text, table.cell(2, 1).text, table.cell(2, 2).text = "30", "1200", "1100"
    table.cell(3, 0).text = "31"
    table.cell(3, 1).merge(table.cell(3, 2)).text = "按合同约定"
    parsed = read_bytes(save(document), "t.docx")
    assert parsed.text == (
        "| 年龄 | 年交保费（元）/男 | 年交保费（元）/女 |\n"
        "| --- | --- | --- |\n"
        "| 30 | 1200 | 1100 |\n"
        "| 31 | 按合同约定 | 按合同约定 |"
    )


def test_a_vertically_merged_body_cell_is_repeated_on_every_row() -> None:
    document = _document()
    table = document.add_table(rows=4, cols=2)
    for r, (a, b) in enumerate(
        [("类别", "城市"), ("一类", "北京"), ("", "上海"), ("二类", "杭州")]
    ):
        table.cell(r, 0).text, table.cell(r, 1).text = a, b
    table.cell(1, 0).merge(table.cell(2, 0))
    text = read_bytes(save(document), "v.docx").text
    assert "| 一类 | 北京 |\n| 一类 | 上海 |\n| 二类 | 杭州 |" in text


def test_text_boxes_are_read_once_in_place() -> None:
    document = _document()
    document.add_paragraph("正文第一段。")
    add_raw(document, text_box_paragraph("锚定段落。", "文本框里的重要提示：加班须提前审批。"))
    add_raw(document, text_box_paragraph("", "只有 VML 的文本框。", fallback=False))
    document.add_paragraph("正文最后一段。")
    parsed = read_bytes(save(document), "x.docx")
    assert parsed.text == (
        "正文第一段。\n\n锚定段落。\n\n文本框里的重要提示：加班须提前审批。\n\n"
        "只有 VML 的文本框。\n\n正文最后一段。"
    )
    assert parsed.metadata["text_boxes"] == 2


def test_a_numbering_style_link_cycle_and_a_based_on_loop_leave_the_text_unnumbered() -> None:
    from docx.enum.style import WD_STYLE_TYPE

    document = _document()
    first = document.styles.add_style("环甲", WD_STYLE_TYPE.PARAGRAPH)
    second = document.styles.add_style("环乙", WD_STYLE_TYPE.PARAGRAPH)
    first.base_style = second
    second.base_style = first  # w:basedOn loop
    for name, num_id in (("链一", 2), ("链二", 1)):
        style = document.styles.add_style(name, WD_STYLE_TYPE.PARAGRAPH)
        style_numbering(style, num_id)
    definition = numbering_xml(
        abstract(0, num_style_link="链一"),  # -> numId 2 -> abstract 1 -> 链二 -> numId 1 -> ...
        abstract(1, num_style_link="链二"),
        num(1, 0),
        num(2, 1),
    )
    number(document.add_paragraph("循环编号的段落。"), 1)
    document.add_paragraph("循环样式的段落。", style="环甲")
    parsed = read_bytes(save(document, numbering=definition), "cycle.docx")
    assert parsed.text == "循环编号的段落。\n\n循环样式的段落。"


def test_a_thousand_list_levels_and_huge_start_values_are_bounded() -> None:
    levels = [
        lvl(i, "chineseCounting", "%1.%2.%3.%4.%5.%6.%7.%8.%9" * 40, start=10**15)
        for i in range(1000)
    ]
    definition = numbering_xml(abstract(0, *levels), num(1, 0))
    document = _document()
    for ilvl in (0, 8, 999, -5):
        number(document.add_paragraph(f"第{ilvl}层"), 1, ilvl)
    add_raw(
        document,
        f'<w:p {NS}><w:pPr><w:numPr><w:ilvl w:val="x"/><w:numId w:val="1"/></w:numPr></w:pPr><w:r><w:t>坏层级</w:t></w:r></w:p>',
    )
    parsed = read_bytes(save(document, numbering=definition), "levels.docx")
    lines = parsed.text.split("\n\n")
    assert [line.split(" ", 1)[1] for line in lines] == [
        "第0层",
        "第8层",
        "第999层",
        "第-5层",
        "坏层级",
    ]
    assert all(len(line) < 200 for line in lines)  # level text cut to 64 chars, values clamped
    assert lines[0].startswith("1000000000.")  # start clamped to 10**9, shown as digits


def test_a_hostile_grid_span_is_clamped() -> None:
    document = _document()
    table = document.add_table(rows=2, cols=2)
    table.cell(0, 0).text, table.cell(0, 1).text = "项目", "标准"
    table.cell(1, 0).text, table.cell(1, 1).text = "住宿", "600"
    span = f'<w:gridSpan {NS} w:val="1000000000"/>'
    from docx.oxml import parse_xml

    table.cell(1, 0)._tc.get_or_add_tcPr().append(parse_xml(span))
    text = read_bytes(save(document), "span.docx").text
    assert text.count("|") < 2000
    assert "| 住宿 |" in text


def test_a_docx_of_only_unnumbered_empty_paragraphs_is_still_empty() -> None:
    document = _document()
    number(document.add_paragraph(""), 5)  # List Number in python-docx's template: counted, empty
    with pytest.raises(ReaderError, match="^empty document"):
        read_bytes(save(document), "empty.docx")


def test_numbered_paragraphs_and_text_boxes_inside_table_cells_keep_their_labels() -> None:
    from docx.oxml import parse_xml

    document = _document()
    table = document.add_table(rows=2, cols=2)
    table.cell(0, 0).text, table.cell(0, 1).text = "事项", "要求"
    table.cell(1, 0).text = "报销材料"
    cell = table.cell(1, 1)
    number(cell.paragraphs[0], 1).add_run("出差申请单")
    number(cell.add_paragraph("住宿发票"), 1)
    box = text_box_paragraph("", "须原件")
    cell._tc.append(parse_xml(box))
    document.add_paragraph("表后第一段。")
    number(document.add_paragraph("正文里的下一项"), 1)  # the same list counts on after the table
    definition = numbering_xml(abstract(0, lvl(0, "decimal", "%1.")), num(1, 0))
    text = read_bytes(save(document, numbering=definition), "cell.docx").text
    assert "| 报销材料 | 1. 出差申请单 2. 住宿发票 须原件 |" in text
    assert text.endswith("表后第一段。\n\n3. 正文里的下一项")


def test_list_styles_without_numbering_definitions_still_read_as_lists() -> None:
    """A numbering part that lacks the style's definition: "List Number" still counts 1., 2.
    and "List Bullet" is still a bullet."""
    document = _document()
    for item in ("出差申请单", "交通票据"):
        document.add_paragraph(item, style="List Number")
    document.add_paragraph("禁止共享账号", style="List Bullet")
    text = read_bytes(save(document, numbering=numbering_xml()), "bare.docx").text
    assert text == "1. 出差申请单\n\n2. 交通票据\n\n- 禁止共享账号"
