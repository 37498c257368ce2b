"""The extractive synthesizer prefers sentences holding a value of the asked kind."""

from __future__ import annotations

from llama_index.core.schema import NodeWithScore, TextNode

from rag_app.synthesis.citations import answer_value_pattern, extract_answer

POLICY = (
    "第十一条 员工应当遵守以下密码要求：\n"
    "（二）密码每90天至少更换一次，新密码不得与最近5次使用过的密码相同；\n"
    "（五）初始密码和重置后的密码，应当在首次登录时立即修改。\n"
)
PREMIUM = (
    "| 投保年龄 | 男性·20年交 | 女性·20年交 |\n"
    "| --- | --- | --- |\n"
    "| 30 | 710 | 615 |\n"
    "| 31 | 741 | 640 |\n"
)


def nodes(*texts: str) -> list[NodeWithScore]:
    return [NodeWithScore(node=TextNode(text=t), score=1.0) for t in texts]


def test_question_forms_map_to_value_kinds() -> None:
    duration = answer_value_pattern("密码多久需要修改一次？")
    assert duration is not None and duration.search("每90天") and not duration.search("立即修改")
    money = answer_value_pattern("年交保费是多少？")
    assert money is not None and money.search("30万元")
    date = answer_value_pattern("合同什么时候生效？")
    assert date is not None and date.search("2024年3月1日")
    assert answer_value_pattern("密码有哪些要求？") is None


def test_duration_question_picks_the_sentence_with_a_duration() -> None:
    weights = {"密码": 1.0, "多久": 1.0, "修改": 2.0, "一次": 0.5}
    answer = extract_answer("密码多久需要修改一次？", nodes(POLICY), weights)
    assert "每90天" in answer
    assert "首次登录" not in answer  # repeats 修改, but says nothing about how long


def test_without_a_value_question_the_best_covered_sentence_wins() -> None:
    weights = {"密码": 1.0, "首次": 1.0, "登录": 1.0, "修改": 2.0}
    answer = extract_answer("首次登录后要修改密码吗？", nodes(POLICY), weights)
    assert "首次登录" in answer


def test_a_table_rows_bare_number_counts_as_the_asked_amount() -> None:
    text = "例如，30周岁男性投保基本保险金额30万元，年交保险费为表中对应费率乘以30。\n\n" + PREMIUM
    weights = {"30": 1.0, "男性": 1.0, "20年交": 1.0, "保费": 1.0, "多少": 0.2}
    answer = extract_answer("30岁男性20年交的保费是多少？", nodes(text), weights)
    assert "男性·20年交：710" in answer
