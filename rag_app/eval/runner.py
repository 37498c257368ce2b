"""Run a question set against a knowledge base and summarise it (overall and per category).

For every question the runner calls ``kb.retrieve(q, top_k=k)`` (the retrieval stage: Recall@k,
MRR@k, context size) and ``kb.ask(q, top_k=k)`` (the answer stage: refusals, keywords, cited
sources), timing each call. Metric definitions (also in ``docs/EVAL_SECTION.md``):

* ``case_pass_rate``: share of questions handled correctly end to end. An answerable question
  passes when it is not refused and the answer contains the reference values (``any``/``all``,
  or ``answer_groups``); when the references are free text (``answer_match = reference``) the
  answer must instead cite a gold document. An unanswerable question (``refuse``) passes when it
  is refused. A case from a 👎 (``not_answer``) fails while its rejected answer comes back
  (``rejected_back_rate``; rag_app/eval/verdicts.py); ``fail_reason`` says why a case failed.
* ``source_hit_rate``: answerable questions with gold documents whose answer cites one of them
  (a refused answer cites nothing). ``doc_recall_at_k``: same, on the top-k retrieved chunks.
* ``evidence_hit_rate``: answerable questions with gold spans/rows whose cited sources (after
  reranking, the evidence gate and neighbour expansion) hold one: Recall of the answer stage.
* ``keyword_hit_rate``: answerable questions with ``any``/``all`` references whose answer holds
  them.
* ``misleading_rate``: unanswerable questions answered without a first-line caveat (neither
  refused nor qualified). ``qualified_rate``: answerable questions answered with one.
* ``no_answer_accuracy``: unanswerable questions refused. ``false_refusal_rate``: answerable
  questions refused. ``closest_hit_rate``: of those (with ``any``/``all`` references), the share
  whose closest unit, shown under the refusal (``Answer.closest``), holds the references.
* ``recall_at_k`` / ``mrr_at_k``: answerable questions with gold spans or rows; a retrieved chunk
  hits by the rules of :mod:`rag_app.eval.metrics` (gold rows need the header too).
* ``avg_context_chars``: characters in the top-k retrieved chunks, averaged over questions.
* latency: ``retrieve_ms_*`` and ``ask_ms_*`` (avg, p50, p95; nearest-rank percentiles).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from rag_app.eval import metrics as M
from rag_app.eval.calibration import Calibration, calibrate
from rag_app.eval.dataset import QAItem
from rag_app.eval.targets import Served, kb_settings
from rag_app.eval.verdicts import fail_reason, rejected_back
from rag_app.types import Source

if TYPE_CHECKING:
    from rag_app.kb import KnowledgeBase

logger = logging.getLogger(__name__)

#: Summary keys in display order, with a short label (used by reports and ``--compare``).
METRICS: dict[str, str] = {
    "case_pass_rate": "case pass",
    "recall_at_k": "Recall@k",
    "mrr_at_k": "MRR@k",
    "doc_recall_at_k": "doc Recall@k",
    "source_hit_rate": "source hit",
    "evidence_hit_rate": "evidence hit",
    "keyword_hit_rate": "keyword hit",
    "no_answer_accuracy": "no-answer acc.",
    "false_refusal_rate": "false refusal",
    "misleading_rate": "misleading",
    "qualified_rate": "qualified",
    "closest_hit_rate": "refusal shows answer",
    "rejected_back_rate": "rejected answer back",
    "avg_context_chars": "context chars",
    "retrieve_ms_avg": "retrieve ms avg",
    "retrieve_ms_p50": "retrieve ms p50",
    "retrieve_ms_p95": "retrieve ms p95",
    "ask_ms_avg": "ask ms avg",
    "ask_ms_p50": "ask ms p50",
    "ask_ms_p95": "ask ms p95",
}
#: Metrics where lower is better (for coloured deltas).
LOWER_IS_BETTER = {
    "false_refusal_rate",
    "misleading_rate",
    "qualified_rate",
    "rejected_back_rate",
    "avg_context_chars",
} | {k for k in METRICS if k.endswith(("_avg", "_p50", "_p95"))}


class ChunkRecord(BaseModel):
    """One retrieved or cited chunk, as the evaluation saw it."""

    chunk_id: str
    doc_id: str
    source: str
    gold_doc: str | None = Field(None, description="The gold document this chunk belongs to.")
    text: str
    score: float
    hit: bool = Field(False, description="Contains a gold span / a gold row with its header.")


class QuestionRecord(BaseModel):
    """Everything about one question: the gold data, what came back, the per-question verdicts."""

    id: str
    question: str
    category: str
    answerable: bool = True
    answers: list[str] = Field(default_factory=list)
    answer_match: str = "any"
    answer_groups: list[list[str]] = Field(default_factory=list)
    gold_docs: list[str] = Field(default_factory=list)
    gold_spans: list[str] = Field(default_factory=list)
    gold_rows: list[dict[str, Any]] = Field(default_factory=list)
    gold_header: list[str] = Field(default_factory=list)
    not_answer: list[str] = Field(default_factory=list, description="Rejected first lines.")
    refuse: bool = False
    comment: str = ""

    retrieved: list[ChunkRecord] = Field(default_factory=list)
    answer: str = ""
    refused: bool = False
    qualified: bool = Field(
        False, description="Answered with a first-line caveat (Answer.outcome 'qualified')."
    )
    reason: str | None = None
    confidence: float | None = Field(
        None,
        description="P(the evidence answers the question), the answer model's: refused below "
        "the gate threshold (rag_app/eval/calibration.py).",
    )
    mode: str = ""
    reviewed: bool = Field(
        False, description="Below the gate's threshold and read by the LLM (RAG_LLM_REVIEW)."
    )
    sources: list[ChunkRecord] = Field(default_factory=list)
    retrieve_ms: float = 0.0
    ask_ms: float | None = None
    error: str | None = None

    rank: int | None = Field(
        None, description="1-based rank of the first hit in `retrieved`; 0 none; None no gold."
    )
    doc_hit: bool | None = Field(None, description="A gold document among `retrieved`.")
    source_hit: bool | None = Field(None, description="A gold document among the cited sources.")
    evidence_hit: bool | None = Field(
        None, description="A cited source holds the gold span/row (what the answer was built on)."
    )
    keyword_hit: bool | None = None
    closest: str = Field("", description="A refusal's closest unit (Answer.closest), as shown.")
    closest_hit: bool | None = Field(
        None,
        description="A refused answerable question whose closest unit holds the expected "
        "answer: still a false refusal, but one a user can read the answer off.",
    )
    rejected_back: bool | None = Field(
        None, description="The answer's first line holds a rejected one (`not_answer`)."
    )
    passed: bool | None = Field(None, description="case pass (None when `ask` was skipped).")
    fail_reason: str | None = Field(None, description="Why the case failed, in words.")
    context_chars: int = 0

    @property
    def has_gold_evidence(self) -> bool:
        return bool(self.gold_spans or self.gold_rows)


class EvalRun(BaseModel):
    """The result of :func:`run_eval`: per-question records and the summary."""

    k: int
    tenant: str = "default"
    created_at: str = Field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    settings: dict[str, Any] = Field(default_factory=dict)
    summary: dict[str, Any] = Field(
        default_factory=dict, description='{"overall": {...}, "categories": {name: {...}}}'
    )
    ragas: dict[str, Any] | None = Field(
        None, description="ragas scores (``RagasScores``), when the run was scored."
    )
    calibration: Calibration | None = Field(
        None,
        description="Gate thresholds for target false-refusal rates on these questions, and "
        "what each refuses (rag_app/eval/calibration.py); None for a retrieval-only run.",
    )
    records: list[QuestionRecord] = Field(default_factory=list)

    def to_json(self, indent: int | None = 2, texts: bool = True) -> str:
        """The run as JSON; ``texts=False`` leaves out chunk texts (ids, scores and verdicts
        stay), which makes a shareable file a tenth of the size."""
        data = self.model_dump(mode="json")
        if not texts:
            for rec in data["records"]:
                for chunk in (*rec["retrieved"], *rec["sources"]):
                    chunk["text"] = ""
        return json.dumps(data, ensure_ascii=False, indent=indent)

    @classmethod
    def from_json(cls, text: str) -> EvalRun:
        return cls.model_validate_json(text)

    @classmethod
    def load(cls, path: str | Path) -> EvalRun:
        return cls.from_json(Path(path).read_text(encoding="utf-8"))

    def save(self, path: str | Path, texts: bool = True) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.to_json(texts=texts) + "\n", encoding="utf-8")
        return path

    @property
    def overall(self) -> dict[str, Any]:
        return dict(self.summary.get("overall", {}))

    @property
    def categories(self) -> dict[str, dict[str, Any]]:
        return dict(self.summary.get("categories", {}))


ProgressFn = Callable[[QuestionRecord, int, int], None]


def _chunk(src: Source, item: QAItem) -> ChunkRecord:
    return ChunkRecord(
        chunk_id=src.chunk_id,
        doc_id=src.doc_id,
        source=src.source,
        gold_doc=M.matched_gold_doc(src.source, item.gold_docs),
        text=src.text,
        score=src.score,
        hit=M.is_hit(src.text, item) if (item.gold_spans or item.gold_rows) else False,
    )


def _new_record(item: QAItem) -> QuestionRecord:
    data = item.model_dump()
    data["answer_groups"] = getattr(item, "answer_groups", None) or []
    return QuestionRecord.model_validate(data)


def evaluate_question(
    kb: KnowledgeBase | Served, item: QAItem, k: int = 5, tenant: str = "default", ask: bool = True
) -> QuestionRecord:
    """Run one question through retrieve (and ask) and judge it."""
    rec = _new_record(item)
    try:
        t0 = time.perf_counter()
        hits = kb.retrieve(item.question, top_k=k, tenant=tenant)
        rec.retrieve_ms = round((time.perf_counter() - t0) * 1000, 2)
        rec.retrieved = [_chunk(h, item) for h in hits]
        if ask:
            t0 = time.perf_counter()
            answer = kb.ask(item.question, tenant=tenant, top_k=k)
            rec.ask_ms = round((time.perf_counter() - t0) * 1000, 2)
            rec.answer, rec.refused, rec.reason = answer.answer, answer.refused, answer.reason
            rec.confidence = answer.confidence
            rec.qualified = answer.outcome == "qualified"
            rec.mode, rec.reviewed = answer.mode, answer.reviewed
            rec.sources = [_chunk(s, item) for s in answer.sources]
            rec.closest = "\n".join(c.text for c in answer.closest)
    except Exception as exc:  # one broken question must not end the run
        logger.exception("question %s failed", item.id)
        rec.error = f"{type(exc).__name__}: {exc}"
    judge(rec, ask=ask)
    return rec


def judge(rec: QuestionRecord, ask: bool = True) -> QuestionRecord:
    """Fill the per-question verdicts (rank, hits, pass) from what was retrieved and answered."""
    rec.context_chars = sum(len(c.text) for c in rec.retrieved)
    rec.rank = None
    if rec.answerable and rec.has_gold_evidence:
        rec.rank = next((i for i, c in enumerate(rec.retrieved, start=1) if c.hit), 0)
    gold_docs = rec.answerable and bool(rec.gold_docs)
    rec.doc_hit = any(c.gold_doc for c in rec.retrieved) if gold_docs else None
    if not ask:
        rec.source_hit = rec.evidence_hit = rec.keyword_hit = rec.passed = None
        rec.rejected_back, rec.fail_reason = None, None
        return rec
    failed = rec.error is not None
    rec.source_hit = (not failed and any(c.gold_doc for c in rec.sources)) if gold_docs else None
    rec.evidence_hit = None
    if rec.rank is not None:
        rec.evidence_hit = not failed and any(c.hit for c in rec.sources)
    rec.keyword_hit = None
    if rec.answerable:
        hit = M.answer_hit(rec.answer, rec)
        rec.keyword_hit = None if hit is None else (hit and not rec.refused and not failed)
    rec.closest_hit = None
    if rec.answerable and rec.refused and not failed:
        rec.closest_hit = M.answer_hit(rec.closest, rec) if rec.closest else False
    rec.rejected_back = rejected_back(rec.answer, rec.not_answer) if not failed else None
    rec.fail_reason = fail_reason(rec)
    rec.passed = rec.fail_reason is None
    return rec


def _round(value: float | None, digits: int = 4) -> float | None:
    return None if value is None else round(value, digits)


def summarize(records: Sequence[QuestionRecord], k: int) -> dict[str, Any]:
    """Metrics of a set of records (see the module docstring for the definitions)."""
    answerable = [r for r in records if r.answerable]
    unanswerable = [r for r in records if not r.answerable]
    asked = [r for r in records if r.passed is not None]
    ranks = [r.rank for r in records if r.rank is not None]
    retrieve_ms = [r.retrieve_ms for r in records if r.error is None]
    ask_ms = [r.ask_ms for r in records if r.ask_ms is not None]
    out: dict[str, Any] = {
        "n": len(records),
        "n_answerable": len(answerable),
        "n_unanswerable": len(unanswerable),
        "n_with_evidence": len(ranks),
        "errors": sum(1 for r in records if r.error),
        "case_pass_rate": M.rate(r.passed for r in asked) if asked else None,
        "recall_at_k": M.recall_at_k(ranks, k) if ranks else None,
        "mrr_at_k": M.mrr_at_k(ranks, k) if ranks else None,
        "doc_recall_at_k": M.rate(r.doc_hit for r in records),
        "source_hit_rate": M.rate(r.source_hit for r in records),
        "evidence_hit_rate": M.rate(r.evidence_hit for r in records),
        "keyword_hit_rate": M.rate(r.keyword_hit for r in records),
        "no_answer_accuracy": M.rate(r.refused for r in unanswerable if r.passed is not None),
        "false_refusal_rate": M.rate(r.refused for r in answerable if r.passed is not None),
        "misleading_rate": M.rate(
            not (r.refused or r.qualified) for r in unanswerable if r.passed is not None
        ),
        "qualified_rate": M.rate(r.qualified for r in answerable if r.passed is not None),
        "closest_hit_rate": M.rate(r.closest_hit for r in answerable),
        "rejected_back_rate": M.rate(r.rejected_back for r in asked if r.not_answer),
        "avg_context_chars": M.mean([float(r.context_chars) for r in records]),
        "retrieve_ms_avg": M.mean(retrieve_ms),
        "retrieve_ms_p50": M.percentile(retrieve_ms, 50) if retrieve_ms else None,
        "retrieve_ms_p95": M.percentile(retrieve_ms, 95) if retrieve_ms else None,
        "ask_ms_avg": M.mean(ask_ms),
        "ask_ms_p50": M.percentile(ask_ms, 50) if ask_ms else None,
        "ask_ms_p95": M.percentile(ask_ms, 95) if ask_ms else None,
    }
    for key, value in out.items():
        if isinstance(value, float):
            out[key] = _round(value, 1 if key.endswith(("_ms_avg", "_p50", "_p95", "chars")) else 4)
    return out


def summarize_run(records: Sequence[QuestionRecord], k: int) -> dict[str, Any]:
    """``{"overall": ..., "categories": {name: ...}}`` (categories in first-seen order)."""
    by_cat: dict[str, list[QuestionRecord]] = {}
    for rec in records:
        by_cat.setdefault(rec.category, []).append(rec)
    return {
        "overall": summarize(records, k),
        "categories": {name: summarize(recs, k) for name, recs in by_cat.items()},
    }


def run_eval(
    kb: KnowledgeBase | Served,
    items: Sequence[QAItem],
    k: int = 5,
    tenant: str = "default",
    progress: ProgressFn | None = None,
    *,
    ask: bool = True,
) -> EvalRun:
    """Evaluate ``items`` against ``kb`` (retrieve, and ask unless ``ask=False``): a knowledge
    base opened here, or one behind a running server (:class:`rag_app.eval.targets.Served`).

    ``progress(record, done, total)`` is called after each question.
    """
    if k <= 0:
        raise ValueError("k must be positive")
    records: list[QuestionRecord] = []
    for done, item in enumerate(items, start=1):
        rec = evaluate_question(kb, item, k=k, tenant=tenant, ask=ask)
        records.append(rec)
        if progress is not None:
            progress(rec, done, len(items))
    calibration = None
    query = getattr(kb, "query", None)  # a served KB has none: its gate is the server's
    engine = query.engine if query is not None else None
    if engine is not None and ask and any(r.confidence is not None for r in records):
        locator = engine.gate.locator
        calibration = calibrate(records, locator.threshold, locator.model.thresholds)
    return EvalRun(
        k=k,
        tenant=tenant,
        settings=kb_settings(kb),
        records=records,
        summary=summarize_run(records, k),
        calibration=calibration,
    )
