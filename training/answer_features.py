"""Unit features and labels of the dev sets' cached evidence (:mod:`.answer_data`).

Labels: a unit is an answer unit when it comes from a gold document and holds the answer --
cmrc_trial_zh: the answer span (or is a sentence of a long answer); dragonball_zh and laws_zh: a
10-character stretch of a gold span; retqa_tables_zh: every cell of a gold row. Near misses and
unanswerable questions have no answer unit. Features are computed by the runtime code
(``AnswerLocator.features``) with the data set's KB for term statistics and the bundled embedding
(unit embeddings cached on disk).
"""

from __future__ import annotations

import hashlib
import json
import logging
import pickle
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

import rag_app
from rag_app.analysis.question import QuestionAnalysis, QuestionAnalyzer
from rag_app.answer.features import FEATURES
from rag_app.answer.locator import AnswerLocator
from rag_app.answer.model import AnswerModel, LinearModel
from rag_app.answer.passage_scorer import cosines
from rag_app.answer.question_features import QUESTION_FEATURES, question_terms
from rag_app.answer.units import AnswerUnit
from rag_app.eval.dataset import QAItem
from rag_app.retrieval.record import record_of
from rag_app.retrieval.stats import TermStatistics
from training.dev_data import DevData, MissingDevData
from training.split import dev_half

logger = logging.getLogger(__name__)

# the rag_app sources the unit features come from (their hash versions the caches)
PACKAGE = Path(rag_app.__file__).resolve().parent
_WS = re.compile(r"\s+")
_ANALYZER = QuestionAnalyzer()
SHINGLE = 10


def squash(text: str) -> str:
    return _WS.sub("", text).replace("**", "")


@dataclass
class Example:
    dataset: str
    half: str
    qid: str
    kind: str  # answerable | unanswerable | near
    x: np.ndarray
    y: np.ndarray
    texts: list[str] = field(default_factory=list)  # unit display texts
    answers: list[str] = field(default_factory=list)
    question: str = ""
    frequencies: dict[str, int] = field(default_factory=dict)

    @property
    def analysis(self) -> QuestionAnalysis:
        return _ANALYZER(self.question)


def _shingles(span: str) -> list[str]:
    s = squash(span)
    if len(s) <= SHINGLE:
        return [s] if len(s) >= 4 else []
    return [s[i : i + SHINGLE] for i in range(0, len(s) - SHINGLE + 1, 3)]


def unit_labels(
    name: str, item: QAItem, units: list[AnswerUnit], gold_node: list[bool]
) -> list[int]:
    out = []
    answers = [squash(a) for a in item.answers if squash(a)]
    shingles = [sh for span in item.gold_spans for sh in _shingles(span)]
    rows = [{squash(str(v)) for v in row.values() if squash(str(v))} for row in item.gold_rows]
    for u in units:
        if not gold_node[u.source - 1]:
            out.append(0)
            continue
        text = squash(u.text)
        hit = False
        if name == "cmrc_trial_zh":
            hit = any(a in text or (len(text) >= 6 and text in a) for a in answers)
        elif name == "retqa_tables_zh":
            cells = {squash(c) for c in u.cells}
            hit = u.kind == "row" and any(r and r <= cells for r in rows)
        else:
            hit = any(sh in text for sh in shingles)
        out.append(1 if hit else 0)
    return out


class EmbedCache:
    def __init__(self, embed_model: Any, path: Path) -> None:
        self.model = embed_model
        self.path = path
        self.vectors: dict[str, np.ndarray] = (
            pickle.loads(path.read_bytes()) if path.exists() else {}
        )
        self.dirty = 0

    def _vec(self, texts: list[str], query: bool) -> list[np.ndarray]:
        keys = [("q:" if query else "p:") + t for t in texts]
        todo = [t for t, k in zip(texts, keys, strict=True) if k not in self.vectors]
        if todo:
            if query:
                got = [self.model.get_query_embedding(t) for t in todo]
            else:
                got = self.model.get_text_embedding_batch(todo)
            for t, v in zip(todo, got, strict=True):
                self.vectors[("q:" if query else "p:") + t] = np.asarray(v, dtype=np.float32)
            self.dirty += len(todo)
        return [self.vectors[k] for k in keys]

    def __call__(self, question: str, texts: list[str]) -> list[float]:
        if not texts:
            return []
        return cosines(self._vec([question], True)[0], np.stack(self._vec(texts, False)))

    def save(self) -> None:
        if self.dirty:
            self.path.write_bytes(pickle.dumps(self.vectors))
            self.dirty = 0


def feature_version() -> str:
    src = "".join(
        (PACKAGE / p).read_text()
        for p in (
            "answer/features.py",
            "answer/units.py",
            "analysis/question.py",
            "analysis/head.py",
            "analysis/english.py",
            "analysis/lexicon.py",
            "analysis/entities.py",
            "analysis/values.py",
            "analysis/lexicon.json",
        )
    )
    return hashlib.sha1(src.encode()).hexdigest()[:10]


def _zero(names: list[str]) -> LinearModel:
    n = len(names)
    return LinearModel(
        features=names, mean=[0.0] * n, scale=[1.0] * n, coef=[0.0] * n, intercept=0.0
    )


def dummy_model() -> AnswerModel:
    """A model that scores nothing: the locator is used for its features only."""
    return AnswerModel(
        version="features-only", unit=_zero(list(FEATURES)), gate=_zero(list(QUESTION_FEATURES)),
        thresholds={"strict": 0.5, "balanced": 0.5, "lenient": 0.5},
    )  # fmt: skip


@contextmanager
def feature_locator(data: DevData, name: str) -> Iterator[AnswerLocator]:
    """A features-only locator over the data set's cached KB, unit embeddings cached on disk."""
    kb = data.kb(name)
    embed = EmbedCache(kb.embed_model, data.cache / f"answer-embeddings-{name}.pkl")
    locator = AnswerLocator(
        dummy_model(), QuestionAnalyzer(), TermStatistics(kb.ledger), threshold=0.5
    )
    locator.extractor.embed = embed
    try:
        yield locator
    finally:
        embed.save()
        kb.close()


def probe_example(
    locator: AnswerLocator,
    dataset: str,
    half: str,
    qid: str,
    kind: str,
    question: str,
    nodes: list[Any],
) -> Example:
    """A question asked on ``nodes`` that they do not answer (a probe: no answer unit), with
    the runtime features and the question's term frequencies in the data set's KB."""
    analysis, units, x = locator.features(question, nodes)
    return Example(dataset, half, qid, kind, x, np.zeros(len(units), dtype=np.int8),
                   [u.text for u in units], [], question,
                   locator.stats.frequencies(question_terms(analysis))[0])  # fmt: skip


class _Unpickler(pickle.Unpickler):
    """Reads examples cached before fitting moved into the package, when the benchmarks'
    ``answer_features`` module defined :class:`Example`."""

    def find_class(self, module: str, name: str) -> Any:
        return super().find_class(__name__ if module == "answer_features" else module, name)


def load_examples(path: Path) -> list[Example]:
    """The examples that :func:`examples` or a probe builder cached in ``path``."""
    with path.open("rb") as file:
        found: list[Example] = _Unpickler(file).load()
    return found


def examples(data: DevData, name: str, *, refresh: bool = False) -> list[Example]:
    """The data set's questions and near misses (its cached evidence) with their unit features
    and labels, cached by the feature sources' version and the evidence file's time."""
    version = feature_version()
    evidence_path = data.cache / f"answer-{name}.pkl"
    if not evidence_path.exists():
        raise MissingDevData(f"no evidence for {name} in {data.cache}: run answer-data first")
    stamp = evidence_path.stat().st_mtime_ns
    out_path = data.cache / f"answer-features-{name}-{version}-{stamp}.pkl"
    if out_path.exists() and not refresh:
        return load_examples(out_path)
    evidence = pickle.loads(evidence_path.read_bytes())
    items = {it.id: it for it in data.questions(name)}
    out: list[Example] = []
    with feature_locator(data, name) as locator:
        for n, (key, entry) in enumerate(evidence.items(), start=1):
            qid, near = (key[:-5], True) if key.endswith("#near") else (key, False)
            item = items.get(qid)
            if item is None:
                continue
            nodes = entry["nodes"]
            analysis, units, x = locator.features(item.question, nodes)
            gold = [
                any(
                    record_of(nd.node).source.replace("\\", "/").endswith("/" + g)
                    for g in item.gold_docs
                )
                for nd in nodes
            ]
            kind = "near" if near else ("answerable" if item.answerable else "unanswerable")
            y = unit_labels(name, item, units, gold) if kind == "answerable" else [0] * len(units)
            out.append(
                Example(name, dev_half(name, qid), qid, kind, x, np.asarray(y, dtype=np.int8),
                        [u.text for u in units], list(item.answers), item.question,
                        locator.stats.frequencies(question_terms(analysis))[0])
            )  # fmt: skip
            if n % 500 == 0:
                logger.info("  features %s: %d/%d", name, n, len(evidence))
    out_path.write_bytes(pickle.dumps(out))
    logger.info(json.dumps({"dataset": name, "examples": len(out), "version": version}))
    return out
