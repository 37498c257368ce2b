"""AnswerModel: three fitted logistic regressions, weights as data.

* the **unit model** gives every answer unit P(it answers the question) from the unit features
  (:data:`~rag_app.answer.features.FEATURES`, each unit read under its heading path); the best
  unit leads the answer;
* the **support model** is the same over the unit's own words only (no heading credit): how well
  a unit by itself supports an answer, which is what the gate reads;
* the **gate model** gives the question P(the evidence answers it) from question-level features
  (:data:`~rag_app.answer.question_features.QUESTION_FEATURES`: the support model's best scores, and
  whether the evidence holds the asked head, terms, entities and values). Below the preset's
  threshold the question is refused;
* the optional **reading stage** (:class:`ReadingStage`) lowers that probability when the
  question and the best-supported units read as unrelated passages to an embedding model
  (:class:`~rag_app.answer.passage_scorer.PassageScorer`): a stacked logistic step over the gate's
  log-odds, fitted after it, so the gate's own weights stay as they were.

The weights live in ``answer_model.json`` next to this module, written by
``python -m training answer-model`` from the dev data (a reproducible command;
:mod:`training.answer_run`); the file records
what it was fitted on and the thresholds of the gate presets. Scoring is plain numpy.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from rag_app.analysis.english import HAN
from rag_app.answer.features import FEATURES
from rag_app.answer.odds import logit
from rag_app.answer.question_features import QUESTION_FEATURES

DEFAULT_MODEL = Path(__file__).with_name("answer_model.json")
# the bundled models by the reader their reading stage was fitted with (the same unit, support
# and gate models; the stage and the thresholds differ)
BUNDLED_MODELS = {"usem3": DEFAULT_MODEL, "e5": Path(__file__).with_name("answer_model_e5.json")}


def bundled_model(reader: str) -> Path:
    """The bundled answer model whose reading stage reads with ``reader`` (usem3 or e5)."""
    if reader not in BUNDLED_MODELS:
        raise ValueError(f"no bundled answer model reads with {reader!r}: use usem3 or e5")
    return BUNDLED_MODELS[reader]


PRESETS = ("strict", "balanced", "lenient")
# The unit features read from the embedding model: each question embeds its best units, most of
# the answer step's time. Computed only for a model that weighs them.
EMBEDDING_FEATURES = ("dense", "dense_gap")


def spread_header_rows(probs: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Each of n table rows matched only through what every row of their table shares (the
    title and column names; feature ``row_header_only``) gets 1/n of its probability: the
    question picks none of them. "保费交不起了怎么办" meets the 61 rows of a rate table through
    its title, equally; the first of them is no answer, and a sentence that answers should
    lead."""
    header_only = x[:, FEATURES.index("row_header_only")] > 0
    n = int(np.sum(header_only))
    if n < 2:
        return probs
    out = probs.copy()
    out[header_only] = probs[header_only] / n
    return out


class LinearModel(BaseModel):
    """P = sigmoid(coef · (x - mean) / scale + intercept) over named features."""

    model_config = ConfigDict(frozen=True)

    kind: Literal["linear"] = "linear"
    features: list[str]
    mean: list[float]
    scale: list[float]
    coef: list[float]
    intercept: float

    @model_validator(mode="after")
    def _check(self) -> LinearModel:
        if not (len(self.mean) == len(self.scale) == len(self.coef) == len(self.features)):
            raise ValueError("answer model: features, mean, scale and coef differ in length")
        return self

    def probabilities(self, x: np.ndarray, names: Sequence[str]) -> np.ndarray:
        """Rows of ``x`` are items, columns ``names`` (a superset of this model's features)."""
        if x.size == 0:
            return np.zeros(len(x))
        cols = [list(names).index(f) for f in self.features]
        z = (x[:, cols] - np.asarray(self.mean)) / np.asarray(self.scale)
        logits = z @ np.asarray(self.coef) + self.intercept
        return 1.0 / (1.0 + np.exp(-np.clip(logits, -40, 40)))


class Tree(BaseModel):
    """One regression tree as parallel arrays (node 0 is the root)."""

    feature: list[int]
    threshold: list[float]
    left: list[int]
    right: list[int]
    value: list[float]
    leaf: list[bool]
    missing_left: list[bool]

    def predict(self, x: np.ndarray) -> np.ndarray:
        out = np.empty(len(x))
        for r, row in enumerate(x):
            n = 0
            while not self.leaf[n]:
                v = row[self.feature[n]]
                go_left = self.missing_left[n] if np.isnan(v) else v <= self.threshold[n]
                n = self.left[n] if go_left else self.right[n]
            out[r] = self.value[n]
        return out


class TreeModel(BaseModel):
    """P = sigmoid(baseline + the sum of the trees' leaf values): gradient-boosted trees
    (scikit-learn's HistGradientBoostingClassifier, exported to plain arrays)."""

    model_config = ConfigDict(frozen=True)

    kind: Literal["trees"] = "trees"
    features: list[str]
    baseline: float
    trees: list[Tree]

    def probabilities(self, x: np.ndarray, names: Sequence[str]) -> np.ndarray:
        if x.size == 0:
            return np.zeros(len(x))
        cols = [list(names).index(f) for f in self.features]
        z = x[:, cols]
        raw = np.full(len(z), self.baseline)
        for tree in self.trees:
            raw += tree.predict(z)
        return 1.0 / (1.0 + np.exp(-np.clip(raw, -40, 40)))


class ReadingStage(BaseModel):
    """log-odds = gate log-odds + ``weight`` * max(0, ``floor`` - reading) + ``bias``, where
    ``reading`` is how well the ``units`` best-supported units read as the question's answer,
    by ``measure`` (:class:`~rag_app.answer.passage_scorer.PassageScorer`). ``weight`` <= 0: a reading
    can only lower the probability, so a question the gate already refuses needs none
    (:meth:`upper`)."""

    model_config = ConfigDict(frozen=True)

    reader: str = Field(description="The embedding model the stage was fitted with.")
    measure: Literal["cosine", "token_recall"] = Field(
        "cosine",
        description="What the reading is: 'cosine', the highest cosine of the question with a "
        "unit; 'token_recall', how much of the question the units hold token by token (the "
        "mean over the question's tokens of their best cosine with a unit's token; e5 only).",
    )
    units: int = Field(gt=0, description="How many best-supported units are read.")
    max_chars: int = Field(gt=0, description="Each unit is read up to this many characters.")
    floor: float = Field(
        description="Readings at or above it change nothing: the lowest of the fitted "
        "domains' 1st percentiles of answerable questions' readings."
    )
    weight: float = Field(le=0.0)
    bias: float
    script: Literal["han", "any"] = Field(
        "han",
        description="Which questions are read: 'han', those written mostly in Chinese "
        "characters (the fitted questions' script: a floor set on Chinese readings says "
        "nothing of an English question's, which an embedding reads on another scale); "
        "'any': every question. The others are decided as if read at the floor.",
    )

    def reads(self, question: str) -> bool:
        """Whether the stage reads ``question`` (see ``script``)."""
        return in_script(question, self.script)

    def probability(self, gate: float, reading: float | None) -> float:
        """The stacked probability; ``reading`` None (no reader): as if at the floor."""
        shortfall = 0.0 if reading is None else max(0.0, self.floor - reading)
        z = _logit(gate) + self.weight * shortfall + self.bias
        return float(1.0 / (1.0 + np.exp(-np.clip(z, -40, 40))))

    def upper(self, gate: float) -> float:
        """The highest probability any reading can give: the question needs no reading when
        this is below the threshold."""
        return self.probability(gate, None)

    def gated(self, gate: float, threshold: float, read: Callable[[], float] | None) -> float:
        """The stacked probability of ``gate``, read (``read()``: the reading) only when the
        reading can change the decision: not without a reader (``read`` None), nor with the
        gate off (``threshold`` 0: everything is answered), nor when the gate refuses at
        ``threshold`` whatever the reading (:meth:`upper`)."""
        if read is None or threshold <= 0 or self.upper(gate) < threshold:
            return self.probability(gate, None)
        return self.probability(gate, read())


_LATIN_WORD = re.compile(r"[A-Za-z]+")


def han_share(text: str) -> float:
    """Chinese characters among the text's Chinese characters and Latin words (a Latin word
    counts once, like a character: "VPN 怎么连" is 0.75); 0 without either."""
    han = len(HAN.findall(text))
    return han / max(han + len(_LATIN_WORD.findall(text)), 1)


def in_script(question: str, script: str) -> bool:
    """'han': written mostly in Chinese characters (at least half by :func:`han_share`)."""
    return script == "any" or han_share(question) >= 0.5


def _logit(p: float) -> float:
    return logit(p, 1e-9)


class AnswerModel(BaseModel):
    model_config = ConfigDict(frozen=True)

    version: str
    unit: LinearModel = Field(description="Ranks the units: the answer leads with the best.")
    support: LinearModel | None = Field(
        None,
        description="The unit model over a unit's own words (no heading credit); its best "
        "probability is the gate's p_best. None: the unit model's.",
    )
    gate: LinearModel | TreeModel = Field(discriminator="kind")
    reading: ReadingStage | None = Field(
        None, description="The reading stage over the gate; None: the gate decides alone."
    )
    thresholds: dict[str, float] = Field(
        description="Gate presets: the gate probability (after the reading stage, when there "
        "is one) below which a question is refused."
    )
    fitted_on: dict[str, object] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _check(self) -> AnswerModel:
        units = self.unit.features + (self.support.features if self.support else [])
        unknown = [f for f in units if f not in FEATURES]
        unknown += [f for f in self.gate.features if f not in QUESTION_FEATURES]
        if unknown:
            raise ValueError(f"answer model uses features this version does not compute: {unknown}")
        missing = [p for p in PRESETS if p not in self.thresholds]
        if missing:
            raise ValueError(f"answer model lacks thresholds for presets {missing}")
        return self

    @classmethod
    def load(cls, path: str | Path | None = None) -> AnswerModel:
        target = Path(path) if path is not None else DEFAULT_MODEL
        try:
            return cls.model_validate(json.loads(target.read_text(encoding="utf-8")))
        except (OSError, ValueError) as exc:
            raise ValueError(f"could not load the answer model {target}: {exc}") from exc

    def reads_embeddings(self) -> bool:
        """Whether a unit or support weight rests on a feature of the embedding model. When
        none does (the fit gave them no weight), the locator leaves them uncomputed: the same
        probabilities, without embedding every question's units. A weight the solver left at
        rounding noise (1e-16) is none. (The gate reads none: its question features are
        lexical.)"""
        for m in (self.unit, self.support):
            if m is None:
                continue
            used = [f for f, c in zip(m.features, m.coef, strict=True) if abs(c) > 1e-9]
            if any(f in EMBEDDING_FEATURES for f in used):
                return True
        return False

    def unit_probabilities(self, x: np.ndarray) -> np.ndarray:
        """One probability per unit (rows of ``x``, columns :data:`FEATURES`); table rows the
        question picks only through their title and column names share theirs
        (:func:`spread_header_rows`)."""
        return spread_header_rows(self.unit.probabilities(x, FEATURES), x)

    def support_probabilities(self, x: np.ndarray) -> np.ndarray:
        """P(the unit itself states the answer), from its own words: what the gate reads."""
        model = self.support if self.support is not None else self.unit
        return model.probabilities(x, FEATURES)

    def answerable(self, q: np.ndarray) -> float:
        """P(the evidence answers the question) from a :data:`QUESTION_FEATURES` vector."""
        return float(self.gate.probabilities(q.reshape(1, -1), QUESTION_FEATURES)[0])

    def threshold(self, preset: str) -> float:
        if preset == "off":
            return 0.0
        if preset not in self.thresholds:
            raise ValueError(
                f"unknown gate preset {preset!r}: use strict, balanced, lenient or off"
            )
        return self.thresholds[preset]
