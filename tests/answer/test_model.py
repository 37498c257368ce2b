"""The fitted answer model: loads, validates, scores and decides."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from rag_app.analysis import QuestionAnalyzer
from rag_app.answer.features import FEATURES
from rag_app.answer.model import DEFAULT_MODEL, AnswerModel
from rag_app.answer.question_features import QUESTION_FEATURES, SUPPORT_LOGIT_FLOOR, question_vector


def test_the_bundled_model_loads_with_ordered_presets() -> None:
    model = AnswerModel.load()
    t = model.thresholds
    assert 0 < t["lenient"] <= t["balanced"] <= t["strict"] < 1
    assert model.threshold("off") == 0.0
    assert model.fitted_on.get("command")  # says how it was made
    with pytest.raises(ValueError, match="preset"):
        model.threshold("sloppy")


def _at_mean(names: list[str], mean: list[float], columns: tuple[str, ...]) -> np.ndarray:
    x = np.zeros((1, len(columns)))
    for name, m in zip(names, mean, strict=True):
        x[0, columns.index(name)] = m
    return x


def test_unit_probabilities_follow_the_coefficients() -> None:
    model = AnswerModel.load()
    x = np.repeat(_at_mean(model.unit.features, model.unit.mean, FEATURES), 2, axis=0)
    name = next(f for f, c in zip(model.unit.features, model.unit.coef, strict=True) if c)
    x[1, FEATURES.index(name)] += 0.5
    p = model.unit_probabilities(x)
    assert p.shape == (2,) and np.all((p > 0) & (p < 1))
    sign = np.sign(model.unit.coef[model.unit.features.index(name)])
    assert np.sign(p[1] - p[0]) == sign
    assert model.unit_probabilities(np.zeros((0, len(FEATURES)))).shape == (0,)


def test_rows_met_only_through_their_header_share_their_probability() -> None:
    """n rows the question meets only through their table's title and column names are one
    candidate among them, not n: each gets 1/n, so a sentence that answers can lead."""
    model = AnswerModel.load()
    x = np.repeat(_at_mean(model.unit.features, model.unit.mean, FEATURES), 5, axis=0)
    x[:, FEATURES.index("row_header_only")] = [1, 1, 1, 0, 0]
    plain = model.unit.probabilities(x, FEATURES)
    p = model.unit_probabilities(x)
    assert np.allclose(p[:3], plain[:3] / 3)
    assert np.allclose(p[3:], plain[3:])  # a row its own cells pick, and a sentence, keep theirs
    x[1:3, FEATURES.index("row_header_only")] = 0  # one such row alone is no crowd
    assert np.allclose(model.unit_probabilities(x), plain)


def test_the_gate_is_monotone_in_the_evidence() -> None:
    """More of what answers (the best unit's score, the entities and head in one passage) never
    lowers the gate's probability; a missing asked term never raises it."""
    model = AnswerModel.load()
    rng = np.random.default_rng(0)
    q = rng.uniform(0, 1, size=(50, len(QUESTION_FEATURES)))
    base = np.array([model.answerable(row) for row in q])
    assert np.all((base > 0) & (base < 1))
    for name, step in (
        ("p_best_logit", 0.3),
        ("head_with_entity", 0.5),
        ("phrase_term_missing", -0.5),
        ("specific_missing", -0.5),
    ):
        moved = q.copy()
        moved[:, QUESTION_FEATURES.index(name)] += step
        after = np.array([model.answerable(row) for row in moved])
        assert np.all(after >= base - 1e-12), name


def test_a_model_file_that_does_not_fit_the_code_is_refused(tmp_path: Path) -> None:
    data = json.loads(DEFAULT_MODEL.read_text(encoding="utf-8"))
    data["unit"]["features"] = [*data["unit"]["features"][:-1], "no_such_feature"]
    path = tmp_path / "model.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ValueError, match="no_such_feature"):
        AnswerModel.load(path)
    data = json.loads(DEFAULT_MODEL.read_text(encoding="utf-8"))
    data["unit"]["coef"] = data["unit"]["coef"][:3]
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ValueError, match="differ in length"):
        AnswerModel.load(path)
    data = json.loads(DEFAULT_MODEL.read_text(encoding="utf-8"))
    del data["thresholds"]["strict"]
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ValueError, match="presets"):
        AnswerModel.load(path)


def test_the_gate_reads_the_support_model_over_the_units_own_words(tmp_path: Path) -> None:
    """The unit model ranks units read under their headings; the gate's support model must not
    credit a heading's words to the unit. A model file without a support model (an older one)
    still loads, and then the gate reads the unit model."""
    model = AnswerModel.load()
    assert model.support is not None
    assert not [f for f in model.support.features if f.endswith("_titled")]
    assert [f for f in model.unit.features if f.endswith("_titled")]
    x = np.repeat(_at_mean(model.unit.features, model.unit.mean, FEATURES), 2, axis=0)
    x[1, FEATURES.index("cov_titled")] += 0.5  # only the heading's words differ
    s = model.support_probabilities(x)
    assert s[0] == pytest.approx(s[1])
    data = json.loads(DEFAULT_MODEL.read_text(encoding="utf-8"))
    del data["support"]
    path = tmp_path / "older.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    older = AnswerModel.load(path)
    assert older.support is None
    assert np.allclose(older.support_probabilities(x), older.unit_probabilities(x))


def test_support_shortfall_counts_only_weak_support() -> None:
    """Below the floor, weak support counts against the question (a hinge over the best support's
    log-odds); above it the shortfall is 0, whatever the question names."""
    analyzer = QuestionAnalyzer()
    x = np.zeros((2, len(FEATURES)))
    col = QUESTION_FEATURES.index("support_shortfall")

    def shortfall(question: str, p_best: float) -> float:
        probs = np.array([p_best, p_best / 2])
        vec = question_vector(analyzer(question), x, probs, ["甲", "乙"], lambda w: 0.5)
        return float(vec[col])

    weak = 1 / (1 + np.exp(-(SUPPORT_LOGIT_FLOOR - 1.0)))  # one log-odds unit below the floor
    assert shortfall("怎样才能睡得更好？", weak) == pytest.approx(-1.0)
    assert shortfall("年假有多少天？", weak) == pytest.approx(-1.0)
    assert shortfall("怎样才能睡得更好？", 0.6) == 0.0
    assert shortfall("年假有多少天？", 0.2) == 0.0


def test_subjects_present_needs_every_subject_of_a_several_subject_question() -> None:
    """A question asked of two people at once is marked only when the evidence names both; a
    question about one subject never is."""
    analyzer = QuestionAnalyzer()
    x = np.zeros((2, len(FEATURES)))
    col = QUESTION_FEATURES.index("subjects_present")
    probs = np.array([0.5, 0.2])

    def present(question: str, texts: list[str]) -> float:
        vec = question_vector(analyzer(question), x, probs, texts, lambda w: 0.5)
        return float(vec[col])

    both = "苏某某和廉某某的脉搏谁更快？"
    assert present(both, ["苏某某，脉搏：88次/分", "廉某某，脉搏：76次/分"]) == 1.0
    assert present(both, ["苏某某，脉搏：88次/分", "元某某，脉搏：76次/分"]) == 0.0
    assert present("苏某某的脉搏是多少？", ["苏某某，脉搏：88次/分", "其他"]) == 0.0


def test_the_embedding_features_are_read_only_by_a_model_that_weighs_them() -> None:
    """A model with no weight on a feature of the embedding model (the fit may give them none)
    reads none: the locator then skips embedding the units. Any weight on one, in the unit or
    support model, makes the model read them."""
    data = json.loads(DEFAULT_MODEL.read_text(encoding="utf-8"))
    for part in ("unit", "support"):
        for f in ("dense", "dense_gap"):
            if f in data[part]["features"]:
                data[part]["coef"][data[part]["features"].index(f)] = 0.0
    assert not AnswerModel.model_validate(data).reads_embeddings()
    noise = json.loads(json.dumps(data))
    noise["unit"]["coef"][noise["unit"]["features"].index("dense")] = -2e-16  # solver noise
    assert not AnswerModel.model_validate(noise).reads_embeddings()
    weighed = json.loads(json.dumps(data))
    weighed["support"]["coef"][weighed["support"]["features"].index("dense")] = 0.2
    assert AnswerModel.model_validate(weighed).reads_embeddings()
    gate = {"kind": "linear", "features": ["p_best_logit", "dense_max"], "mean": [0.0, 0.0],
            "scale": [1.0, 1.0], "coef": [1.0, 0.5], "intercept": 0.0}  # fmt: skip
    with pytest.raises(ValueError, match="dense_max"):  # the gate reads no embedding
        AnswerModel.model_validate(data | {"gate": gate})


def test_a_date_or_article_written_otherwise_is_not_a_missing_word() -> None:
    """The question's canonical tokens (2021年03月, 第33条) are found in evidence that writes
    them otherwise (2021年3月, 2021-03-01, 第三十三条); another month is still missing."""
    analyzer = QuestionAnalyzer()
    x = np.zeros((1, len(FEATURES)))
    col = QUESTION_FEATURES.index("specific_missing")

    def missing(question: str, text: str) -> float:
        vec = question_vector(analyzer(question), x, np.array([0.5]), [text], lambda w: 0.9)
        return float(vec[col])

    asked = "2021年3月华东区的销售额是多少？"
    assert missing(asked, "2021年3月华东区销售额为1200万元") == 0.0
    assert missing(asked, "2021-03-01 华东区销售额为1200万元") == 0.0
    assert missing(asked, "2021年4月华东区销售额为980万元") > 0.0
    assert missing("第三十三条的罚款是多少？", "第33条 违反规定的，罚款500元") == 0.0
    assert missing("第33条的罚款是多少？", "第三十三条 违反规定的，罚款500元") == 0.0


def test_a_range_list_is_answered_by_values_in_the_range() -> None:
    """ "哪些X的Y位于A至B之间" asks for the rows whose value lies in the range: a unit holding
    such a value answers, whatever its column calls Y (the words before the range are not
    missing) and though it never names X; a value outside the range, or a date, does not."""
    analyzer = QuestionAnalyzer()
    x = np.zeros((1, len(FEATURES)))
    cols = [QUESTION_FEATURES.index(f) for f in ("phrase_term_missing", "specific_missing")]

    def gaps(question: str, text: str) -> list[float]:
        vec = question_vector(analyzer(question), x, np.array([0.5]), [text], lambda w: 0.9)
        return [float(vec[c]) for c in cols]

    asked = "东城区哪些楼盘的房价在30000至40000元之间？"
    assert gaps(asked, "项目：翠园，区域：东城区，成交均价：35200.5，时间：2021-03-01") == [
        0.0,
        0.0,
    ]
    outside = gaps(asked, "项目：翠园，区域：东城区，成交均价：25200.5，时间：2021-03-01")
    assert outside[0] > 0 and outside[1] > 0
    dated = gaps("哪些楼盘的开盘年份在2000至2030之间？", "项目：翠园，开盘日期：2021-03-01")
    assert dated[0] > 0


def test_a_compound_question_is_read_as_its_questions() -> None:
    """Each question of "A是多少？B有几次？" is read on its own, a later one with the words of
    the earlier ones (its subject is often left out) but not their question words."""
    from rag_app.analysis import QuestionAnalyzer
    from rag_app.analysis.compound import question_parts

    lexicon = QuestionAnalyzer().lexicon
    parts = question_parts("年假有多少天？试用期员工能休几天？", lexicon)
    assert parts[0] == "年假有多少天？"
    assert parts[1].startswith("年假有") and "多少" not in parts[1]
    assert parts[1].endswith("试用期员工能休几天？")
    assert (
        question_parts("我刚入职。年假有多少天？能休几天？", lexicon)[0]
        == "我刚入职。年假有多少天？"
    )
    assert question_parts("年假有多少天？", lexicon) == []
    assert question_parts("年假有多少天？请说明。", lexicon) == []  # one question asked


def test_the_analysis_stage_reads_each_question_of_a_compound_one() -> None:
    """QuestionAnalyzer.asked: the question's analysis and one per question it asks, the
    analyses the decision scores the parts with (no analysis left for the decision to do)."""
    from rag_app.analysis import QuestionAnalyzer
    from rag_app.analysis.compound import question_parts

    analyzer = QuestionAnalyzer()
    question = "年假有多少天？试用期员工能休几天？"
    asked = analyzer.asked(question)
    assert asked.analysis == analyzer(question)
    assert asked.parts == [analyzer(p) for p in question_parts(question, analyzer.lexicon)]
    assert [p.answer_type for p in asked.parts] == ["duration", "duration"]
    assert analyzer.asked("年假有多少天？").parts == []
