"""Hand-built question records (no knowledge base) with known verdicts."""

from __future__ import annotations

from typing import Any

from rag_app.eval.runner import ChunkRecord, EvalRun, QuestionRecord, judge, summarize_run
from rag_app.types import REFUSAL


def chunk(text: str, source: str, hit: bool = False, gold: str | None = None) -> ChunkRecord:
    return ChunkRecord(
        chunk_id=f"c-{abs(hash((text, source))) % 10**8}",
        doc_id=f"d-{source}",
        source=source,
        gold_doc=gold,
        text=text,
        score=0.5,
        hit=hit,
    )


def record(**kw: Any) -> QuestionRecord:
    rec = QuestionRecord(**kw)
    return judge(rec)


LOCK = "第十二条 连续5次输入错误密码的，账号将被自动锁定30分钟。"
OTHER = "第一条 为加强信息安全管理，制定本制度。"


def sample_records() -> list[QuestionRecord]:
    """Five questions, two categories; verdicts in the comments."""
    return [
        # passes: answered, keyword hit, gold chunk at rank 2
        record(
            id="q1",
            question="账号锁定多久？",
            category="policy",
            answerable=True,
            answers=["30分钟"],
            gold_docs=["sec.md"],
            gold_spans=["自动锁定30分钟"],
            retrieved=[
                chunk(OTHER, "/d/sec.md", gold="sec.md"),
                chunk(LOCK, "/d/sec.md", True, "sec.md"),
            ],
            answer="账号将被自动锁定30分钟[1]。",
            sources=[chunk(LOCK, "/d/sec.md", True, "sec.md")],
            retrieve_ms=10.0,
            ask_ms=20.0,
        ),
        # fails: refused although answerable (false refusal); gold at rank 1
        record(
            id="q2",
            question="密码多久改一次？",
            category="policy",
            answerable=True,
            answers=["90天"],
            gold_docs=["sec.md"],
            gold_spans=["每90天"],
            retrieved=[chunk("密码每90天必须修改一次。", "/d/sec.md", True, "sec.md")],
            answer=REFUSAL,
            refused=True,
            reason="attribute_missing",
            retrieve_ms=30.0,
            ask_ms=40.0,
        ),
        # fails: answered with the wrong value; gold never retrieved (rank 0)
        record(
            id="q3",
            question="一类城市住宿标准？",
            category="table",
            answerable=True,
            answers=["600"],
            gold_docs=["travel.md"],
            gold_rows=[{"城市类别": "一类城市", "住宿": "600"}],
            gold_header=["城市类别", "住宿"],
            retrieved=[chunk(OTHER, "/d/sec.md")],
            answer="二类城市450元。",
            sources=[chunk(OTHER, "/d/sec.md")],
            retrieve_ms=50.0,
            ask_ms=60.0,
        ),
        # passes: reference answer, cites the gold document
        record(
            id="q4",
            question="怎么连内网？",
            category="table",
            answerable=True,
            answers=["通过VPN接入"],
            answer_match="reference",
            gold_docs=["faq.txt"],
            retrieved=[chunk("通过VPN接入", "/d/faq.txt", gold="faq.txt")],
            answer="必须通过VPN接入[1]。",
            sources=[chunk("通过VPN接入", "/d/faq.txt", gold="faq.txt")],
            retrieve_ms=70.0,
            ask_ms=80.0,
        ),
        # passes: unanswerable and refused
        record(
            id="q5",
            question="年会在哪？",
            category="unanswerable",
            answerable=False,
            answer_match="reference",
            retrieved=[chunk(OTHER, "/d/sec.md")],
            answer=REFUSAL,
            refused=True,
            reason="no_evidence",
            retrieve_ms=90.0,
            ask_ms=100.0,
        ),
    ]


def sample_run() -> EvalRun:
    records = sample_records()
    return EvalRun(
        k=5, settings={"chunker": "structure"}, records=records, summary=summarize_run(records, 5)
    )
