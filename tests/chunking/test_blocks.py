from __future__ import annotations

import pytest

from rag_app.chunking import parse_blocks
from rag_app.chunking.block import Block

from .helpers import uncovered
from .samples import API_DOC, INSURANCE_CLAUSE, PREMIUM_CAPTION, PREMIUM_HEADER, REGULATION_TEXT


def kinds(blocks: list[Block]) -> list[str]:
    return [b.kind for b in blocks]


def span(text: str, s: tuple[int, int] | None) -> str:
    assert s is not None
    return text[s[0] : s[1]]


@pytest.mark.parametrize(
    ("text", "fmt"),
    [(INSURANCE_CLAUSE, "markdown"), (REGULATION_TEXT, "text"), (API_DOC, "markdown")],
)
def test_blocks_are_ordered_trimmed_and_cover_the_text(text: str, fmt: str) -> None:
    blocks = parse_blocks(text, fmt)
    assert all(a.end <= b.start for a, b in zip(blocks, blocks[1:], strict=False))
    for b in blocks:
        assert b.text == text[b.start : b.end]
        assert b.text == b.text.strip()
    assert uncovered(text, [(b.start, b.end) for b in blocks]) == []


def test_unknown_format_is_rejected() -> None:
    with pytest.raises(ValueError, match="fmt must be"):
        parse_blocks("正文", "html")


class TestMarkdownCode:
    def test_hash_lines_inside_a_fence_are_not_headings(self) -> None:
        blocks = parse_blocks(API_DOC, "markdown")
        code = [b for b in blocks if b.kind == "code"]
        assert len(code) == 1
        assert code[0].text.startswith("```python\n# 创建客户端")
        assert code[0].text.endswith("```")
        assert code[0].info == "python" and code[0].fence == "```"
        labels = [b.label for b in blocks if b.kind == "heading"]
        assert labels == ["检索服务 API 文档", "快速开始", "参数说明"]

    def test_tilde_fence_longer_closing_fence_and_unclosed_fence(self) -> None:
        text = (
            "说明：\n\n~~~~sh\n# 注释\n~~~\n还在代码里\n~~~~~\n\n正文\n\n```\n# 未关闭\n## 仍是代码"
        )
        blocks = parse_blocks(text, "markdown")
        assert kinds(blocks) == ["paragraph", "code", "paragraph", "code"]
        assert blocks[1].text.endswith("还在代码里\n~~~~~")
        assert blocks[3].close_span is None and blocks[3].text.endswith("## 仍是代码")

    def test_fence_inside_a_list_item_stays_in_the_item(self) -> None:
        text = "步骤：\n\n- 安装：\n\n  ```bash\n  # 不是标题\n  pip install x\n  ```\n- 运行\n"
        blocks = parse_blocks(text, "markdown")
        assert kinds(blocks) == ["list"]
        assert len(blocks[0].items) == 2
        assert "# 不是标题" in span(text, blocks[0].items[0])


class TestMarkdownTables:
    def test_caption_line_is_absorbed(self) -> None:
        blocks = parse_blocks(INSURANCE_CLAUSE, "markdown")
        table = next(b for b in blocks if b.kind == "table")
        assert table.caption == PREMIUM_CAPTION
        assert span(INSURANCE_CLAUSE, table.caption_span) == PREMIUM_CAPTION
        assert table.text.startswith(PREMIUM_CAPTION)
        assert span(INSURANCE_CLAUSE, table.header_span) == PREMIUM_HEADER
        assert len(table.rows) == 60

    def test_heading_is_the_caption_and_stays_a_heading(self) -> None:
        text = "# 上海市商品房成交价格表\n\n| 项目 | 均价 |\n|:---|---:|\n| 甲 | 1 |\n| 乙 | 2 |\n"
        blocks = parse_blocks(text, "markdown")
        assert kinds(blocks) == ["heading", "table"]
        assert blocks[1].caption == "上海市商品房成交价格表"
        assert blocks[1].caption_span is None
        assert [span(text, r) for r in blocks[1].rows] == ["| 甲 | 1 |", "| 乙 | 2 |"]

    def test_sentence_before_a_table_is_not_a_caption(self) -> None:
        text = "本表列出全部费用。请仔细阅读。\n\n| 项目 | 金额 |\n| --- | --- |\n| 甲 | 1 |\n"
        blocks = parse_blocks(text, "markdown")
        assert kinds(blocks) == ["paragraph", "table"]
        assert blocks[1].caption == ""

    def test_table_ends_at_a_line_without_pipe(self) -> None:
        text = "| 项目 | 金额 |\n| --- | --- |\n| 甲 | 1 |\n注：金额单位为元。\n"
        blocks = parse_blocks(text, "markdown")
        assert kinds(blocks) == ["table", "paragraph"]


class TestLists:
    def test_lead_in_is_the_last_sentence_of_the_paragraph(self) -> None:
        text = (
            "本合同另有约定。因下列情形之一导致的，我们不承担责任：\n\n- 故意犯罪；\n- 醉酒驾驶。\n"
        )
        blocks = parse_blocks(text, "markdown")
        assert kinds(blocks) == ["paragraph", "list"]
        assert blocks[0].text == "本合同另有约定。"
        assert span(text, blocks[1].lead_in_span) == "因下列情形之一导致的，我们不承担责任："
        assert blocks[1].start == blocks[1].lead_in_span[0]  # type: ignore[index]

    def test_statute_items_separated_by_blank_lines(self) -> None:
        text = (
            "第九十五条 本法所称重伤，是指有下列情形之一的伤害：\n\n"
            "（一）使人肢体残废或者毁人容貌的；\n\n"
            "（二）使人丧失听觉、视觉或者其他器官机能的；\n\n"
            "（三）其他对于人身健康有重大伤害的。\n\n"
            "第九十六条 本法所称违反国家规定，是指违反全国人民代表大会及其常务委员会制定的法律。\n"
        )
        blocks = parse_blocks(text, "markdown")
        assert kinds(blocks) == ["list", "paragraph"]
        lst = blocks[0]
        assert lst.label == "第九十五条" and lst.path == ("第九十五条",)
        assert span(text, lst.lead_in_span) == "第九十五条 本法所称重伤，是指有下列情形之一的伤害："
        assert [span(text, i)[:3] for i in lst.items] == ["（一）", "（二）", "（三）"]
        assert blocks[1].path == ("第九十六条",)

    def test_regulation_in_plain_text(self) -> None:
        blocks = parse_blocks(REGULATION_TEXT, "text")
        lst = next(b for b in blocks if b.kind == "list")
        assert lst.label == "第八条"
        assert lst.path == ("第三章 提取", "第八条")
        assert len(lst.items) == 6
        after = blocks[blocks.index(lst) + 1]
        assert after.kind == "paragraph" and after.text.startswith("依照前款")
        assert after.path == ("第三章 提取", "第八条")

    def test_bullets_and_hr(self) -> None:
        text = "* 甲\n+ 乙\n\n---\n\n***\n"
        blocks = parse_blocks(text, "markdown")
        assert kinds(blocks) == ["list", "paragraph", "paragraph"]


class TestPlainText:
    def test_article_lines_interrupt_paragraphs(self) -> None:
        text = "第一章 总则\n第一条 第一条正文。\n第二条 第二条正文，\n续行。\n第三条 第三条正文。"
        blocks = parse_blocks(text, "text")
        assert kinds(blocks) == ["heading", "paragraph", "paragraph", "paragraph"]
        assert blocks[2].text == "第二条 第二条正文，\n续行。"
        assert [b.label for b in blocks] == ["第一章 总则", "第一条", "第二条", "第三条"]

    def test_paragraphs_split_at_blank_lines(self) -> None:
        text = "第一段第一行\n第一段第二行\n\n第二段。"
        assert [b.text for b in parse_blocks(text, "text")] == [
            "第一段第一行\n第一段第二行",
            "第二段。",
        ]

    def test_title_line_becomes_a_level_one_heading(self) -> None:
        blocks = parse_blocks(REGULATION_TEXT, "text", title="某市住房公积金管理办法")
        assert (blocks[0].kind, blocks[0].level) == ("heading", 1)
        assert blocks[1].path == ("某市住房公积金管理办法", "第一章 总则")
