from __future__ import annotations

import pytest

from rag_app.chunking import chunk_document, detect_heading, parse_blocks
from rag_app.chunking.headings import (
    HEADING_SCHEMES,
    SCHEME_LEVEL,
    detect_item,
    is_title_like,
    match_marker,
)


class TestLevelTable:
    def test_order_of_the_chinese_schemes(self) -> None:
        names = [s.name for s in sorted(HEADING_SCHEMES, key=lambda s: s.level)]
        assert names == [
            "part",
            "chapter",
            "section",
            "article",
            "cn_enum",
            "cn_paren",
            "num",
            "num2",
            "num3",
            "num_rparen",
            "num_paren",
        ]
        assert SCHEME_LEVEL["part"] < SCHEME_LEVEL["chapter"] < SCHEME_LEVEL["section"]
        assert SCHEME_LEVEL["section"] < SCHEME_LEVEL["article"]


class TestDetectHeading:
    @pytest.mark.parametrize(
        ("line", "expected"),
        [
            ("第一编 总则", (1, "第一编 总则")),
            ("第二部分 保险责任", (1, "第二部分 保险责任")),
            ("第三章 责任免除", (2, "第三章 责任免除")),
            ("第十二章　附则", (2, "第十二章 附则")),  # ideographic space normalized
            ("第2章 术语", (2, "第2章 术语")),
            ("第二节 保险金额", (3, "第二节 保险金额")),
            ("第一百零三节 其他", (3, "第一百零三节 其他")),
            ("一、保险责任", (5, "一、保险责任")),
            ("十二、附则", (5, "十二、附则")),
            ("（一）身故保险金", (6, "（一）身故保险金")),
            ("(一) 身故保险金", (6, "(一) 身故保险金")),
            ("1. 总则", (7, "1. 总则")),
            ("1、总则", (7, "1、总则")),
            ("12．附则", (7, "12．附则")),
            ("1.1 合同构成", (8, "1.1 合同构成")),
            ("2.10 犹豫期", (8, "2.10 犹豫期")),
            ("1.1.1 投保范围", (9, "1.1.1 投保范围")),
            ("1）犹豫期", (10, "1）犹豫期")),
            ("1) 犹豫期", (10, "1) 犹豫期")),
            ("(1) 首期保险费", (11, "(1) 首期保险费")),
            ("（1）首期保险费", (11, "（1）首期保险费")),
            ("# 安心守护终身重大疾病保险条款", (1, "安心守护终身重大疾病保险条款")),
            ("## 第三章 责任免除", (2, "第三章 责任免除")),
            ("###### 附注 ###", (6, "附注")),
        ],
    )
    def test_heading_lines(self, line: str, expected: tuple[int, str]) -> None:
        assert detect_heading(line) == expected

    @pytest.mark.parametrize(
        ("line", "label"),
        [
            ("第十二条 本合同自签订之日起生效。", "第十二条"),
            (
                "第五条 免责事项 因下列情形之一导致被保险人身故的，我们不承担责任：",
                "第五条 免责事项",
            ),
            (
                "第五条 【免责事项】因下列情形之一导致被保险人身故的，我们不承担责任：",
                "第五条 【免责事项】",
            ),
            ("第五条 免责事项", "第五条 免责事项"),
            ("第一百二十条之二 有下列情形之一的，处五年以下有期徒刑：", "第一百二十条之二"),
            ("第3条 本办法自发布之日起施行。", "第3条"),
            # a sentence whose first words are separated by a space is not a title
            ("第一条 为了实施 《职工带薪年休假条例》 （以下简称条例），制定本实施办法。", "第一条"),
            ("第十八条 本办法中的 “年度”是指公历年度。", "第十八条"),
        ],
    )
    def test_article_label_is_the_heading(self, line: str, label: str) -> None:
        assert detect_heading(line) == (4, label)

    @pytest.mark.parametrize(
        "line",
        [
            "第三章规定的情形除外。",
            "第二节所列事项",
            "第二条规定的期限内",  # no separator after 条: a citation, not an article
            "一、删除《解释》第一条第二项。",  # a sentence: an item, never a heading
            "（一）投保人对被保险人的故意杀害、故意伤害；",
            "1. 本合同自签订之日起生效，双方应当遵守。",
            "1.5万元以下罚款",
            "2019年1月1日起施行",
            "#hashtag 不是标题",
            "####### 七个井号",
            "    # 缩进四格是代码",
            "第一章 " + "很长的标题" * 10,
            "一、",
            "保险责任",
            "",
        ],
    )
    def test_not_headings(self, line: str) -> None:
        assert detect_heading(line) is None

    def test_items_are_recognized_regardless_of_length(self) -> None:
        assert detect_item("（一）投保人对被保险人的故意杀害、故意伤害；") == ("cn_paren", 6)
        assert detect_item("一、删除《解释》第一条第二项。") == ("cn_enum", 5)
        assert detect_item("(2) 离休、退休的；") == ("num_paren", 11)
        assert detect_item("第三条 本办法适用于本市。") is None
        assert detect_item("保险责任") is None

    def test_marker_end(self) -> None:
        marker = match_marker("（十二）其他情形")
        assert marker is not None and marker.end == 4

    def test_title_like(self) -> None:
        assert is_title_like("一、保险责任")
        assert not is_title_like("具体规定如下：")
        assert not is_title_like("本合同终止。")
        assert not is_title_like("x" * 41)


def _path_of(text: str, fmt: str, needle: str) -> tuple[str, ...]:
    for block in parse_blocks(text, fmt):
        if needle in block.text:
            return block.path
    raise AssertionError(f"{needle!r} not found")


class TestHeadingPaths:
    def test_every_chinese_scheme_nests_in_plain_text(self) -> None:
        text = "\n".join(
            [
                "第一编 总则",
                "第一章 一般规定",
                "第一节 适用范围",
                "第一条 本办法适用于本市档案的管理。",
                "一、基本要求",
                "（一）资料管理",
                "1. 归档",
                "1.1 纸质资料",
                "1.1.1 原件",
                "1）复印件",
                "(1) 扫描件",
                "扫描件应当清晰完整。",
            ]
        )
        assert _path_of(text, "text", "扫描件应当") == (
            "第一编 总则",
            "第一章 一般规定",
            "第一节 适用范围",
            "第一条",
            "一、基本要求",
            "（一）资料管理",
            "1. 归档",
            "1.1 纸质资料",
            "1.1.1 原件",
            "1）复印件",
            "(1) 扫描件",
        )
        levels = [b.level for b in parse_blocks(text, "text") if b.label]
        # document-relative levels: below the implicit title (1), in table order
        assert levels == list(range(2, 13))

    def test_sibling_headings_replace_each_other(self) -> None:
        text = "\n".join(
            [
                "第一章 总则",
                "第一条 总则条文。",
                "第二条 另一条文。",
                "第二章 缴存",
                "第三条 缴存条文。",
            ]
        )
        assert _path_of(text, "text", "另一条文") == ("第一章 总则", "第二条")
        assert _path_of(text, "text", "缴存条文") == ("第二章 缴存", "第三条")

    def test_markdown_headings_and_article_labels(self) -> None:
        text = "\n\n".join(
            [
                "# 中华人民共和国示例法",
                "## 第一章 总则",
                "第一条 为了规范示例行为，制定本法。",
                "## 第二章 细则",
                "### 第一节 一般规定",
                "第二条 示例行为应当合法。",
                "前款规定的示例行为包括线上行为。",
            ]
        )
        assert _path_of(text, "markdown", "前款规定") == (
            "中华人民共和国示例法",
            "第二章 细则",
            "第一节 一般规定",
            "第二条",
        )
        blocks = {b.label: b.level for b in parse_blocks(text, "markdown") if b.label}
        # articles rank just below the deepest Markdown heading level in use (###)
        assert blocks == {
            "中华人民共和国示例法": 1,
            "第一章 总则": 2,
            "第二章 细则": 2,
            "第一节 一般规定": 3,
            "第一条": 4,
            "第二条": 4,
        }

    def test_title_path_of_chunks(self) -> None:
        text = "\n".join(
            [
                "第三章 责任免除",
                "第五条 免责事项 因下列情形之一导致被保险人身故的，我们不承担给付保险金的责任：",
                "（一）投保人对被保险人的故意杀害、故意伤害；",
                "（二）被保险人故意犯罪或者抗拒依法采取的刑事强制措施。",
            ]
        )
        chunks = chunk_document(text, "text", title="安心守护终身重大疾病保险条款")
        assert [c.title_path for c in chunks] == [
            ["安心守护终身重大疾病保险条款", "第三章 责任免除", "第五条 免责事项"]
        ]

    def test_markdown_ordered_list_is_not_a_heading(self) -> None:
        text = "## 安装\n\n1. 下载安装包\n2. 运行安装程序\n"
        kinds = [b.kind for b in parse_blocks(text, "markdown")]
        assert kinds == ["heading", "list"]
        # the same lines in plain text are short numbered titles
        kinds = [b.kind for b in parse_blocks("安装\n\n1. 下载安装包\n\n说明文字。\n", "text")]
        assert kinds == ["paragraph", "heading", "paragraph"]


class TestHeadingOrListItem:
    """The rule: after a lead-in ending in "：" numbered lines are items, else short ones are
    headings, else (sentences) items of a list without lead-in."""

    def test_after_a_lead_in_short_numbered_lines_are_items(self) -> None:
        text = "本条款包括以下部分：\n一、总则\n二、保险责任\n三、附则\n"
        blocks = parse_blocks(text, "text")
        assert [b.kind for b in blocks] == ["list"]
        assert len(blocks[0].items) == 3
        assert blocks[0].lead_in_span == (0, len("本条款包括以下部分："))

    def test_without_a_lead_in_short_numbered_lines_are_headings(self) -> None:
        text = "一、总则\n本条款适用于个人客户。\n二、保险责任\n我们承担下列责任。\n"
        blocks = parse_blocks(text, "text")
        assert [(b.kind, b.label) for b in blocks] == [
            ("heading", "一、总则"),
            ("paragraph", None),
            ("heading", "二、保险责任"),
            ("paragraph", None),
        ]

    def test_sentences_without_lead_in_form_a_list(self) -> None:
        text = "一、删除《解释》第一条第二项。\n二、在《解释》第三条后增加一条。\n"
        blocks = parse_blocks(text, "text")
        assert [b.kind for b in blocks] == ["list"]
        assert blocks[0].lead_in_span is None and len(blocks[0].items) == 2

    def test_shallower_scheme_ends_the_list_and_can_be_a_heading(self) -> None:
        text = "\n".join(
            [
                "一、保险责任",
                "我们承担下列责任：",
                "（一）身故保险金；",
                "（二）全残保险金。",
                "二、责任免除",
                "因下列情形导致的，我们不承担责任：",
                "（一）故意犯罪。",
            ]
        )
        blocks = parse_blocks(text, "text")
        assert [b.kind for b in blocks] == ["heading", "list", "heading", "list"]
        assert blocks[2].label == "二、责任免除"
        assert blocks[3].path == ("二、责任免除",)

    def test_nested_deeper_items_stay_in_the_list(self) -> None:
        text = "\n".join(
            [
                "第八条 有下列情形之一的，可以提取：",
                "（一）购买住房的，包括：",
                "1. 新建商品住房；",
                "2. 二手住房；",
                "（二）离休、退休的。",
            ]
        )
        blocks = parse_blocks(text, "text")
        assert [b.kind for b in blocks] == ["list"]
        assert len(blocks[0].items) == 4
