"""Head-swap probes: answerable questions whose asked thing is swapped for a word the evidence
lacks ("X分布在哪些地区" -> "X分布在哪些<noun>"), asked on the same evidence; value-swap probes:
the same with a date the question states swapped for one the evidence lacks ("2021年10月" ->
"2021年3月"), so that the question asks about a period the evidence does not cover.

They are the near misses where the entity *is* there and the asked detail is not, made the same
way for any knowledge base: the replacement is a noun taken from other passages of the same
knowledge base, chosen so that none of the question's evidence contains it. No word list and no
template of any data set is involved. Used as negatives when fitting the gate
(:mod:`.answer_fit`) and reported per domain; built (and cached) on first use by the fit.
"""

from __future__ import annotations

import logging
import pickle
import random
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

# the pattern stated_values reads a year and month with: a swap must keep the form it reads
from rag_app.answer.features import _YEAR_MONTH, any_value_in, stated_values
from rag_app.answer.locator import AnswerLocator
from rag_app.retrieval.record import chunk_node, record_of
from training.answer_features import (
    Example,
    examples,
    feature_locator,
    feature_version,
    load_examples,
    probe_example,
)
from training.dev_data import DevData

logger = logging.getLogger(__name__)

PER_HALF = 300
# data sets whose labels mark the answer units precisely enough to cut them out
EXCISED_SETS = ("cmrc_trial_zh", "retqa_tables_zh", "dragonball_zh")


def _nouns(texts: list[str], limit: int = 4000) -> list[str]:
    import jieba.posseg

    out: dict[str, None] = {}
    for text in texts:
        for w in jieba.posseg.lcut(text[:400]):
            if w.flag == "n" and 2 <= len(w.word) <= 3:
                out[w.word] = None
        if len(out) >= limit:
            break
    return list(out)


def probes(data: DevData, name: str) -> list[Example]:
    """The data set's head-swap probes (cached)."""
    base = [e for e in examples(data, name) if e.kind == "answerable"]
    out_path = data.cache / f"answer-probes-{name}-{feature_version()}.pkl"
    if out_path.exists():
        return load_examples(out_path)
    evidence: dict[str, Any] = pickle.loads((data.cache / f"answer-{name}.pkl").read_bytes())
    rng = random.Random(f"probes:{name}")
    pool_texts = [
        nd.node.get_content() for key in rng.sample(sorted(evidence), min(300, len(evidence)))
        for nd in evidence[key]["nodes"][:2]
    ]  # fmt: skip
    nouns = _nouns(pool_texts)
    with feature_locator(data, name) as locator:
        out = _head_swaps(base, evidence, nouns, locator, rng)
    out_path.write_bytes(pickle.dumps(out))
    logger.info("%s: %d head-swap probes", name, len(out))
    return out


def _head_swaps(
    base: list[Example],
    evidence: dict[str, Any],
    nouns: list[str],
    locator: AnswerLocator,
    rng: random.Random,
) -> list[Example]:
    analyzer = locator.analyzer
    out: list[Example] = []
    count = {"calibration": 0, "check": 0}
    for e in rng.sample(base, len(base)):
        if count[e.half] >= PER_HALF:
            continue
        analysis = analyzer(e.question)
        head = analysis.head
        nodes = evidence[e.qid]["nodes"]
        text = "\n".join(nd.node.get_content() for nd in nodes)
        if not head or len(head) < 2 or head not in text or e.question.count(head) != 1:
            continue
        choices = [n for n in nouns if n not in text and n not in e.question]
        if not choices:
            continue
        question = e.question.replace(head, rng.choice(choices))
        out.append(
            probe_example(locator, e.dataset, e.half, e.qid + "#probe", "probe", question, nodes)
        )
        count[e.half] += 1
    return out


_YEAR = re.compile(r"(\d{4})\s*年")


def swap_candidates(value: str) -> list[str]:
    """Other dates of the form of a stated ``value``: the other months of its year and the same
    month a year or two away for 2021年10月; the years up to three away for 2021年. None for a
    value that is not a date (an amount or an age may sit inside a range the evidence states:
    5001元 is still answered by "5000元以上")."""
    m = _YEAR_MONTH.fullmatch(value)
    if m:
        year, month = int(m.group(1)), int(m.group(2))
        return [f"{year}年{k}月" for k in range(1, 13) if k != month] + [
            f"{year + d}年{month}月" for d in (-2, -1, 1, 2)
        ]
    m = _YEAR.fullmatch(value)
    if m:
        return [f"{int(m.group(1)) + d}年" for d in (-3, -2, -1, 1, 2, 3)]
    return []


def _cached(data: DevData, kind: str, name: str) -> tuple[Path, list[Example] | None]:
    """The cache file of a kind of probe for a data set, and its probes when it exists."""
    path = data.cache / f"answer-{kind}-{name}-{feature_version()}.pkl"
    return path, (load_examples(path) if path.exists() else None)


def _swap_inputs(
    data: DevData, kind: str, name: str
) -> tuple[list[Example], dict[str, Any], random.Random]:
    """What a swap probe is made from: the data set's answerable questions, their cached
    evidence, and a random generator seeded by the kind and the data set."""
    base = [e for e in examples(data, name) if e.kind == "answerable"]
    evidence: dict[str, Any] = pickle.loads((data.cache / f"answer-{name}.pkl").read_bytes())
    return base, evidence, random.Random(f"{kind}:{name}")


def _titled_text(nodes: list[Any]) -> str:
    """The evidence's passages under their heading paths, lower-cased: what a swap must be
    absent from."""
    return "\n".join(
        f"{record_of(nd.node).title_path}\n{nd.node.get_content()}" for nd in nodes
    ).lower()


# a swap of one question: the text it replaces and what may replace it, or None
Swap = tuple[str, list[str]] | None


def _swap_probes(
    data: DevData,
    kind: str,
    name: str,
    suffix: str,
    label: str,
    swapper: Callable[[AnswerLocator, list[Example]], Callable[[Example, Any], Swap]],
) -> list[Example]:
    """Probes of ``kind`` for a data set (cached): its answerable questions in a seeded random
    order, up to PER_HALF a half, each with what ``swapper(locator, questions)`` — a function
    of a question and its evidence nodes giving a :data:`Swap` — finds to swap replaced by one
    of its choices at random, asked on the same evidence."""
    out_path, cached = _cached(data, kind, name)
    if cached is not None:
        return cached
    base, evidence, rng = _swap_inputs(data, kind, name)
    out: list[Example] = []
    count = {"calibration": 0, "check": 0}
    with feature_locator(data, name) as locator:
        swap = swapper(locator, base)
        for e in rng.sample(base, len(base)):
            if count[e.half] >= PER_HALF:
                continue
            nodes = evidence[e.qid]["nodes"]
            found = swap(e, nodes)
            if found is None:
                continue
            old, choices = found
            question = e.question.replace(old, rng.choice(choices))
            out.append(probe_example(locator, e.dataset, e.half, f"{e.qid}#{suffix}", kind,
                                     question, nodes))  # fmt: skip
            count[e.half] += 1
    out_path.write_bytes(pickle.dumps(out))
    logger.info("%s: %d %s probes", name, len(out), label)
    return out


def value_swaps(data: DevData, name: str) -> list[Example]:
    """Answerable questions that state a date their evidence holds, the date swapped for one of
    its form the evidence holds nowhere, asked on the same evidence: a question about another
    period, which should be refused. Trained on only to refit the gate's ``constraint_rival``
    (:func:`.answer_fit.rival_step`), reported per domain."""

    def swapper(locator: AnswerLocator, base: list[Example]) -> Callable[[Example, Any], Swap]:
        lexicon = locator.analyzer.lexicon

        def swap(e: Example, nodes: Any) -> Swap:
            text = lexicon.normalize(_titled_text(nodes))
            held = [
                v for v in stated_values(locator.analyzer(e.question))
                if swap_candidates(v) and e.question.count(v) == 1
                and any_value_in([lexicon.normalize(v)], text) == 1.0
            ]  # fmt: skip
            if not held:
                return None
            choices = [c for c in swap_candidates(held[0]) if any_value_in([c], text) == 0.0]
            return (held[0], choices) if choices else None

        return swap

    return _swap_probes(data, "valueswap", name, "vswap", "value-swap", swapper)


def entity_swaps(data: DevData, name: str) -> list[Example]:
    """Answerable questions whose named subject (an anonymised name such as 张某某, else the longest
    named entity: 《…》, a Latin name, a name jieba tags) their evidence holds, swapped for
    another question's of the same data set that the evidence holds nowhere, asked on the same
    evidence: the knowledge base has X's record, the question asks about Y ("SAP系统多久备份一次"
    of a backup table listing the ERP system). Made the same way for any knowledge base."""

    def swapper(locator: AnswerLocator, base: list[Example]) -> Callable[[Example, Any], Swap]:
        subjects: dict[str, str] = {}  # each question's subject
        for e in base:
            a = locator.analyzer(e.question)
            # the most specific: a name, else the longest entity (a project, not its city)
            subject = (a.names or sorted(a.entities, key=len, reverse=True) or [""])[0]
            if len(subject) >= 2 and e.question.count(subject) == 1:
                subjects[e.qid] = subject
        pool = {kind: sorted({s for s in subjects.values() if _is_name(s) == kind})
                for kind in (True, False)}  # fmt: skip

        def swap(e: Example, nodes: Any) -> Swap:
            subject = subjects.get(e.qid)
            if subject is None:
                return None
            text = _titled_text(nodes)
            if subject.lower() not in text:
                return None
            choices = [
                s for s in pool[_is_name(subject)]
                if s.lower() not in text and s not in e.question and subject not in s
                and _script(s) == _script(subject)
            ]  # fmt: skip
            return (subject, choices) if choices else None

        return swap

    return _swap_probes(data, "entityswap", name, "eswap", "entity-swap", swapper)


def _is_name(subject: str) -> bool:
    return "某" in subject


def _script(text: str) -> str:
    return "latin" if re.fullmatch(r"[\x00-\x7f]+", text) else "han"


def _excise(nodes: list[Any], units: list[Any], y: np.ndarray) -> list[Any]:
    """The evidence with every answer unit cut out of its node's text."""
    from llama_index.core.schema import NodeWithScore

    cuts: dict[int, list[tuple[int, int]]] = {}
    for u, label in zip(units, y, strict=True):
        if label:
            cuts.setdefault(u.source, []).append((u.start, u.end))
    out = []
    for n, node in enumerate(nodes, start=1):
        text = node.node.get_content()
        for start, end in sorted(cuts.get(n, []), reverse=True):
            text = text[:start] + text[end:]
        out.append(NodeWithScore(node=chunk_node(record_of(node.node), text), score=node.score))
    return out


def excised(data: DevData, name: str) -> list[Example]:
    """Answerable questions asked on their own evidence with the answer units cut out: the
    topic, the entity and the document are there, the answer is not."""
    out_path = data.cache / f"answer-excised-{name}-{feature_version()}.pkl"
    if out_path.exists():
        return load_examples(out_path)
    base = [e for e in examples(data, name) if e.kind == "answerable" and e.y.any()]
    evidence: dict[str, Any] = pickle.loads((data.cache / f"answer-{name}.pkl").read_bytes())
    rng = random.Random(f"excised:{name}")
    out: list[Example] = []
    count = {"calibration": 0, "check": 0}
    with feature_locator(data, name) as locator:
        for e in rng.sample(base, len(base)):
            if count[e.half] >= PER_HALF:
                continue
            nodes = evidence[e.qid]["nodes"]
            _, units, _ = locator.features(e.question, nodes)
            if len(units) != len(e.y):
                continue
            cut = _excise(nodes, units, e.y)
            _, units2, x = locator.features(e.question, cut)
            if not units2:
                continue
            out.append(
                Example(name, e.half, e.qid + "#excised", "excised", x,
                        np.zeros(len(units2), dtype=np.int8), [u.text for u in units2], [],
                        e.question, e.frequencies)
            )  # fmt: skip
            count[e.half] += 1
    out_path.write_bytes(pickle.dumps(out))
    logger.info("%s: %d excised-answer probes", name, len(out))
    return out
