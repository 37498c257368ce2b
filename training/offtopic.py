"""Off-topic probes: questions of the *other* dev sets asked on this data set's knowledge base.

A user's knowledge base is asked things it was never about (a cookery question of a company's
policies, a statute question of a Wikipedia dump); the near misses and head-swap probes never
show this, because their words are all in the index. Each data set's KB gets ``PER_HALF``
questions per half drawn from the other three sets (each keeps its own calibration/check half),
through the real retrieval path (hybrid retrieval, rerank to 5, neighbour expansion) and the
runtime features. They are negatives for the gate; leave-one-domain-out drops every probe
whose KB *or* whose question comes from the left-out domain (the ``source`` in the id).
Built (and cached) on first use by the fit.
"""

from __future__ import annotations

import logging
import pickle
import random

from training.answer_data import evidence as evidence_nodes
from training.answer_features import (
    Example,
    feature_locator,
    feature_version,
    load_examples,
    probe_example,
)
from training.dev_data import DATASETS, DevData
from training.split import dev_half

logger = logging.getLogger(__name__)

PER_HALF = 150


def source_of(e: Example) -> str:
    """The data set an off-topic probe's question comes from ('' for other examples)."""
    return e.qid.split(":", 1)[0] if e.kind == "offtopic" else ""


def offtopic(data: DevData, name: str) -> list[Example]:
    """The off-topic probes asked of the data set's knowledge base (cached)."""
    out_path = data.cache / f"answer-offtopic-{name}-{feature_version()}.pkl"
    if out_path.exists():
        return load_examples(out_path)
    evidence_path = data.cache / f"answer-offtopic-evidence-{name}.pkl"
    rng = random.Random(f"offtopic:{name}")
    pool = [
        (src, it)
        for src in DATASETS
        if src != name
        for it in data.questions(src)
        if it.question.strip()
    ]
    rng.shuffle(pool)
    count = {"calibration": 0, "check": 0}
    chosen = []
    for src, it in pool:
        h = dev_half(src, it.id)
        if count[h] < PER_HALF:
            count[h] += 1
            chosen.append((src, it, h))
    if evidence_path.exists():
        evidence = pickle.loads(evidence_path.read_bytes())
    else:
        kb = data.kb(name)
        evidence = {
            f"{src}:{it.id}": evidence_nodes(kb, it.question, None) for src, it, _ in chosen
        }
        kb.close()
        evidence_path.write_bytes(pickle.dumps(evidence))
    with feature_locator(data, name) as locator:
        out = [
            probe_example(locator, name, h, f"{src}:{it.id}#offtopic", "offtopic", it.question,
                          evidence[f"{src}:{it.id}"])
            for src, it, h in chosen
        ]  # fmt: skip
    out_path.write_bytes(pickle.dumps(out))
    logger.info("%s: %d off-topic probes", name, len(out))
    return out
