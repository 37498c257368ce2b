"""The ragas adapter: samples from a run, offline scores by hand, LLM metrics against a stub."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from rag_app.config import Settings
from rag_app.eval import ragas_adapter as R
from rag_app.eval.runner import EvalRun, summarize_run

from .records import LOCK, chunk, record, sample_run
from .stub_llm import StubOpenAI, stub_openai


def test_tracking_is_off_once_the_adapter_uses_ragas():
    """Importing the adapter writes no environment; its first use of ragas turns tracking off."""
    env = {k: v for k, v in os.environ.items() if k != "RAGAS_DO_NOT_TRACK"}
    env["RAGAS_DO_NOT_TRACK"] = "false"  # even an explicit opt-in is overridden
    code = (
        "import os, rag_app.eval.ragas_adapter as R\n"
        "before = os.environ['RAGAS_DO_NOT_TRACK']\n"
        "R.offline_metrics()\n"
        "from ragas._analytics import do_not_track\n"
        "print(before, os.environ['RAGAS_DO_NOT_TRACK'], do_not_track())"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["false", "true", "True"]


def test_samples_carry_question_contexts_answer_reference_and_document_ids():
    run = sample_run()
    samples = R.to_samples(run)
    assert len(samples) == 4  # answerable questions only
    s1 = samples[0]
    assert s1.user_input == "账号锁定多久？"
    assert s1.retrieved_contexts == [c.text for c in run.records[0].retrieved]
    assert s1.response == "账号将被自动锁定30分钟[1]。"
    assert s1.reference == "30分钟"  # the first answer
    assert s1.reference_contexts == ["自动锁定30分钟"]
    assert s1.retrieved_context_ids == ["sec.md", "sec.md"]  # gold path for gold documents
    assert s1.reference_context_ids == ["sec.md"]
    s3 = samples[2]  # a table question: the gold row as cells, a non-gold doc by its path
    assert s3.reference_contexts == ["一类城市 | 600"]
    assert s3.retrieved_context_ids == ["/d/sec.md"]
    assert len(R.to_evaluation_dataset(run)) == 4


def test_reference_falls_back_to_groups_then_spans():
    both = record(id="x", question="?", category="c", answers=["公开", "内部"], answer_match="all")
    assert R.reference_answer(both) == "公开、内部"
    rec = record(id="x", question="?", category="c", gold_spans=["甲", "乙"])
    assert R.reference_answer(rec) == "甲；乙"
    rec.answer_groups = [["30分钟", "半小时"], ["5次"]]
    assert R.reference_answer(rec) == "30分钟；5次"


def test_partial_similarity_finds_a_span_inside_a_chunk():
    assert R.partial_similarity_value(LOCK, "自动锁定 30 分钟") == 1.0
    assert R.partial_similarity_value(LOCK, "完全无关的内容") < 0.5
    assert R.partial_similarity_value("", "x") == 0.0


@pytest.fixture(scope="module")
def offline_scores() -> R.RagasScores:
    return R.score_run(sample_run())


class TestOffline:
    def test_metric_names_and_no_llm(self, offline_scores):
        assert offline_scores.metrics == list(R.OFFLINE_METRICS)
        assert offline_scores.llm is False and offline_scores.errors == 0
        assert [row["id"] for row in offline_scores.per_question] == ["q1", "q2", "q3", "q4"]

    def test_id_based_precision_and_recall_by_hand(self, offline_scores):
        q1, q2, q3, q4 = offline_scores.per_question
        assert (q1["id_context_precision"], q1["id_context_recall"]) == (1.0, 1.0)
        assert (q3["id_context_precision"], q3["id_context_recall"]) == (0.0, 0.0)
        assert q4["id_context_precision"] == 1.0

    def test_context_metrics_follow_the_gold_spans(self, offline_scores):
        q1, q2, q3, q4 = offline_scores.per_question
        # q1: the span is in the 2nd of 2 chunks → recall 1, average precision 1/2
        assert q1["nonllm_context_recall"] == 1.0
        assert q1["nonllm_context_precision"] == pytest.approx(0.5, abs=1e-4)
        assert q3["nonllm_context_recall"] == 0.0
        assert q4["nonllm_context_recall"] is None  # no gold spans: undefined, not zero

    def test_answer_similarity(self, offline_scores):
        q1, q2, *_ = offline_scores.per_question
        assert 0 < q1["chrf"] < 1 and 0 < q1["string_similarity"] < 1
        assert q2["chrf"] == 0.0  # a refusal shares nothing with "90天"

    def test_means_overall_and_per_category(self, offline_scores):
        rows = offline_scores.per_question
        values = [r["id_context_recall"] for r in rows]
        assert offline_scores.overall["id_context_recall"] == pytest.approx(
            sum(values) / 4, abs=1e-4
        )
        assert offline_scores.categories["table"]["id_context_recall"] == pytest.approx(0.5)
        assert set(offline_scores.categories) == {"policy", "table"}

    def test_identical_answer_and_reference_score_one(self):
        rec = record(
            id="x",
            question="?",
            category="c",
            answers=["锁定30分钟"],
            gold_docs=["a.md"],
            gold_spans=["锁定30分钟"],
            retrieved=[chunk("锁定30分钟", "/a.md", True, "a.md")],
            answer="锁定30分钟",
        )
        scores = R.score_run(EvalRun(k=5, records=[rec], summary=summarize_run([rec], 5)))
        assert scores.overall == {name: 1.0 for name in R.OFFLINE_METRICS}


def test_llm_metrics_call_the_configured_endpoint():
    run = sample_run()
    with stub_openai() as url:
        settings = Settings(llm_base_url=url, llm_model="judge-model", llm_api_key="sk-judge")
        scores = R.score_run(run, settings=settings)
    assert scores.llm is True and scores.errors == 0
    assert scores.metrics == [*R.OFFLINE_METRICS, *R.LLM_METRICS]
    q1, q2, q3, q4 = scores.per_question
    # the stub's fixed verdicts: 1 of 2 statements supported, every context useful, 3 of 4 attributed
    assert q1["faithfulness"] == 0.5 and q1["llm_context_precision"] == 1.0
    assert q1["llm_context_recall"] == 0.75
    assert q2["faithfulness"] is None  # a refusal makes no claims
    assert scores.overall["llm_context_recall"] == 0.75
    requests = StubOpenAI.requests
    assert requests and all(r["path"].endswith("/chat/completions") for r in requests)
    assert {r["body"]["model"] for r in requests} == {"judge-model"}
    assert {r["auth"] for r in requests} == {"Bearer sk-judge"}
    assert {r["title"] for r in requests} == {
        "StatementGeneratorOutput",
        "NLIStatementOutput",
        "ContextPrecisionOutput",
        "ContextRecallOutput",
    }


def test_without_an_endpoint_there_are_no_llm_metrics():
    with pytest.raises(ValueError, match="RAG_LLM_BASE_URL"):
        R.build_ragas_llm(Settings())
