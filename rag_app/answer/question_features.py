"""Question-level features: what the gate decides on.

The unit and support models (:mod:`rag_app.answer.features`) score each unit; the gate reads the
question as a whole: the support model's best score and how well the evidence holds the
question's asked head, phrase, entities and values (a record that names the person but not the
asked detail has every entity and no head).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import numpy as np

from rag_app.analysis.asked import QuestionAnalysis, numeric_range
from rag_app.answer.features import FEATURES
from rag_app.answer.odds import logit
from rag_app.text.matching import in_range, said, with_canonical_forms

QUESTION_FEATURES: tuple[str, ...] = (
    "p_best_logit",  # the support model's best probability, as log-odds
    "support_shortfall",  # how far p_best_logit falls below SUPPORT_LOGIT_FLOOR (0 above it)
    "specific_missing",  # the most specific (in general Chinese) question word the evidence lacks
    "phrase_term_missing",  # share of the asked phrase's weight in no passage
    "head_gap",  # the asked head is in no passage that names the entities
    "head_with_entity",  # a passage holds both the asked head and the question's entities
    "no_head_entity",  # the question names no asked head and no entity (head_with_entity is vacuous)
    "no_phrase",  # the question has no asked phrase (phrase_term_missing is vacuous)
    # the question states values (2021年10月; not bounds), no passage holds one, and the best
    # supported unit holds another of their form (2021年09月): it is about another period
    "constraint_rival",
    # a question asked of several subjects at once (A和B分别…) whose evidence names every one
    "subjects_present",
)
# Only what the gate weighs is computed. The features measured and not kept (the best unit's
# coverage, value and entity scores, embedding similarity, words the knowledge base never
# mentions, ...) are in docs/answering.md; an experiment computes its candidate beside these.

# Log-odds of the best support below which a question reads as off its evidence's topic
# ("红烧肉怎么做才能肥而不腻" of a KB of IT policies): a hinge, so that very weak support counts
# more than the linear p_best_logit says, while the many answerable questions of middling
# support (lay legal questions: 10th percentile near -1.5) are left to the other features.
# Chosen among -1.5, -2.0, -2.25 and -2.5 on the dev sets' leave-one-domain-out figures, first
# for questions without a head or entity (the one that kept every false-refusal cell within 0.2
# points; off-topic questions have a median near -2.4), then kept for all questions.
SUPPORT_LOGIT_FLOOR = -2.5


def question_terms(analysis: QuestionAnalysis) -> list[str]:
    """The words whose document frequency the gate reads: the terms and the head."""
    return list(dict.fromkeys([*analysis.terms, *([analysis.head] if analysis.head else [])]))


_CLAUSE_END = re.compile(r"[，。；？！,;?!]")
# chars before a range's first bound that name what is ranged ("小区的房价位于20000至…")
RANGE_LEAD = 8


def _logit(p: float) -> float:
    return logit(p, 1e-4)


def specific_missing(
    analysis: QuestionAnalysis, evidence: str, specificity: Callable[[str], float]
) -> float:
    """The specificity (:class:`~rag_app.analysis.specificity.WordSpecificity`) of the most
    specific question word of two or more characters that ``evidence`` (lower-cased) lacks; 0
    when it holds them all. Only the longest words count (a word inside another is not asked
    twice). An everyday word missing is a question worded otherwise; a rare one missing is a
    question about something the evidence does not mention. An anonymised name (张某某) counts
    as the most specific word: it names one person."""
    words = [t for t in analysis.terms if len(t) >= 2]
    words = [t for t in words if not any(t != u and t in u for u in words)]
    return max(
        (1.0 if t in analysis.names else specificity(t) for t in words if not said(t, evidence)),
        default=0.0,
    )


def question_vector(
    analysis: QuestionAnalysis,
    x: np.ndarray,
    probs: np.ndarray,
    texts: Sequence[str],
    specificity: Callable[[str], float],
) -> np.ndarray:
    """The question-level features the gate decides on (:data:`QUESTION_FEATURES`): the support
    model's best score (``probs``, one per unit) and how well the evidence as a whole holds the
    question's head, asked phrase, entities and values (``x``: the units' :data:`FEATURES`;
    ``texts``: the units' texts; ``specificity``: a word's specificity in general Chinese)."""
    if not len(probs):
        return np.zeros(len(QUESTION_FEATURES))
    evidence = with_canonical_forms("\n".join(texts))
    f = {name: x[:, i] for i, name in enumerate(FEATURES)}
    asks_head = bool(analysis.head and len(analysis.head) >= 2)
    # a range list ("哪些X的Y位于A至B之间") is answered by units holding a value in the range,
    # whatever their column calls Y and though they never name X: the asked phrase, the head
    # and the words of the range's clause are then not missing
    rng = numeric_range(analysis)
    ranged = False
    if rng is not None and any(in_range(t, rng[0], rng[1]) for t in texts):
        ranged, at = True, rng[2]
        end = _CLAUSE_END.search(analysis.text, at)
        clause = analysis.text[max(0, at - RANGE_LEAD) : end.start() if end else len(analysis.text)]
        analysis = analysis.model_copy(
            update={"terms": [t for t in analysis.terms if t not in clause]}
        )
    best = int(np.argmax(probs))  # the first of equals
    p_logit = _logit(float(probs[best]))
    head_with_entity = float(np.minimum(f["head_ctx"], f["entity_ctx"]).max())
    values = {
        "p_best_logit": p_logit,
        "support_shortfall": min(0.0, p_logit - SUPPORT_LOGIT_FLOOR),
        "specific_missing": specific_missing(analysis, evidence, specificity),
        "phrase_term_missing": 0.0 if ranged else 1.0 - float(f["phrase_ctx"].max()),
        "head_gap": (1.0 - head_with_entity) if asks_head and not ranged else 0.0,
        "head_with_entity": head_with_entity,
        "no_head_entity": 0.0 if asks_head or analysis.entities else 1.0,
        "no_phrase": 0.0 if analysis.phrase else 1.0,
        "constraint_rival": float(f["constraint_rival"][best]),
        "subjects_present": 1.0
        if analysis.subjects and all(s.lower() in evidence for s in analysis.subjects)
        else 0.0,
    }
    return np.asarray([values[name] for name in QUESTION_FEATURES])
