"""The answer step through kb.ask: decisions, refusals with reasons and closest sources, threads."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from rag_app.retrieval.scope import Request
from rag_app.types import REFUSAL

ANSWERABLE = {
    "密码要多长时间换一次？": "90天",  # worded unlike the rule ("每90天至少更换一次")
    "重疾险的等待期是多少天？": "90日",
    "出差到一类城市，住宿费每晚最多能报销多少元？": "600",
}
UNANSWERABLE = [
    "公司食堂几点开饭？",
    "2022年卡塔尔世界杯的冠军是哪支球队？",
    "星河知识库服务的 Docker 镜像名称是什么？",
]


def test_answerable_questions_lead_with_the_answer(sample_kb) -> None:  # type: ignore[no-untyped-def]
    for question, expected in ANSWERABLE.items():
        answer = sample_kb.ask(question)
        assert not answer.refused, (question, answer.reason, answer.explanation)
        assert expected in answer.answer.splitlines()[0], (question, answer.answer)
        assert answer.citations and answer.citations[0].source >= 1
        first = answer.citations[0]
        span = answer.sources[first.source - 1].text[first.start : first.end]
        if first.kind == "row":  # the row's first value, in its Markdown line
            assert span.startswith("|") and first.text.split("：")[1].split("，")[0] in span
        else:
            assert first.text in span
        assert 0 < answer.confidence <= 1


def test_refusals_say_why_and_return_the_closest_sources(sample_kb) -> None:  # type: ignore[no-untyped-def]
    for question in UNANSWERABLE:
        answer = sample_kb.ask(question)
        assert answer.refused and answer.answer == REFUSAL, (question, answer.answer)
        assert answer.reason and answer.explanation and len(answer.explanation) > 6
        assert answer.reason in ("entity_missing", "term_missing") and "“" in answer.explanation
        assert answer.sources and len(answer.sources) <= 3  # the closest sources
        assert not answer.citations


def test_a_refusal_shows_the_closest_unit_and_an_answer_none(sample_kb) -> None:  # type: ignore[no-untyped-def]
    """Under a refusal, the evidence's best unit: the closest the knowledge base has, cited in
    the closest sources (its node comes first), with its span in that source's text; none when
    the question names something no passage mentions."""
    for question in UNANSWERABLE:
        answer = sample_kb.ask(question)
        assert answer.refused, question
        if answer.reason == "entity_missing":
            assert answer.closest == [], (question, answer.closest)
            continue
        assert len(answer.closest) == 1, (question, answer.reason, answer.closest)
        unit = answer.closest[0]
        assert unit.source == 1 and unit.text and unit.text not in answer.answer
        span = answer.sources[0].text[unit.start : unit.end]
        assert span.startswith("|") if unit.kind == "row" else unit.text in span, (unit, span)
    answered = sample_kb.ask(next(iter(ANSWERABLE)))
    assert not answered.refused and answered.closest == []


def test_a_how_question_is_refused_off_topic_and_answered_on_topic(sample_kb) -> None:  # type: ignore[no-untyped-def]
    """A question that names no head and no entity ("怎样才能…") is decided by how well the
    evidence supports it: nothing in IT, travel and insurance policies speaks to succulents."""
    off = sample_kb.ask("怎样才能让多肉植物长得更胖？")
    assert off.refused and off.sources and not off.citations
    for question in ("出差回来怎么报销？", "电脑中了病毒怎么办？", "忘记密码了怎么办？"):
        answer = sample_kb.ask(question)
        assert not answer.refused, (question, answer.reason, answer.explanation)


def test_out_of_scope_gold_document_makes_a_near_miss(sample_kb) -> None:  # type: ignore[no-untyped-def]
    question = "出差到一类城市，住宿费每晚最多能报销多少元？"
    gold = [d.doc_id for d in sample_kb.documents.list() if "差旅" in d.source]
    others = [d.doc_id for d in sample_kb.documents.list() if d.doc_id not in gold]
    assert not sample_kb.ask(question).refused
    assert sample_kb.ask(question, doc_ids=others).refused


def test_the_same_decision_from_several_threads(sample_kb) -> None:  # type: ignore[no-untyped-def]
    questions = [*ANSWERABLE, *UNANSWERABLE] * 3
    alone = {q: sample_kb.ask(q) for q in dict.fromkeys(questions)}
    with ThreadPoolExecutor(max_workers=4) as pool:
        together = list(pool.map(sample_kb.ask, questions))
    for q, a in zip(questions, together, strict=True):
        assert (a.refused, a.answer, a.confidence) == (
            alone[q].refused,
            alone[q].answer,
            alone[q].confidence,
        )


def test_gate_off_answers_everything(sample_kb, embed_model, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from rag_app import KnowledgeBase

    kb = KnowledgeBase.open(sample_kb.path, embed_model=embed_model, gate="off", read_only=True)
    try:
        assert not kb.ask("公司食堂几点开饭？").refused
    finally:
        kb.close()


MONTHLY = """# 云溪花园月度成交

| 月份 | 项目名称 | 成交套数 | 成交均价（元/平方米） |
|---|---|---|---|
| 2021年07月 | 云溪花园 | 35 | 21350 |
| 2021年08月 | 云溪花园 | 42 | 21800 |
| 2021年09月 | 云溪花园 | 28 | 21100 |
"""


def test_a_table_of_other_months_is_a_near_miss(kb, embed_model, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The month asked is in the table: answered. Rows of other months only (a near miss) score
    far lower, and a refusal names the month found and the month asked."""
    from rag_app import KnowledgeBase

    doc = tmp_path / "monthly.md"
    doc.write_text(MONTHLY, encoding="utf-8")
    kb.ingest([doc])
    found = kb.ask("2021年8月云溪花园成交了多少套？")
    assert not found.refused, (found.reason, found.explanation)
    assert "42" in found.answer.splitlines()[0]
    missing = kb.ask("2021年12月云溪花园成交了多少套？")
    assert missing.confidence < found.confidence / 2, (missing.confidence, found.confidence)
    threshold = (missing.confidence + found.confidence) / 2
    strict = KnowledgeBase.open(
        kb.path, embed_model=embed_model, gate_threshold=threshold, read_only=True
    )
    try:
        assert not strict.ask("2021年8月云溪花园成交了多少套？").refused
        refused = strict.ask("2021年12月云溪花园成交了多少套？")
    finally:
        strict.close()
    assert refused.refused and refused.reason == "constraint_missing", refused.explanation
    assert "2021年12月" in (refused.explanation or "") and "2021年0" in (refused.explanation or "")
    assert refused.sources and not refused.citations


def test_a_refusal_names_the_rival_value_read_like_the_feature(kb, embed_model, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The reason reads the value found the way the gate does (天 and 日 alike): asked about 20天,
    the passage's 15日 is the value named."""
    from rag_app import KnowledgeBase

    doc = tmp_path / "policy.md"
    doc.write_text(
        "# 保险条款\n\n## 犹豫期\n\n投保人收到保险合同后，犹豫期为15日。\n", encoding="utf-8"
    )
    kb.ingest([doc])
    strict = KnowledgeBase.open(
        kb.path, embed_model=embed_model, gate_threshold=0.999, read_only=True
    )
    try:
        refused = strict.ask("犹豫期是20天吗？")
    finally:
        strict.close()
    assert refused.refused and refused.reason == "constraint_missing", refused.explanation
    assert refused.explanation == "只找到了“15日”的资料，没有“20天”的。", refused.explanation


def test_a_refusal_never_names_a_date_the_evidence_writes_otherwise(
    kb, embed_model, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    """The question's 2021年3月 is indexed as 2021年03月 too; a refusal must not say that the
    evidence lacks it when the evidence says 2021年3月."""
    from rag_app import KnowledgeBase

    doc = tmp_path / "sales.md"
    doc.write_text(
        "# 华东区销售月报\n\n## 2021年3月\n\n2021年3月华东区销售额为1200万元，同比增长15%。\n",
        encoding="utf-8",
    )
    kb.ingest([doc])
    strict = KnowledgeBase.open(
        kb.path, embed_model=embed_model, gate_threshold=0.999, read_only=True
    )
    try:
        refused = [strict.ask(q) for q in ("2021年3月华东区销售额同比增长了多少？",
                                          "华东区2021年3月的销售额是多少")]  # fmt: skip
    finally:
        strict.close()
    for answer in refused:
        assert answer.refused and answer.explanation
        assert "2021年03月" not in answer.explanation, answer.explanation


def test_features_the_model_does_not_weigh_change_no_decision(sample_kb) -> None:  # type: ignore[no-untyped-def]
    """The bundled model gives the embedding features no weight, so the locator leaves them
    uncomputed; computing them anyway changes no decision, probability or unit order."""
    from rag_app.answer.passage_scorer import cosine_embedder

    locator = sample_kb.query.engine.gate._locator
    if locator.model.reads_embeddings():
        pytest.skip("the bundled model weighs the embedding features: they are computed")
    assert locator.extractor.embed is None
    questions = [*ANSWERABLE, *UNANSWERABLE, "出差回来怎么报销？", "怎样才能让多肉植物长得更胖？"]
    evidence = {q: sample_kb.query.engine.evidence(Request(q)) for q in questions}
    without = {q: locator.locate(q, n) for q, n in evidence.items()}
    locator.extractor.embed = cosine_embedder(sample_kb.embed_model)
    try:
        embedded = {q: locator.locate(q, n) for q, n in evidence.items()}
    finally:
        locator.extractor.embed = None
    for q in questions:
        a, b = without[q], embedded[q]
        assert (a.refused, a.best) == (b.refused, b.best), q
        assert [(u.unit.text, u.probability) for u in a.units] == [
            (u.unit.text, u.probability) for u in b.units
        ], q


def test_a_compound_question_answers_each_of_its_questions(sample_kb) -> None:  # type: ignore[no-untyped-def]
    """Asked as one, read as two: the whole question's best unit answered only the second
    question; the first one's answer (90 days) is given too."""
    answer = sample_kb.ask("重疾险的等待期是多少天？轻症能赔多少？")
    assert not answer.refused, answer.reason
    assert "90日" in answer.answer and "30%" in answer.answer, answer.answer
    assert len(answer.citations) >= 2


RATES = """# 费率表

| 投保年龄 | 男性年缴保费（元） | 女性年缴保费（元） |
|---|---|---|
| 30 | 710 | 615 |
| 45 | 1200 | 1010 |

## 利息

借贷双方约定的利率超过合同成立时一年期贷款市场报价利率四倍的，超过部分的利息不予支持。

## 罚息

逾期还款的，罚息按合同利率的两倍计收。
"""


def _asked_with_the_gate_off(kb, embed_model, tmp_path, text: str, questions: list[str]):  # type: ignore[no-untyped-def]
    """``questions`` asked of ``kb`` with one document of ``text`` ingested, the gate off."""
    from rag_app import KnowledgeBase

    doc = tmp_path / "doc.md"
    doc.write_text(text, encoding="utf-8")
    kb.ingest([doc])
    lenient = KnowledgeBase.open(
        kb.path, embed_model=embed_model, gate_threshold=0.0, read_only=True
    )
    try:
        return [lenient.ask(q) for q in questions]
    finally:
        lenient.close()


def test_an_answer_names_the_stated_values_its_evidence_lacks(kb, embed_model, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Asked about an age the table does not reach, the gate may still answer with the closest
    row; the answer's first line then says that the knowledge base has no 65 (a qualified
    answer). An age the table holds, and a number the evidence writes in Chinese numerals (四倍
    for 4倍, 两倍 for 2倍), get no such caveat."""
    far, near, words, two = _asked_with_the_gate_off(
        kb, embed_model, tmp_path, RATES,
        ["65岁男性每年交多少保费？", "45岁男性每年交多少保费？",
         "约定的利率是报价利率的4倍，超出部分的利息还受保护吗？",
         "逾期还款的罚息是合同利率的2倍吗？"],  # 两倍, not 二倍
    )  # fmt: skip
    assert not far.refused and far.outcome == "qualified", far.answer
    assert far.answer.startswith("知识库中没有“65岁”的记录；最接近的是："), far.answer
    assert far.absent_values == ["65岁"] and near.absent_values == []
    assert "1200" in near.answer.splitlines()[0] and "没有“" not in near.answer, near.answer
    assert not words.refused and "没有“" not in words.answer, words.answer
    assert not two.refused and two.absent_values == [], two.answer


BACKUPS = """# 备份规范

| 系统 | 频率 | 保留期限 |
| --- | --- | --- |
| ERP系统 | 每日全量 | 90天 |
| OA系统 | 每周全量 | 30天 |
"""


def test_an_answer_names_the_names_its_evidence_lacks(kb, embed_model, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Asked about a system the backup table does not list, an answer (here with the gate off)
    is the closest row, and its first line says that the knowledge base has no SAP; the listed
    one gets no such caveat."""
    other, listed = _asked_with_the_gate_off(
        kb, embed_model, tmp_path, BACKUPS, ["SAP系统的备份保留多久？", "ERP系统的备份保留多久？"]
    )
    assert not other.refused and other.absent_names == ["SAP"], other.absent_names
    assert other.answer.startswith("知识库中没有“SAP”的记录；最接近的是："), other.answer
    assert other.outcome == "qualified"
    assert listed.absent_names == [] and "没有“" not in listed.answer, listed.answer
    assert "90天" in listed.answer.splitlines()[0], listed.answer


@pytest.mark.parametrize(
    ("value", "written"),
    [("4倍", ["四倍"]), ("10年", ["十年"]), ("15日", ["十五日"]), ("20天", ["二十天"]),
     ("99", ["九十九"]), ("2倍", ["二倍", "两倍"]), ("12年", ["十二年"]), ("2021年", ["2021年"]),
     ("100元", ["100元"])],
)  # fmt: skip
def test_a_stated_number_in_chinese_numerals(value: str, written: list[str]) -> None:
    from rag_app.text.numerals import in_words

    assert in_words(value) == written


def test_a_borderline_answer_says_the_kb_may_not_hold_it_first(sample_kb, embed_model) -> None:  # type: ignore[no-untyped-def]
    """An answer the gate lets through below RAG_QUALIFY_CONFIDENCE leads with a caveat, then the
    same closest line; at 0 nothing is qualified for being borderline. A question about a
    figure the sample KB does not have (its one 第四季度 is a disaster-recovery drill) is not
    answered plainly at the default."""
    from rag_app import KnowledgeBase

    question = "密码多久需要修改一次？"
    caveat = "知识库中可能没有确切的答案；最接近的是："
    opened = [KnowledgeBase.open(sample_kb.path, embed_model=embed_model, read_only=True,
                                 qualify_confidence=q) for q in (1.0, 0.0)]  # fmt: skip
    try:
        strict, never = (kb.ask(question) for kb in opened)
    finally:
        for kb in opened:
            kb.close()
    assert strict.outcome == "qualified" and strict.caveat == caveat, strict.answer
    assert never.outcome == "answered" and never.caveat is None, never.answer
    assert strict.answer.splitlines()[0] == caveat + never.answer.splitlines()[0]
    revenue = sample_kb.ask("第四季度营业收入是多少？")
    assert revenue.outcome in ("refused", "qualified"), revenue.answer
