"""Answer units: sentences, list items with their lead-in, table rows with their header."""

from __future__ import annotations

from rag_app.answer.units import evidence_units, split_units
from tests.answer.nodes import evidence_node

TEXT = """# 信息安全

第十条 员工应当遵守以下密码要求：
（一）密码长度不少于12位；
（二）密码每90天至少更换一次。
离职员工的账号当日停用。备份每周进行一次！

| 年龄 | 男性年缴保费（元） | 女性年缴保费（元） |
|---|---|---|
| 30 | 710 | 615 |
| 63 | 2586 | 2098 |
"""


def test_kinds_and_spans_point_back_into_the_text() -> None:
    units = split_units(TEXT, 1, frozenset({"信息安全"}))
    kinds = [u.kind for u in units]
    assert kinds == ["sentence", "item", "item", "sentence", "sentence", "row", "row"]
    for u in units:
        shown = TEXT[u.start : u.end]
        if u.kind == "row":
            assert shown.startswith("|") and u.cells[0] in shown
        else:
            assert u.text in shown


def test_items_carry_their_lead_in() -> None:
    items = [u for u in split_units(TEXT, 1) if u.kind == "item"]
    assert all(u.context.startswith("第十条 员工应当遵守以下密码要求") for u in items)
    assert "密码要求" in items[1].scoring_text and "90天" in items[1].scoring_text


def test_rows_pair_cells_with_column_names() -> None:
    rows = [u for u in split_units(TEXT, 1) if u.kind == "row"]
    assert rows[1].text == "年龄：63，男性年缴保费（元）：2586，女性年缴保费（元）：2098"
    assert rows[1].header[1] == "男性年缴保费（元）" and rows[1].cells[1] == "2586"
    assert "男性年缴保费" in rows[1].scoring_text  # the header is scored with the row


def test_headings_are_not_units_and_nodes_are_numbered() -> None:
    nodes = [
        evidence_node("# 标题\n正文第一句。", "标题"),
        evidence_node("另一份资料的句子。", n=1),
    ]
    units = evidence_units(nodes)
    assert [(u.source, u.text) for u in units] == [(1, "正文第一句。"), (2, "另一份资料的句子。")]


def test_a_decision_carries_every_unit_of_the_evidence() -> None:
    from rag_app.analysis import QuestionAnalyzer
    from rag_app.answer.locator import AnswerLocator
    from rag_app.answer.model import AnswerModel
    from rag_app.retrieval.stats import TermStatistics

    items = "\n".join(f"（{n}）第{n}项要求的内容；" for n in "一二三四五六七八九十")
    text = f"第五条 员工应当遵守下列要求：\n{items}\n"
    nodes = [evidence_node(text)]
    locator = AnswerLocator(
        AnswerModel.load(), QuestionAnalyzer(), TermStatistics(None), threshold=0.0
    )
    decision = locator.locate("员工应当遵守哪些要求？", nodes)
    # compose() brings a leading lead-in's items from decision.units: none may be cut off
    assert len(decision.units) == len(evidence_units(nodes)) == 11
