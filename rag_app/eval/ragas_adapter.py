"""Score an :class:`~rag_app.eval.runner.EvalRun` with ragas (0.4).

Offline (no model) metrics, always:

* ``id_context_precision`` / ``id_context_recall`` (``IDBasedContextPrecision/Recall``) on
  *document* ids: retrieved = the documents of the top-k chunks, reference = ``gold_docs``;
* ``nonllm_context_recall`` / ``nonllm_context_precision`` (``NonLLMContextRecall``,
  ``NonLLMContextPrecisionWithReference``): retrieved chunk texts against the gold spans (or gold
  rows). Our reference contexts are short spans, not passages, so the ragas default (whole-string
  Levenshtein similarity) scores every chunk far below its 0.5 threshold; the adapter plugs in a
  substring-aware similarity instead (rapidfuzz ``partial_ratio`` on whitespace-free text, the
  best alignment of the span inside the chunk) with threshold ``CONTEXT_MATCH_THRESHOLD``;
* ``string_similarity`` (``NonLLMStringSimilarity``, normalised Levenshtein) and ``chrf``
  (``ChrfScore``, character n-grams) of the answer against the reference answer.

ROUGE and BLEU are left out on purpose: their tokenizers split on whitespace/ASCII word
boundaries and drop or lump CJK text, so they score Chinese answers as noise.

With an OpenAI-compatible endpoint configured (``Settings.llm_base_url``), also the LLM-judged
``faithfulness`` (answer claims supported by the retrieved contexts), ``llm_context_precision``
and ``llm_context_recall`` (ragas ``metrics.collections`` built on ``llm_factory``).

Only answerable questions are scored (unanswerable ones have no reference). Scores that a metric
cannot define (e.g. no gold spans) are ``None``.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import math
import os
import threading
import warnings
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, Field

from rag_app.eval.metrics import squash
from rag_app.eval.runner import EvalRun, QuestionRecord

if TYPE_CHECKING:
    from ragas import EvaluationDataset, SingleTurnSample

    from rag_app.config import Settings

logger = logging.getLogger(__name__)

OFFLINE_METRICS = (
    "id_context_precision",
    "id_context_recall",
    "nonllm_context_precision",
    "nonllm_context_recall",
    "string_similarity",
    "chrf",
)
LLM_METRICS = ("faithfulness", "llm_context_precision", "llm_context_recall")
CONTEXT_MATCH_THRESHOLD = 0.8

T = TypeVar("T")


def disable_ragas_tracking() -> None:
    """Set ``RAGAS_DO_NOT_TRACK=true``, also over an explicit opt-in. ragas reads it once and
    caches it, so each function here that imports ragas calls this first."""
    os.environ["RAGAS_DO_NOT_TRACK"] = "true"


# ----- dataset ------------------------------------------------------------------------------------
def reference_answer(rec: QuestionRecord) -> str:
    """The reference answer: every value for ``all`` questions, the first one otherwise; else the
    first alternative of each answer group, else the gold spans joined; '' when there is none."""
    if rec.answers:
        return "、".join(rec.answers) if rec.answer_match == "all" else rec.answers[0]
    if rec.answer_groups:
        return "；".join(g[0] for g in rec.answer_groups if g)
    return "；".join(rec.gold_spans)


def reference_contexts(rec: QuestionRecord) -> list[str]:
    """The gold evidence as text: the gold spans, or each gold row as its cells (``a | b | c``,
    the way a table line reads in a chunk)."""
    if rec.gold_spans:
        return list(rec.gold_spans)
    return [" | ".join(str(value) for value in row.values()) for row in rec.gold_rows]


def doc_ids(rec: QuestionRecord) -> list[str]:
    """Document ids of the retrieved chunks: the gold path when a chunk is in a gold document
    (so that ids compare equal with ``gold_docs``), otherwise the chunk's source path."""
    return [c.gold_doc or c.source for c in rec.retrieved]


def to_samples(run: EvalRun) -> list[SingleTurnSample]:
    """One ``SingleTurnSample`` per answerable question of the run."""
    disable_ragas_tracking()
    from ragas import SingleTurnSample

    samples = []
    for rec in run.records:
        if not rec.answerable:
            continue
        samples.append(
            SingleTurnSample(
                user_input=rec.question,
                retrieved_contexts=[c.text for c in rec.retrieved],
                response=rec.answer,
                reference=reference_answer(rec),
                reference_contexts=reference_contexts(rec) or None,
                retrieved_context_ids=doc_ids(rec),
                reference_context_ids=list(rec.gold_docs) or None,
            )
        )
    return samples


def to_evaluation_dataset(run: EvalRun) -> EvaluationDataset:
    disable_ragas_tracking()
    from ragas import EvaluationDataset

    return EvaluationDataset(samples=list(to_samples(run)))


# ----- metrics ------------------------------------------------------------------------------------
@dataclass
class _Metric:
    name: str
    needs: tuple[str, ...]  # sample fields that must be non-empty
    score: Callable[[SingleTurnSample], Awaitable[float]]


def _legacy(metric: Any) -> Callable[[SingleTurnSample], Awaitable[float]]:
    async def score(sample: SingleTurnSample) -> float:
        return float(await metric.single_turn_ascore(sample))

    return score


@functools.cache
def _partial_similarity_class() -> type:
    disable_ragas_tracking()
    from ragas.metrics.base import MetricType, SingleTurnMetric

    @dataclass
    class PartialStringSimilarity(SingleTurnMetric):
        """Similarity of the best alignment of the shorter text inside the longer one (0..1)."""

        name: str = "partial_string_similarity"
        _required_columns: dict[MetricType, set[str]] = field(
            default_factory=lambda: {MetricType.SINGLE_TURN: {"reference", "response"}}
        )

        def init(self, run_config: Any) -> None:
            return None

        async def _single_turn_ascore(self, sample: Any, callbacks: Any) -> float:
            return partial_similarity_value(sample.reference or "", sample.response or "")

        async def _ascore(self, row: dict[str, Any], callbacks: Any) -> float:
            return partial_similarity_value(row.get("reference", ""), row.get("response", ""))

    return PartialStringSimilarity


def partial_similarity_value(a: str, b: str) -> float:
    from rapidfuzz import fuzz

    a, b = squash(a), squash(b)
    if not a or not b:
        return 0.0
    return float(fuzz.partial_ratio(a, b)) / 100


def partial_similarity() -> Any:
    """A ragas ``SingleTurnMetric`` scoring ``partial_similarity_value(reference, response)``."""
    return _partial_similarity_class()()


def offline_metrics() -> list[_Metric]:
    """The model-free ragas metrics (see the module docstring)."""
    disable_ragas_tracking()
    with warnings.catch_warnings():  # ragas marks these names deprecated but has no successors
        warnings.simplefilter("ignore", DeprecationWarning)
        from ragas.metrics import (
            ChrfScore,
            IDBasedContextPrecision,
            IDBasedContextRecall,
            NonLLMContextPrecisionWithReference,
            NonLLMContextRecall,
            NonLLMStringSimilarity,
        )
    similarity = partial_similarity()
    context_precision = NonLLMContextPrecisionWithReference(
        distance_measure=similarity, threshold=CONTEXT_MATCH_THRESHOLD
    )
    context_recall = NonLLMContextRecall(threshold=CONTEXT_MATCH_THRESHOLD)
    context_recall._distance_measure = similarity  # the public setter only takes an enum
    ids = ("retrieved_context_ids", "reference_context_ids")
    ctx = ("retrieved_contexts", "reference_contexts")
    answer = ("response", "reference")
    return [
        _Metric("id_context_precision", ids, _legacy(IDBasedContextPrecision())),
        _Metric("id_context_recall", ids, _legacy(IDBasedContextRecall())),
        _Metric("nonllm_context_precision", ctx, _legacy(context_precision)),
        _Metric("nonllm_context_recall", ctx, _legacy(context_recall)),
        _Metric("string_similarity", answer, _legacy(NonLLMStringSimilarity())),
        _Metric("chrf", answer, _legacy(ChrfScore())),
    ]


def build_ragas_llm(settings: Settings) -> Any:
    """A ragas ``InstructorLLM`` on the configured OpenAI-compatible endpoint.

    The collections metrics call ``agenerate``, so the client is ``openai.AsyncOpenAI``.
    """
    if not settings.llm_base_url:
        raise ValueError("no LLM endpoint configured: set RAG_LLM_BASE_URL (OpenAI-compatible)")
    disable_ragas_tracking()
    import openai
    from ragas.llms import llm_factory

    key = settings.llm_api_key.get_secret_value() if settings.llm_api_key else "not-needed"
    client = openai.AsyncOpenAI(
        base_url=settings.llm_base_url, api_key=key, timeout=settings.llm_timeout, max_retries=1
    )
    return llm_factory(settings.llm_model, client=client)


def llm_metrics(llm: Any) -> list[_Metric]:
    """Faithfulness and LLM context precision/recall (ragas ``metrics.collections``)."""
    disable_ragas_tracking()
    from ragas.metrics.collections import (
        ContextPrecisionWithReference,
        ContextRecall,
        Faithfulness,
    )

    faithfulness = Faithfulness(llm=llm)
    precision = ContextPrecisionWithReference(llm=llm, name="llm_context_precision")
    recall = ContextRecall(llm=llm, name="llm_context_recall")

    async def faith(s: SingleTurnSample) -> float:
        result = await faithfulness.ascore(
            user_input=s.user_input or "",
            response=s.response or "",
            retrieved_contexts=list(s.retrieved_contexts or []),
        )
        return float(result.value)

    async def prec(s: SingleTurnSample) -> float:
        result = await precision.ascore(
            user_input=s.user_input or "",
            reference=s.reference or "",
            retrieved_contexts=list(s.retrieved_contexts or []),
        )
        return float(result.value)

    async def rec(s: SingleTurnSample) -> float:
        result = await recall.ascore(
            user_input=s.user_input or "",
            retrieved_contexts=list(s.retrieved_contexts or []),
            reference=s.reference or "",
        )
        return float(result.value)

    return [
        _Metric("faithfulness", ("user_input", "response", "retrieved_contexts"), faith),
        _Metric("llm_context_precision", ("user_input", "reference", "retrieved_contexts"), prec),
        _Metric("llm_context_recall", ("user_input", "reference", "retrieved_contexts"), rec),
    ]


# ----- scoring ------------------------------------------------------------------------------------
class RagasScores(BaseModel):
    """ragas scores per question, averaged overall and per category (NaN/undefined → None)."""

    metrics: list[str]
    llm: bool = False
    per_question: list[dict[str, Any]] = Field(default_factory=list)
    overall: dict[str, float | None] = Field(default_factory=dict)
    categories: dict[str, dict[str, float | None]] = Field(default_factory=dict)
    errors: int = 0


def _clean(value: float) -> float | None:
    return None if value is None or math.isnan(value) else round(float(value), 4)


def _means(rows: Sequence[dict[str, Any]], names: Sequence[str]) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for name in names:
        values = [r[name] for r in rows if r.get(name) is not None]
        out[name] = round(sum(values) / len(values), 4) if values else None
    return out


def _run_sync(make: Callable[[], Awaitable[T]]) -> T:
    """Run a coroutine from sync code, also when an event loop is already running (Jupyter)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make())  # type: ignore[arg-type]
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(make())  # type: ignore[arg-type]
        except BaseException as exc:  # re-raised in the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]  # type: ignore[no-any-return]


async def ascore_run(
    run: EvalRun,
    *,
    settings: Settings | None = None,
    llm: Any = None,
    concurrency: int = 4,
) -> RagasScores:
    """Score the answerable questions of ``run``; LLM metrics when ``llm`` is given or
    ``settings.llm_base_url`` is set."""
    if llm is None and settings is not None and settings.llm_base_url:
        llm = build_ragas_llm(settings)
    metrics = offline_metrics() + (llm_metrics(llm) if llm is not None else [])
    records = [r for r in run.records if r.answerable]
    samples = to_samples(run)
    gate = asyncio.Semaphore(max(1, concurrency))
    errors = 0

    async def one(metric: _Metric, sample: SingleTurnSample, rec: QuestionRecord) -> float | None:
        nonlocal errors
        if any(not getattr(sample, name) for name in metric.needs):
            return None
        if metric.name == "faithfulness" and rec.refused:
            return None  # a refusal makes no claims
        async with gate:
            try:
                return _clean(await metric.score(sample))
            except Exception as exc:
                errors += 1
                logger.warning("ragas %s failed on %s: %s", metric.name, rec.id, exc)
                return None

    rows: list[dict[str, Any]] = []
    for rec, sample in zip(records, samples, strict=True):
        values = await asyncio.gather(*(one(m, sample, rec) for m in metrics))
        rows.append(
            {"id": rec.id, "category": rec.category}
            | {m.name: v for m, v in zip(metrics, values, strict=True)}
        )
    names = [m.name for m in metrics]
    by_cat: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_cat.setdefault(row["category"], []).append(row)
    return RagasScores(
        metrics=names,
        llm=llm is not None,
        per_question=rows,
        overall=_means(rows, names),
        categories={name: _means(group, names) for name, group in by_cat.items()},
        errors=errors,
    )


def score_run(
    run: EvalRun, *, settings: Settings | None = None, llm: Any = None, concurrency: int = 4
) -> RagasScores:
    """Synchronous :func:`ascore_run` (works inside Jupyter too)."""
    return _run_sync(lambda: ascore_run(run, settings=settings, llm=llm, concurrency=concurrency))
