"""The first-line caveat: a value or a name the evidence holds in another form is not absent; one
it holds in no form still is (rag_app/answer/caveat.py, rag_app/text/quantities.py)."""

from __future__ import annotations

import pytest

from rag_app.analysis import QuestionAnalyzer
from rag_app.answer.caveat import Caveats, Lacking
from rag_app.text.quantities import amount_in, cn_amount, plain, stated_amount
from tests.answer.nodes import evidence_node

ANALYZER = QuestionAnalyzer()
CAVEATS = Caveats(lexicon=ANALYZER.lexicon, qualify_confidence=0.3)


def lacking(question: str, *passages: str) -> Lacking:
    nodes = [evidence_node(p, n=i) for i, p in enumerate(passages)]
    return CAVEATS.lacking(ANALYZER(question), nodes)


@pytest.mark.parametrize(
    ("question", "evidence"),
    [
        ("年薪120000元的员工个税税率是多少？", "年薪12万元的员工按20%的税率缴纳。"),
        ("年薪12万元的员工个税税率是多少？", "年薪120,000元的员工按20%的税率缴纳。"),
        ("年薪12万元的员工个税税率是多少？", "年薪120000元的员工按20%的税率缴纳。"),
        ("采购15000元的设备由谁审批？", "1.5万元的设备由部门经理审批。"),
        ("保费为3000元的保单如何退保？", "保费为３０００元的保单可在犹豫期内退保。"),
        ("35岁的员工有几天年假？", "三十五周岁的员工享有十天年假。"),
        ("投保120天后可以退保吗？", "投保一百二十日后可以退保，退还现金价值。"),
        ("2026年3月的销量是多少？", "2026 年 03 月销量为 500 台。"),
        ("税率5%的商品有哪些？", "适用百分之五税率的商品包括图书。"),
    ],
)
def test_a_value_written_otherwise_is_not_absent(question: str, evidence: str) -> None:
    got = lacking(question, evidence)
    assert got.values == [], got
    assert CAVEATS.caveat(got, None, 0.9) is None


@pytest.mark.parametrize(
    ("question", "evidence", "absent"),
    [
        ("年薪130000元的员工个税税率是多少？", "年薪12万元的员工按20%的税率缴纳。", "130000元"),
        ("年薪12万元的员工个税税率是多少？", "年薪12,500元的员工按3%的税率缴纳。", "12万元"),
        ("36岁的员工有几天年假？", "三十五周岁的员工享有十天年假。", "36岁"),
        ("2025年3月的销量是多少？", "2026 年 03 月销量为 500 台。", "2025年3月"),
    ],
)
def test_a_value_the_evidence_holds_in_no_form_is_still_absent(
    question: str, evidence: str, absent: str
) -> None:
    got = lacking(question, evidence)
    assert got.values == [absent], got
    assert CAVEATS.caveat(got, None, 0.9) == f"知识库中没有“{absent}”的记录；最接近的是："


def test_a_latin_name_spelled_with_other_separators_or_full_width_is_said() -> None:
    assert lacking("Type-C接口的充电器多少钱？", "TypeC 充电器 39 元。").names == []
    assert lacking("SAP账号怎么申请？", "ＳＡＰ账号由信息部开通。").names == []
    assert lacking("Wi-Fi密码是多少？", "访客 WiFi 的密码贴在前台。").names == []


def test_a_name_the_evidence_never_mentions_is_still_absent() -> None:
    got = lacking("Oracle账号怎么申请？", "SAP账号由信息部开通。")
    assert got.names == ["Oracle"], got
    assert lacking("Type-C接口的充电器多少钱？", "Type-A 充电器 39 元。").names == ["Type-C"]


def test_quantities() -> None:
    assert plain("１２０,０００元") == "120000元"
    assert plain("3,14") == "3,14"  # not a thousands separator
    assert stated_amount("12万元") == (120000.0, "元")
    assert stated_amount("35周岁") == (35.0, "岁")
    assert cn_amount("一亿两千万") == 120_000_000
    assert cn_amount("十二万五千") == 125_000
    assert amount_in("35岁", "三十五周岁")
    assert not amount_in("35岁", "三十五天")  # another unit in Chinese numerals
    assert not amount_in("3岁", "三十五周岁")
    assert amount_in("3个月", "试用期三个月")


def test_a_number_the_question_writes_with_separators_is_read_whole() -> None:
    question = "根据哪一年的人口普查，南加州的人口为22,680,010？"
    assert lacking(question, "2010年人口普查显示南加州人口为22,680,010。").values == []
    assert lacking(question, "2010年的人口为22680010人。").values == []
    # not a group of it: 22 alone in the evidence does not hold 22,680,010
    assert lacking(question, "2010年共有22个县，人口为1,000,000。").values == ["22,680,010"]
