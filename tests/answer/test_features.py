"""Each feature of the answer locator on hand-made units."""

from __future__ import annotations

import numpy as np
import pytest

from rag_app.analysis import QuestionAnalyzer
from rag_app.answer.features import FEATURES, FeatureExtractor, term_credit, weighted_coverage
from rag_app.answer.units import evidence_units
from tests.answer.nodes import evidence_node

ANALYZER = QuestionAnalyzer()


def features(question: str, texts: list[str], embed=None) -> tuple[list[str], np.ndarray]:  # type: ignore[no-untyped-def]
    nodes = [evidence_node(t, n=i) for i, t in enumerate(texts)]
    analysis = ANALYZER(question)
    units = evidence_units(nodes)
    weights = dict.fromkeys(analysis.terms, 1.0)
    x = FeatureExtractor(ANALYZER.lexicon, embed).matrix(analysis, weights, units, nodes)
    return [u.text for u in units], x


def col(x: np.ndarray, name: str) -> np.ndarray:
    return x[:, FEATURES.index(name)]


def test_term_credit_is_fuzzy_but_not_free() -> None:
    assert term_credit("等待期", "等待期为180日") == 1.0
    assert 0 < term_credit("等待期", "等待的期间") < 1.0
    assert term_credit("等待期", "保险金额") == 0.0
    assert weighted_coverage({"密码": 3.0, "食堂": 1.0}, "密码每90天更换") == pytest.approx(0.75)


def test_coverage_prefers_the_unit_with_the_question_words() -> None:
    texts, x = features("等待期是多少天？", ["等待期为180日。保险期间为终身。"])
    assert texts == ["等待期为180日。", "保险期间为终身。"]
    assert col(x, "cov_unit")[0] > col(x, "cov_unit")[1]
    assert col(x, "bigram_unit")[0] > col(x, "bigram_unit")[1]


def test_spelling_variants_match() -> None:
    _, x = features("年缴保费是多少？", ["年交保费为710元。"])
    assert col(x, "cov_unit")[0] == pytest.approx(1.0)


def test_value_of_the_asked_type() -> None:
    _, x = features("密码要多长时间换一次？", ["密码每90天更换一次。", "密码不得告诉他人。"])
    assert col(x, "expects_value").tolist() == [1.0, 1.0]
    assert col(x, "value_unit").tolist() == [1.0, 0.0]
    assert col(x, "value_gap").tolist() == [0.0, 1.0]
    _, y = features("这座桥是哪一年建成的？", ["大桥于1957年建成通车。"])
    assert col(y, "value_unit")[0] == 1.0
    _, z = features("这部小说的作者是谁？", ["小说共有三卷。"])
    assert col(z, "value_unit")[0] == 0.0


def test_a_missing_question_term_is_seen() -> None:
    _, x = features("公司食堂几点开门？", ["公司前台九点开门。"])
    assert col(x, "miss_ctx")[0] > 0 and col(x, "miss_all")[0] > 0
    _, y = features("公司前台几点开门？", ["公司前台九点开门。"])
    assert col(y, "miss_ctx")[0] == 0


def test_constraint_values_must_match() -> None:
    texts, x = features(
        "63岁男性的保费是多少？", ["| 年龄 | 保费 |\n|---|---|\n| 30 | 710 |\n| 63 | 2586 |"]
    )
    assert texts == ["年龄：30，保费：710", "年龄：63，保费：2586"]
    assert col(x, "constraint_unit").tolist() == [0.0, 1.0]
    assert col(x, "column")[0] > 0  # the column 保费 is asked
    # a month as the question writes it (7月) meets a zero-padded date (2021-07-01)
    _, y = features(
        "2021年7月成交了多少套？",
        ["| 月份 | 成交套数 |\n|---|---|\n| 2021-08-01 | 62 |\n| 2021-07-01 | 40 |"],
    )
    assert col(y, "constraint_unit").tolist() == [0.5, 1.0]


def test_a_stated_value_anywhere_in_the_evidence_but_not_a_bound() -> None:
    table = "| 月份 | 营业利润 |\n|---|---|\n| 2020-12-01 | 5.1 |\n| 2021-01-01 | 8.2 |"
    _, x = features("2021年1月的营业利润是多少？", [table])
    assert col(x, "constraint_any").tolist() == [1.0, 1.0]  # the same for every unit
    # the year and the month are one date: 2021 and 1 both occur, 2021-02 does not
    _, y = features("2021年2月的营业利润是多少？", [table])
    assert col(y, "constraint_any").tolist() == [0.0, 0.0]
    # a bound (超过7亿) need not be in the evidence; the date must
    _, z = features("2021年1月营业利润超过7亿吗？", [table])
    assert col(z, "constraint_any")[0] == 1.0
    _, none = features("营业利润是多少？", [table])
    assert col(none, "constraint_any")[0] == 1.0  # no stated value
    # two subjects, one value each: one found is enough (the answer may be partial)
    _, two = features("2020年和2019年的营业利润分别是多少？", [table])
    assert col(two, "constraint_any")[0] == 1.0


def test_a_unit_about_another_period_or_age_is_a_rival() -> None:
    table = "| 月份 | 营业利润 |\n|---|---|\n| 2020-12-01 | 5.1 |\n| 2021-01-01 | 8.2 |"
    _, x = features("2021年2月的营业利润是多少？", [table])
    assert col(x, "constraint_rival").tolist() == [1.0, 1.0]  # other months, not February
    _, y = features("2021年1月的营业利润是多少？", [table])
    assert col(y, "constraint_rival").tolist() == [0.0, 0.0]
    # a year as the value of a year column (年份：2021) is of a year's form too
    years = "| 年份 | 营业利润 |\n|---|---|\n| 2020 | 5.1 |\n| 2021 | 8.2 |"
    _, w = features("2022年的营业利润是多少？", [years])
    assert col(w, "constraint_rival").tolist() == [1.0, 1.0]
    # an undated passage is no rival of a year: a policy still answers "2025年…"
    _, z = features("2025年住宿费每晚最多报销多少元？", ["住宿费每晚最多报销600元。"])
    assert col(z, "constraint_any")[0] == 0.0 and col(z, "constraint_rival")[0] == 0.0
    # an age of the same form; 天 and 日 read alike
    _, ages = features("63岁的保费是多少？", ["59岁的保费为710元。", "保费按年交纳。"])
    assert col(ages, "constraint_rival").tolist() == [1.0, 0.0]
    _, days = features("犹豫期是20天吗？", ["犹豫期为15日。"])
    assert col(days, "constraint_rival")[0] == 1.0


def test_entities_in_the_unit_and_in_its_node() -> None:
    _, x = features(
        "《劳动合同法》规定的试用期多长？", ["《劳动合同法》第十九条。试用期最长六个月。"]
    )
    assert col(x, "has_entity")[0] == 1.0
    assert col(x, "entity_unit").tolist() == [1.0, 0.0]
    assert col(x, "entity_ctx").tolist() == [1.0, 1.0]


def test_dense_similarity_uses_the_embedder() -> None:
    def embed(question: str, texts: list[str]) -> list[float]:
        return [0.9 if "更换" in t else 0.1 for t in texts]

    _, x = features("密码多久换？", ["密码每90天更换一次。", "账号不得共用。"], embed)
    assert col(x, "dense").tolist() == [0.9, 0.1]
    assert col(x, "dense_gap").tolist() == [0.0, pytest.approx(-0.8)]


def test_position_features() -> None:
    _, x = features("问题？", ["第一句。第二句。", "另一段。"])
    assert col(x, "rank").tolist() == [1.0, 1.0, 0.5]
    assert col(x, "first_in_node").tolist() == [1.0, 0.0, 1.0]


def test_a_value_of_the_asked_type_beside_the_asked_head() -> None:
    _, x = features(
        "等待期是多少天？",
        ["被保险人因意外伤害导致上述情形的，无等待期。", "本合同的等待期为90日。"],
    )
    assert col(x, "value_with_head").tolist() == [0.0, 1.0]


def test_a_specific_missing_word_weighs_more_than_an_everyday_one() -> None:
    """The gate's specific_missing: the most specific question word the evidence lacks."""
    from rag_app.analysis.specificity import WordSpecificity
    from rag_app.answer.question_features import specific_missing

    spec = WordSpecificity()
    analysis = ANALYZER("禁药名单什么时候公布？")
    assert "禁药" in analysis.terms and "名单" in analysis.terms
    has_all = specific_missing(analysis, "禁药名单于三月公布。", spec)
    lacks_rare = specific_missing(analysis, "参赛名单于三月公布。", spec)
    lacks_everyday = specific_missing(analysis, "禁药清单于三月公布。", spec)
    assert has_all == 0.0
    assert lacks_rare == pytest.approx(spec("禁药"))
    assert lacks_rare > lacks_everyday > 0.0


def test_an_anonymised_name_the_evidence_lacks_is_the_most_specific_word() -> None:
    """A record of another person (元某某) lacks the asked person's name: as specific as can be,
    though jieba's counts of its pieces (葛, 某某) are middling."""
    from rag_app.analysis.specificity import WordSpecificity
    from rag_app.answer.question_features import specific_missing

    spec = WordSpecificity()
    analysis = ANALYZER("患者葛某某的职业是什么？")
    assert spec("葛某某") < 0.9
    assert specific_missing(analysis, "姓名：元某某 性别：男 职业：学生", spec) == 1.0
    assert specific_missing(analysis, "姓名：葛某某 性别：男 职业：学生", spec) < 1.0


def test_a_unit_is_read_under_its_heading() -> None:
    """The title names the subject of a sentence that refers to it by a pronoun: the titled
    features credit it, the unit's own features do not."""
    node = evidence_node("乍都节公园位于曼谷。它的面积约为0.304平方公里。", "乍都节公园")
    analysis = ANALYZER("乍都节公园的面积有多大？")
    units = evidence_units([node])
    weights = dict.fromkeys(analysis.terms, 1.0)
    x = FeatureExtractor(ANALYZER.lexicon).matrix(analysis, weights, units, [node])
    assert [u.text for u in units][1] == "它的面积约为0.304平方公里。"
    assert col(x, "cov_titled")[1] > col(x, "cov_unit")[1]
    assert col(x, "cov_titled")[1] == pytest.approx(1.0)
    assert col(x, "bigram_titled")[1] > col(x, "bigram_unit")[1]
    # without a heading the titled features are the unit's own
    _, y = features("乍都节公园的面积有多大？", ["它的面积约为0.304平方公里。"])
    assert col(y, "cov_titled")[0] == pytest.approx(col(y, "cov_unit")[0])


def test_the_head_labels_a_value() -> None:
    texts, x = features(
        "患者的体温是多少？", ["体温：37.8℃。体温持续升高，伴有头痛。等待期为180日。"]
    )
    assert texts[0] == "体温：37.8℃。"
    assert col(x, "head_bound").tolist() == [1.0, 0.0, 0.0]
    _, y = features("等待期是多少天？", ["等待期为180日。"])
    assert col(y, "head_bound")[0] == 1.0


def test_a_units_own_words_leave_out_the_header_and_lead_in() -> None:
    """cov_own reads a row's cells without the column names every row shares, and an item
    without its lead-in: a row that meets the question only through its header has none."""
    table = "| 备份方式 | 频率 |\n|---|---|\n| 全量备份 | 每日 |\n| 快照 | 每周 |"
    texts, x = features("备份数据要不要加密？", [table, "全部备份数据须加密存储。"])
    assert texts[1].startswith("备份方式：快照")
    assert col(x, "cov_unit")[1] > 0 and col(x, "cov_own")[1] == 0.0  # 备份 only in the header
    assert col(x, "cov_own")[0] > 0  # 全量备份: the cell says it
    assert col(x, "cov_own")[2] == pytest.approx(col(x, "cov_unit")[2])  # a sentence: the same
    _, y = features(
        "退保手续有哪些？", ["办理退保需要提供下列材料：\n（一）保险合同；\n（二）身份证件。"]
    )
    assert col(y, "cov_own")[1] < col(y, "cov_unit")[1]  # the lead-in holds 退保


def test_a_row_met_only_through_its_header() -> None:
    """row_header_only: a row whose own cells meet no question word and no stated value."""
    table = "| 投保年龄 | 男性年交保费 |\n|---|---|\n| 30 | 710 |\n| 63 | 1633 |"
    texts, x = features("保费交不起了怎么办？", [table, "宽限期内未交保费的，合同继续有效。"])
    assert [t[:6] for t in texts] == ["投保年龄：3", "投保年龄：6", "宽限期内未交"]
    assert list(col(x, "row_header_only")) == [1.0, 1.0, 0.0]  # 保费 only in the column names
    _, y = features("63岁男性每年交多少保费？", [table])
    assert list(col(y, "row_header_only")) == [1.0, 0.0]  # the 63 row's cell holds the age
