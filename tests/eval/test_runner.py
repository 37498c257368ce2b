"""Per-question verdicts and summaries by hand, then `run_eval` on a real tiny knowledge base."""

from __future__ import annotations

import json

import pytest

from rag_app.eval.dataset import QAItem, load_qa
from rag_app.eval.runner import EvalRun, judge, run_eval, summarize_run

from .records import LOCK, record, sample_records, sample_run


class TestVerdicts:
    def test_each_record_gets_the_hand_computed_verdicts(self):
        q1, q2, q3, q4, q5 = sample_records()
        assert (q1.rank, q1.keyword_hit, q1.source_hit, q1.passed) == (2, True, True, True)
        assert (q1.evidence_hit, q2.evidence_hit, q3.evidence_hit, q4.evidence_hit) == (
            True,
            False,
            False,
            None,
        )
        assert (q2.rank, q2.keyword_hit, q2.source_hit, q2.passed) == (1, False, False, False)
        assert (q3.rank, q3.doc_hit, q3.keyword_hit, q3.passed) == (0, False, False, False)
        # reference answers are judged by the cited source, not by containment
        assert (q4.rank, q4.keyword_hit, q4.source_hit, q4.passed) == (None, None, True, True)
        assert (q5.rank, q5.source_hit, q5.keyword_hit, q5.passed) == (None, None, None, True)
        assert q1.context_chars == len("第一条 为加强信息安全管理，制定本制度。") + len(LOCK)

    def test_answering_an_unanswerable_question_fails(self):
        rec = record(id="x", question="?", category="c", answerable=False, answer="乱答一通")
        assert rec.passed is False

    def test_a_keyword_in_a_refusal_does_not_count(self):
        rec = record(
            id="x",
            question="?",
            category="c",
            answers=["依据"],  # the refusal text contains 依据
            answer="当前知识库中未找到足够依据。",
            refused=True,
        )
        assert rec.keyword_hit is False and rec.passed is False

    def test_a_refusal_whose_closest_unit_holds_the_answer_is_told_apart(self):
        """Still a false refusal (it fails), but one whose closest unit, shown under it, holds
        the expected answer: what a user can read off a refusal."""
        kw = dict(question="?", category="c", answers=["80%"], refused=True)
        near = record(
            id="a", answer="当前知识库中未找到足够依据。", closest="借款不得超过80%", **kw
        )
        far = record(id="b", answer="当前知识库中未找到足够依据。", closest="每周三支付", **kw)
        answered = record(id="c", question="?", category="c", answers=["80%"], answer="80% [1]")
        assert (near.passed, near.closest_hit, far.closest_hit) == (False, True, False)
        assert answered.closest_hit is None
        s = summarize_run([near, far, answered], k=5)["overall"]
        assert s["closest_hit_rate"] == pytest.approx(1 / 2)  # of the two false refusals

    def test_answer_groups_decide_the_keyword_hit(self):
        rec = record(
            id="x",
            question="?",
            category="c",
            answers=["30分钟"],
            answer_groups=[["30分钟", "半小时"], ["5次", "五次"]],
            answer="连续五次输错后锁定半小时。",
        )
        assert rec.keyword_hit is True and rec.passed is True

    def test_an_error_fails_the_question(self):
        rec = record(id="x", question="?", category="c", answers=["a"], error="RuntimeError: x")
        assert rec.passed is False

    def test_retrieve_only_leaves_answer_verdicts_undefined(self):
        rec = judge(sample_records()[0].model_copy(), ask=False)
        assert rec.rank == 2 and rec.passed is None and rec.keyword_hit is None


class TestSummary:
    def test_overall_numbers_by_hand(self):
        s = summarize_run(sample_records(), k=5)["overall"]
        assert (s["n"], s["n_answerable"], s["n_unanswerable"], s["n_with_evidence"]) == (
            5,
            4,
            1,
            3,
        )
        assert s["case_pass_rate"] == pytest.approx(3 / 5)
        assert s["recall_at_k"] == pytest.approx(round(2 / 3, 4))  # ranks 2, 1, 0
        assert s["mrr_at_k"] == pytest.approx(round((1 / 2 + 1) / 3, 4))
        assert s["doc_recall_at_k"] == pytest.approx(3 / 4)
        assert s["source_hit_rate"] == pytest.approx(2 / 4)
        assert s["evidence_hit_rate"] == round(1 / 3, 4)  # q1 cites the span; q2, q3 don't
        assert s["keyword_hit_rate"] == round(1 / 3, 4)  # q1 yes, q2 refused, q3 wrong
        assert s["no_answer_accuracy"] == 1.0
        assert s["false_refusal_rate"] == pytest.approx(1 / 4)
        assert s["retrieve_ms_avg"] == 50.0 and s["retrieve_ms_p50"] == 50.0
        assert s["retrieve_ms_p95"] == 90.0 and s["ask_ms_p50"] == 60.0

    def test_categories_are_summarised_separately(self):
        cats = summarize_run(sample_records(), k=5)["categories"]
        assert list(cats) == ["policy", "table", "unanswerable"]
        assert cats["policy"]["case_pass_rate"] == 0.5
        assert cats["policy"]["recall_at_k"] == 1.0
        assert cats["table"]["recall_at_k"] == 0.0 and cats["table"]["case_pass_rate"] == 0.5
        assert cats["unanswerable"]["recall_at_k"] is None
        assert cats["unanswerable"]["no_answer_accuracy"] == 1.0
        assert cats["unanswerable"]["false_refusal_rate"] is None

    def test_json_round_trip_and_compact_form(self, tmp_path):
        run = sample_run()
        again = EvalRun.load(run.save(tmp_path / "run.json"))
        assert again == run
        compact = json.loads(run.to_json(texts=False))
        assert all(c["text"] == "" for r in compact["records"] for c in r["retrieved"])
        assert compact["summary"] == run.summary


def test_run_eval_on_a_tiny_kb(kb, corpus):
    docs, qa = corpus
    report = kb.ingest([docs])
    assert report.failed == 0
    items = load_qa(qa)
    seen: list[tuple[str, int, int]] = []
    run = run_eval(kb, items, k=5, progress=lambda r, d, t: seen.append((r.id, d, t)))

    assert seen == [(q.id, i, 5) for i, q in enumerate(items, start=1)]
    assert [r.id for r in run.records] == [q.id for q in items]
    by_id = {r.id: r for r in run.records}
    # a tiny KB fits in the top 5: every gold span / gold row (with its header) is retrieved
    for qid in ("t-1", "t-2", "t-3"):
        assert by_id[qid].rank and by_id[qid].rank >= 1, qid
        assert by_id[qid].doc_hit is True
    table_chunk = next(c for c in by_id["t-3"].retrieved if c.hit)
    assert "城市类别" in table_chunk.text and table_chunk.gold_doc == "travel.md"
    for rec in run.records:
        assert rec.retrieved and all(c.chunk_id and c.text for c in rec.retrieved)
        assert rec.retrieve_ms > 0 and rec.ask_ms is not None and rec.ask_ms > 0
        assert rec.answer and rec.error is None and rec.passed is not None
    assert run.summary["overall"]["recall_at_k"] == 1.0
    # the summary is exactly what the records say
    assert run.summary == summarize_run(run.records, 5)
    assert run.settings["chunker"] == "structure" and run.settings["llm"] is False


def test_run_eval_rejects_a_bad_k(kb):
    with pytest.raises(ValueError, match="k must be positive"):
        run_eval(kb, [QAItem(id="a", question="?")], k=0)
