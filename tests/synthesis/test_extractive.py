"""The extractive answer: best unit first (a table's asked cell), then support, each cited."""

from __future__ import annotations

from rag_app.analysis import QuestionAnalyzer
from rag_app.answer.locator import AnswerDecision, ScoredUnit
from rag_app.answer.units import split_units
from rag_app.synthesis.extractive import compose

ANALYZER = QuestionAnalyzer()
TABLE = """| 投保年龄 | 男性年缴保费（元） | 女性年缴保费（元） |
|---|---|---|
| 30 | 710 | 615 |
| 45 | 1200 | 1010 |
"""
POLICY = """第十条 员工应当遵守以下密码要求：
（一）密码长度不少于12位；
（二）密码每90天至少更换一次。
共享账号密码每30天更换一次。
"""


def decision(question: str, text: str, probs: list[float]) -> AnswerDecision:
    units = split_units(text, 1)
    scored = sorted(
        (ScoredUnit(unit=u, probability=p) for u, p in zip(units, probs, strict=True)),
        key=lambda s: -s.probability,
    )
    return AnswerDecision(refused=False, best=scored[0].probability, threshold=0.5,
                          units=scored, analysis=ANALYZER(question))  # fmt: skip


def test_a_table_answer_leads_with_the_asked_cell_and_its_row() -> None:
    d = decision("30岁女性每年交多少保费？", TABLE, [0.9, 0.2])
    text, cited = compose(d, ANALYZER.lexicon)
    first = text.splitlines()[0]
    assert first.startswith("女性年缴保费（元）：615") and "投保年龄：30" in first
    assert first.endswith("[1]") and cited[0].kind == "row"


def test_the_best_unit_comes_first_and_support_is_bounded() -> None:
    d = decision("共享账号密码多久换一次？", POLICY, [0.3, 0.2, 0.6, 0.95])
    text, cited = compose(d, ANALYZER.lexicon)
    lines = text.splitlines()
    assert lines[0] == "共享账号密码每30天更换一次。 [1]"
    assert len(lines) <= 3 and all(line.rstrip().endswith("]") or "（" in line for line in lines)
    assert [c.text for c in cited][0] == "共享账号密码每30天更换一次。"
    assert all(c.start < c.end for c in cited)


def test_a_lead_in_brings_its_items() -> None:
    d = decision("员工应当遵守哪些密码要求？", POLICY, [0.9, 0.1, 0.1, 0.05])
    text, _ = compose(d, ANALYZER.lexicon)
    assert text.splitlines()[:3] == [
        "第十条 员工应当遵守以下密码要求： [1]",
        "（一）密码长度不少于12位； [1]",
        "（二）密码每90天至少更换一次。 [1]",
    ]


def test_an_item_answer_shows_its_lead_in() -> None:
    d = decision("密码多久更换一次？", POLICY, [0.2, 0.3, 0.9, 0.1])
    first = compose(d, ANALYZER.lexicon)[0].splitlines()[0]
    assert first.startswith("（二）密码每90天至少更换一次。 [1]") and "密码要求" in first


def test_a_list_question_answered_by_an_item_gets_the_lead_in_and_every_item() -> None:
    # the best unit is one item; a question that asks for a list wants all of them, in order
    d = decision("员工的密码有哪些要求？", POLICY, [0.6, 0.4, 0.9, 0.1])
    text, cited = compose(d, ANALYZER.lexicon)
    assert text.count("第十条 员工应当遵守以下密码要求：") == 1  # the lead-in is not support too
    assert text.splitlines()[:3] == [
        "第十条 员工应当遵守以下密码要求： [1]",
        "（一）密码长度不少于12位； [1]",
        "（二）密码每90天至少更换一次。 [1]",
    ]
    assert cited[0].text == "（二）密码每90天至少更换一次。"  # the best unit stays first cited
    assert {c.text for c in cited} >= {
        "（一）密码长度不少于12位；",
        "（二）密码每90天至少更换一次。",
    }


def test_a_single_value_question_answered_by_an_item_keeps_one_item() -> None:
    d = decision("密码多久更换一次？", POLICY, [0.2, 0.3, 0.9, 0.1])
    lines = compose(d, ANALYZER.lexicon)[0].splitlines()
    assert "（一）密码长度不少于12位； [1]" not in lines


ARTICLES = """第十一条 员工离职当日，IT部门应当注销其全部账号。
第十二条 连续5次输入错误密码的，账号将被自动锁定30分钟；同一账号一天内被锁定3次以上的，应当通知安全部门排查。
第十三条 远程访问必须使用公司VPN。
"""


def test_a_question_about_a_named_article_gets_that_article_in_order() -> None:
    # "第十二条规定了什么" asks for the article, whichever of its sentences scores best
    d = decision("管理制度第十二条规定了什么？", ARTICLES, [0.5, 0.2, 0.9, 0.4])
    text, cited = compose(d, ANALYZER.lexicon)
    assert text.splitlines()[:2] == [
        "第十二条 连续5次输入错误密码的，账号将被自动锁定30分钟； [1]",
        "同一账号一天内被锁定3次以上的，应当通知安全部门排查。 [1]",
    ]
    assert "第十三条" not in text.splitlines()[1]
    assert cited[0].text.startswith("第十二条")


def test_a_value_question_naming_an_article_still_leads_with_the_value() -> None:
    d = decision("第十二条规定一天内被锁定几次以上要排查？", ARTICLES, [0.1, 0.3, 0.9, 0.2])
    first = compose(d, ANALYZER.lexicon)[0].splitlines()[0]
    assert first.startswith("同一账号一天内被锁定3次以上的")


def test_a_row_for_another_subject_is_not_support() -> None:
    """The row of the asked age leads; the other age's row, scored close behind, is another
    answer, not support. A row holding the same asked words may still support."""
    d = decision("30岁女性每年交多少保费？", TABLE, [0.9, 0.8])
    text, cited = compose(d, ANALYZER.lexicon)
    assert "投保年龄：45" not in text
    assert [c.text.split("，")[0] for c in cited] == ["投保年龄：30"]
    both = "| 职级 | 火车 |\n|---|---|\n| 部门负责人 | 一等座 |\n| 部门负责人（代） | 一等座 |\n"
    d = decision("部门负责人乘坐火车是什么标准？", both, [0.9, 0.8])
    _, cited = compose(d, ANALYZER.lexicon)
    assert len(cited) == 2


FAQ = """问：忘记了域账号密码怎么办？
答：可以在自助服务门户通过手机验证码自助重置密码。
问：账号被锁定了怎么处理？
答：连续5次输错密码会锁定30分钟，期满自动解锁。
"""


def test_a_restated_question_leads_with_its_answer_not_itself() -> None:
    """An FAQ's question line matches a paraphrase best and answers nothing: the answer after
    it leads, with the question it answers beside it; the question is not cited as support."""
    d = decision("密码忘了怎么办？", FAQ, [0.9, 0.6, 0.3, 0.2])
    text, cited = compose(d, ANALYZER.lexicon)
    lines = text.splitlines()
    assert (
        lines[0].startswith("答：可以在自助服务门户")
        and "（问：忘记了域账号密码怎么办？）" in lines[0]
    )
    assert cited[0].text.startswith("答：") and not any(c.text.endswith("？") for c in cited)
    # an answer unit that is best stays first, with nothing beside it
    d = decision("密码忘了怎么重置？", FAQ, [0.6, 0.9, 0.3, 0.2])
    text, _ = compose(d, ANALYZER.lexicon)
    assert text.splitlines()[0] == "答：可以在自助服务门户通过手机验证码自助重置密码。 [1]"


def test_a_range_list_gets_the_rows_in_the_range() -> None:
    """ "哪些…在A至B之间" lists the rows whose values lie in the range, best first, whichever row
    the ranking put first."""
    table = (
        "| 项目名称 | 成交均价 | 时间 |\n|---|---|---|\n| 翠园 | 15200.5 | 2021-07-01 |\n"
        "| 东湖里 | 23800 | 2021-07-01 |\n| 西山府 | 29100.2 | 2021-07-01 |"
    )
    d = decision("哪些小区的房价位于20000至30000元之间？", table, [0.9, 0.5, 0.6])
    text, cited = compose(d, ANALYZER.lexicon)
    lines = text.splitlines()
    assert [line.split("，")[0] for line in lines] == ["项目名称：西山府", "项目名称：东湖里"]
    assert len(cited) == 2
    single, _ = compose(
        decision("翠园的成交均价是多少？", table, [0.9, 0.5, 0.6]), ANALYZER.lexicon
    )
    assert single.splitlines()[0].startswith("成交均价：15200.5")


def test_a_range_list_reads_the_asked_column() -> None:
    """ "哪些年龄的男性保费在1000至1100元之间" reads the men's column, not any cell in range."""
    d = decision("哪些年龄的男性年缴保费在600至800元之间？", TABLE, [0.9, 0.5])
    text, _ = compose(d, ANALYZER.lexicon)
    assert text.splitlines() == [
        "投保年龄：30，男性年缴保费（元）：710，女性年缴保费（元）：615 [1]"
    ]
    women = compose(
        decision("哪些年龄的女性年缴保费在600至800元之间？", TABLE, [0.9, 0.5]), ANALYZER.lexicon
    )
    assert women[0].splitlines()[0].startswith("投保年龄：30")
    none = compose(
        decision("哪些年龄的女性年缴保费在700至800元之间？", TABLE, [0.9, 0.5]), ANALYZER.lexicon
    )
    assert not none[0].startswith("投保年龄：30，男性")  # 710 is the men's, not the asked cell


def test_a_compound_question_gets_each_of_its_answers_after_the_best_unit() -> None:
    """Two questions in one: the whole question's best unit leads, then each question's own
    best unit, in the question's order, none twice."""
    d = decision("密码最少几位？多久换一次？", POLICY, [0.3, 0.4, 0.6, 0.95])
    units = {s.unit.text: s for s in d.units}
    parts = [units["（一）密码长度不少于12位；"], units["共享账号密码每30天更换一次。"]]
    lines = compose(d.model_copy(update={"parts": parts}), ANALYZER.lexicon)[0].splitlines()
    assert lines[0].startswith("共享账号密码每30天更换一次。")
    assert lines[1].startswith("（一）密码长度不少于12位；")
    assert sum("共享账号" in line for line in lines) == 1


def test_a_qualified_answer_says_what_the_kb_lacks_before_the_closest_value() -> None:
    """The closest row of a table that has no 65-year-olds is not the asked one: the first line
    says so before it (a qualified answer), the rest of the answer unchanged."""
    d = decision("65岁男性每年交多少保费？", TABLE, [0.9, 0.2])
    plain = compose(d, ANALYZER.lexicon)[0].splitlines()
    caveat = "知识库中没有“65”的记录；最接近的是："
    lines = compose(d.model_copy(update={"caveat": caveat}), ANALYZER.lexicon)[0].splitlines()
    assert lines[0] == caveat + plain[0]
    assert lines[1:] == plain[1:]
    assert d.outcome == "answered"
    assert d.model_copy(update={"caveat": caveat}).outcome == "qualified"
    assert d.model_copy(update={"caveat": caveat, "refused": True}).outcome == "refused"
