"""How feedback becomes an evaluation case (rag_app/store/feedback.py) and how such a case is
judged (rag_app/eval/verdicts.py): the rules by hand, no knowledge base."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from rag_app.eval.dataset import QAItem
from rag_app.eval.runner import QuestionRecord, judge, summarize
from rag_app.store.feedback import (
    Expected,
    FeedbackRecord,
    FeedbackStore,
    asks_refusal,
    first_line,
    line_key,
    repeats,
)
from rag_app.store.ledger import Ledger

REJECTED = "库存：80（SKU：SKU-1024） [1]\nSKU：SKU-1024，名称：螺母，库存：80 [1]"


def record(rating: str = "down", comment: str = "", **kw: Any) -> FeedbackRecord:
    data: dict[str, Any] = {
        "feedback_id": 7,
        "tenant": "default",
        "key_id": "k",
        "rating": rating,
        "comment": comment,
        "question": "那SKU-1024呢？",
        "resolved_question": "SKU-1024的库存是多少？",
        "answer": REJECTED,
        "sources": [{"doc_id": "d", "chunk_id": "c", "filename": "库存.md"}],
    }
    return FeedbackRecord(**{**data, **kw})


def test_first_lines_compare_without_citations_and_spaces() -> None:
    assert first_line("\n  库存：80 [1]\n第二行") == "库存：80 [1]"
    assert line_key("库存： 80 [1][2] 件 [1, 2]") == "库存：80件"
    assert repeats("库存：80（SKU：SKU-1024）[2]\n别的", "库存：80（SKU：SKU-1024） [1]")
    assert repeats("答：库存：80（SKU：SKU-1024） [1]", "库存：80（SKU：SKU-1024）")  # held
    assert not repeats("库存：8（SKU：SKU-1024） [1]", "库存：80（SKU：SKU-1024）")
    assert not repeats("第二行才有\n库存：80（SKU：SKU-1024）", "库存：80（SKU：SKU-1024）")
    assert not repeats("anything", "")


@pytest.mark.parametrize(
    ("comment", "refuse"),
    [
        ("应该拒答", True),
        ("应拒答：知识库里没有这个", True),
        ("不应回答", True),
        ("This should be refused", True),
        ("should have refused", True),
        ("不应拒答，知识库里有", False),
        ("should not be refused", False),
        ("数字不对", False),
        ("", False),
    ],
)
def test_a_comment_asks_for_a_refusal(comment: str, refuse: bool) -> None:
    assert asks_refusal(comment) is refuse


def test_a_thumbs_down_expects_the_rejected_line_gone_and_never_its_sources_as_gold() -> None:
    case = record(comment="单位不对").as_question()
    assert case["not_answer"] == ["库存：80（SKU：SKU-1024） [1]"]
    assert case["answerable"] is True and case["answers"] == [] and "gold_docs" not in case
    assert case["comment"] == "单位不对" and case["previous_answer"] == REJECTED
    assert case["category"] == "feedback_down" and case["question"] == "SKU-1024的库存是多少？"
    item = QAItem.model_validate(case)
    assert item.not_answer == case["not_answer"] and item.comment == "单位不对"


def test_a_thumbs_down_carries_the_reviewers_answer_or_refusal() -> None:
    refused = record(comment="应该拒答").as_question()
    assert refused["refuse"] is True and refused["answerable"] is False
    explicit = record(expected=Expected(refuse=True)).as_question()
    assert explicit["refuse"] is True and QAItem.model_validate(explicit).answerable is False
    right = record(expected=Expected(answer="80件")).as_question()
    assert right["answers"] == ["80件"] and right["not_answer"] == [first_line(REJECTED)]
    # an expected answer that holds the rejected line decides alone (it could never pass else)
    holding = record(expected=Expected(answer="库存：80（SKU：SKU-1024），单位：件")).as_question()
    assert holding["not_answer"] == [] and holding["answers"]
    # the explicit answer wins over a comment asking for a refusal
    both = record(comment="应该拒答", expected=Expected(answer="80件")).as_question()
    assert "refuse" not in both and both["answers"] == ["80件"]


def test_a_thumbs_up_is_a_regression_case() -> None:
    case = record(rating="up").as_question()
    assert case["answers"] == ["库存：80（SKU：SKU-1024）"] and case["answer_match"] == "all"
    assert case["gold_docs"] == ["库存.md"] and "not_answer" not in case


def judged(case: dict[str, Any], answer: str, refused: bool = False) -> QuestionRecord:
    rec = QuestionRecord.model_validate(QAItem.model_validate(case).model_dump())
    rec.answer, rec.refused = answer, refused
    return judge(rec)


def test_feedback_cases_pass_and_fail_as_defined() -> None:
    down = record().as_question()
    back = judged(down, "库存：80（SKU：SKU-1024）[1]\n…")
    assert (back.passed, back.rejected_back, back.fail_reason) == (
        False,
        True,
        "rejected answer came back",
    )
    other = judged(down, "库存：80件（SKU：SKU-1024） [1]")
    assert other.passed is True and other.rejected_back is False
    assert judged(down, "当前知识库中未找到足够依据。", refused=True).passed is True

    refuse = record(comment="应该拒答").as_question()
    assert judged(refuse, REJECTED).fail_reason == "rejected answer came back"
    assert judged(refuse, "库存：70 [1]").fail_reason == "answered (expected a refusal)"
    assert judged(refuse, "当前知识库中未找到足够依据。", refused=True).passed is True

    right = record(expected=Expected(answer="80件")).as_question()
    assert judged(right, "库存：70件 [1]").fail_reason == "lacks the expected answer"
    assert judged(right, "没有", refused=True).fail_reason == "refused"
    assert judged(right, "库存：80件 [1]").passed is True

    up = record(rating="up").as_question()
    assert judged(up, REJECTED).passed is True
    assert judged(up, "库存：70（SKU：SKU-1024） [1]").fail_reason == "lacks the expected answer"


def test_the_summary_counts_rejected_answers_that_came_back() -> None:
    down = record().as_question()
    records = [judged(down, REJECTED), judged(down, "别的 [1]"), judged(down, "别的 [1]")]
    plain = judged({"id": "x", "question": "q", "answers": ["a"]}, "a")
    summary = summarize([*records, plain], k=5)
    assert summary["rejected_back_rate"] == round(1 / 3, 4)
    assert summary["case_pass_rate"] == 0.75
    assert plain.rejected_back is None


def test_old_feedback_rows_stay_readable_and_expectations_round_trip(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    ledger = Ledger(url)
    with ledger.engine.begin() as conn:  # a ledger from before the column
        conn.execute(text("ALTER TABLE feedback DROP COLUMN expected"))
        conn.execute(
            text(
                "INSERT INTO feedback (tenant, key_id, rating, comment, question, "
                "resolved_question, answer, sources, settings, created_at) VALUES ('t', 'k', "
                "'down', '', 'q', 'q', 'a', '[]', '{}', 1.0)"
            )
        )
    ledger.close()
    ledger = Ledger(url)  # the column comes back; the old row reads with no expectation
    store = FeedbackStore(ledger.engine)
    (old,) = store.list("t")
    assert old.expected is None
    assert store.set_expected("t", old.feedback_id, Expected(answer="十天"))
    assert not store.set_expected("other", old.feedback_id, Expected(refuse=True))
    again = store.get(None, old.feedback_id)
    assert again is not None and again.expected == Expected(answer="十天")
    new_id = store.add(record(tenant="t", expected=Expected(refuse=True)))
    assert store.get("t", new_id).expected == Expected(refuse=True)  # type: ignore[union-attr]
    assert store.set_expected(None, new_id, None) and store.get("t", new_id).expected is None  # type: ignore[union-attr]
    ledger.close()
