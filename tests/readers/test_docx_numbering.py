"""Word's automatic numbering in the .docx reader: the numbers Word shows are in the text."""

from __future__ import annotations

import pytest

from rag_app.readers import read_bytes
from rag_app.readers.docx_numfmt import expand_level_text, format_number
from tests.readers.docx_builders import (
    abstract,
    lvl,
    num,
    number,
    numbering_xml,
    save,
    style_numbering,
)

ARTICLES = [
    "员工每年享有带薪年假十天。",
    "员工请病假须提交医院证明。",
    "员工婚假为三天。",
    "员工产假按国家规定执行。",
    "员工丧假为三天。",
    "员工加班应事先申请。",
    "加班可以调休。",
    "迟到三次记旷工半天。",
    "旷工三天视为自动离职。",
    "本制度由人力资源部解释。",
    "本制度自发布之日起施行。",
    "原考勤规定同时废止。",
]


def _document():  # type: ignore[no-untyped-def]
    from docx import Document

    return Document()


def test_articles_numbered_by_word_read_with_their_chinese_numbers() -> None:
    document = _document()
    for text in ARTICLES:
        number(document.add_paragraph(text), 7)
    data = save(
        document,
        numbering=numbering_xml(
            abstract(3, lvl(0, "chineseCounting", "第%1条", suff="space")), num(7, 3)
        ),
    )
    parsed = read_bytes(data, "考勤制度.docx")
    blocks = parsed.text.split("\n\n")
    assert blocks[0] == "第一条 员工每年享有带薪年假十天。"
    assert blocks[1] == "第二条 员工请病假须提交医院证明。"
    assert blocks[9] == "第十条 本制度由人力资源部解释。"
    assert blocks[11] == "第十二条 原考勤规定同时废止。"
    assert "- " not in parsed.text
    assert parsed.metadata["numbered"] == 12


def test_article_label_is_a_heading_path_element_for_the_chunker() -> None:
    from rag_app.chunking.blocks import parse_blocks

    document = _document()
    for text in ARTICLES[:3]:
        number(document.add_paragraph(text), 1)
    data = save(
        document,
        numbering=numbering_xml(abstract(0, lvl(0, "chineseCounting", "第%1条")), num(1, 0)),
    )
    text = read_bytes(data, "a.docx").text
    labels = [block.label for block in parse_blocks(text, "markdown") if block.label]
    assert labels == ["第一条", "第二条", "第三条"]


def test_chapters_by_heading_style_and_articles_continuing_across_chapters() -> None:
    """第%1章 on Heading 1 (through the style and the level's pStyle) and 第%2条 that never
    restarts (w:lvlRestart 0), as statutes number their articles."""
    document = _document()
    style_numbering(document.styles["Heading 1"], 4)
    definition = abstract(
        2,
        lvl(0, "chineseCounting", "第%1章", pstyle="Heading1", suff="space"),
        lvl(1, "chineseCounting", "第%2条", restart=0, suff="space"),
    )
    document.add_heading("总则", level=1)
    number(document.add_paragraph("为规范考勤管理，制定本制度。"), 4, 1)
    number(document.add_paragraph("本制度适用于全体员工。"), 4, 1)
    document.add_heading("考勤", level=1)
    number(document.add_paragraph("员工应按时打卡。"), 4, 1)
    text = read_bytes(save(document, numbering=numbering_xml(definition, num(4, 2))), "b.docx").text
    assert text.split("\n\n") == [
        "# 第一章 总则",
        "第一条 为规范考勤管理，制定本制度。",
        "第二条 本制度适用于全体员工。",
        "# 第二章 考勤",
        "第三条 员工应按时打卡。",
    ]


def test_multilevel_decimal_restarts_the_deeper_level_and_headings_keep_numbers() -> None:
    document = _document()
    style_numbering(document.styles["Heading 1"], 1, 0)
    style_numbering(document.styles["Heading 2"], 1, 1)
    definition = abstract(
        0,
        lvl(0, "decimal", "%1", pstyle="Heading1"),
        lvl(1, "decimal", "%1.%2", pstyle="Heading2"),
        lvl(2, "decimal", "%1.%2.%3"),
    )
    document.add_heading("总则", level=1)
    document.add_heading("目的", level=2)
    document.add_heading("范围", level=2)
    number(document.add_paragraph("适用于正式员工。"), 1, 2)
    document.add_heading("考勤", level=1)
    document.add_heading("打卡", level=2)
    text = read_bytes(save(document, numbering=numbering_xml(definition, num(1, 0))), "c.docx").text
    assert text.split("\n\n") == [
        "# 1 总则",
        "## 1.1 目的",
        "## 1.2 范围",
        "1.2.1 适用于正式员工。",
        "# 2 考勤",
        "## 2.1 打卡",
    ]


def test_list_number_style_items_are_numbered_not_bullets() -> None:
    """python-docx's template numbers "List Number" through the style (numId 5, ``%1.``)."""
    document = _document()
    document.add_paragraph("报销须提供：")
    for item in ("出差申请单", "交通票据", "住宿发票"):
        document.add_paragraph(item, style="List Number")
    document.add_paragraph("禁止共享账号", style="List Bullet")
    buffer = save(document)
    text = read_bytes(buffer, "d.docx").text
    assert text == "报销须提供：\n\n1. 出差申请单\n\n2. 交通票据\n\n3. 住宿发票\n\n- 禁止共享账号"


def test_parenthesised_chinese_enumeration_and_numbering_through_an_inherited_style() -> None:
    """（%1） and %1、 formats; the numbered style is a custom style *based on* the one that
    carries the numbering (w:basedOn), and a w:startOverride restarts a second list."""
    from docx.enum.style import WD_STYLE_TYPE

    document = _document()
    base = document.styles.add_style("条款基础", WD_STYLE_TYPE.PARAGRAPH)
    style_numbering(base, 3)
    clause = document.styles.add_style("条款", WD_STYLE_TYPE.PARAGRAPH)
    clause.base_style = base
    definition = numbering_xml(
        abstract(1, lvl(0, "decimal", "（%1）", suff="nothing")),
        abstract(2, lvl(0, "chineseCounting", "%1、", suff="nothing")),
        num(3, 1),
        num(6, 2),
        num(8, 2, {0: 1}),
    )
    document.add_paragraph("身份证复印件", style="条款")
    document.add_paragraph("学历证明", style="条款")
    number(document.add_paragraph("适用范围"), 6)
    number(document.add_paragraph("职责分工"), 6)
    number(document.add_paragraph("重新开始的列表"), 8)
    text = read_bytes(save(document, numbering=definition), "e.docx").text
    assert text.split("\n\n") == [
        "（1）身份证复印件",
        "（2）学历证明",
        "一、适用范围",
        "二、职责分工",
        "一、重新开始的列表",
    ]


def test_empty_numbered_paragraphs_count_as_word_counts_them() -> None:
    document = _document()
    number(document.add_paragraph("第一项"), 1)
    number(document.add_paragraph(""), 1)
    number(document.add_paragraph("第三项"), 1)
    text = read_bytes(
        save(document, numbering=numbering_xml(abstract(0, lvl(0, "decimal", "%1.")), num(1, 0))),
        "f.docx",
    ).text
    assert text == "1. 第一项\n\n3. 第三项"


@pytest.mark.parametrize(
    ("fmt", "template", "values", "shown"),
    [
        ("decimal", "%1.", [1, 2, 10], ["1.", "2.", "10."]),
        ("decimalZero", "%1", [1, 9, 10], ["01", "09", "10"]),
        ("decimalEnclosedCircle", "%1", [1, 2, 20, 21], ["①", "②", "⑳", "21"]),
        (
            "chineseCounting",
            "第%1条",
            [1, 10, 11, 20, 99, 101, 110, 1000, 2024, 10000],
            [
                "第一条",
                "第十条",
                "第十一条",
                "第二十条",
                "第九十九条",
                "第一百零一条",  # LibreOffice's form and the statutes'; see docx_numfmt
                "第一百一十条",
                "第一千条",
                "第二千零二十四条",
                "第10000条",
            ],
        ),
        (
            "chineseCountingThousand",
            "第%1条",
            [1, 10, 21, 100, 101, 110, 1010],
            [
                "第一条",
                "第十条",
                "第二十一条",
                "第一百条",
                "第一百零一条",
                "第一百一十条",
                "第一千零一十条",
            ],
        ),
        ("ideographDigital", "%1", [7, 101], ["七", "一〇一"]),
        ("ideographTraditional", "%1、", [1, 2, 10, 11], ["甲、", "乙、", "癸、", "11、"]),
        ("upperLetter", "%1.", [1, 26, 27, 53], ["A.", "Z.", "AA.", "AAA."]),
        ("lowerLetter", "(%1)", [1, 2], ["(a)", "(b)"]),
        (
            "upperRoman",
            "%1.",
            [1, 4, 9, 14, 3999, 4000],
            ["I.", "IV.", "IX.", "XIV.", "MMMCMXCIX.", "4000."],
        ),
        ("lowerRoman", "%1)", [3, 40], ["iii)", "xl)"]),
        ("chineseLegalSimplified", "%1", [1, 10, 101], ["壹", "壹拾", "壹佰零壹"]),
        ("none", "", [1], [""]),
        ("bullet", "", [1], [""]),
    ],
)
def test_number_formats_render_as_word_shows_them(
    fmt: str, template: str, values: list[int], shown: list[str]
) -> None:
    assert [expand_level_text(template, [v], [fmt]) for v in values] == shown


def test_legal_numbering_shows_every_level_in_decimal() -> None:
    formats = ["chineseCounting", "decimal"]
    assert expand_level_text("%1.%2", [3, 2], formats) == "三.2"
    assert expand_level_text("%1.%2", [3, 2], formats, legal=True) == "3.2"


def test_huge_values_stay_short() -> None:
    for fmt in ("chineseCounting", "upperLetter", "upperRoman", "decimalEnclosedCircle"):
        assert format_number(10**15, fmt) == str(10**15)
