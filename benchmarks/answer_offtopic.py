"""Off-topic probes: questions of the *other* dev sets asked on this data set's knowledge base.

A user's knowledge base is asked things it was never about (a cookery question of a company's
policies, a statute question of a Wikipedia dump); the near misses and head-swap probes never
show this, because their words are all in the index. Each data set's KB gets ``PER_HALF``
questions per half drawn from the other three sets (each keeps its own calibration/check half),
through the real retrieval path (hybrid retrieval, rerank to 5, neighbour expansion) and the
runtime features. They are negatives for the gate; leave-one-domain-out drops every probe
whose KB *or* whose question comes from the left-out domain (the ``source`` in the id).

    .venv/bin/python benchmarks/answer_offtopic.py [dataset ...]
"""

from __future__ import annotations

import pickle
import random

from answer_data import DATASETS
from answer_data import evidence as evidence_nodes
from answer_features import CACHE, Example, feature_locator, feature_version, probe_example
from common import dev_half, kb_for, load_questions, require_shared

PER_HALF = 150


def source_of(e: Example) -> str:
    """The data set an off-topic probe's question comes from ('' for other examples)."""
    return e.qid.split(":", 1)[0] if e.kind == "offtopic" else ""


def offtopic(name: str) -> list[Example]:
    out_path = CACHE / f"answer-offtopic-{name}-{feature_version()}.pkl"
    if out_path.exists():
        data: list[Example] = pickle.loads(out_path.read_bytes())
        return data
    evidence_path = CACHE / f"answer-offtopic-evidence-{name}.pkl"
    rng = random.Random(f"offtopic:{name}")
    pool = [
        (src, it)
        for src in DATASETS
        if src != name
        for it in load_questions(require_shared(src)[src])
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
        kb = kb_for(name, require_shared(name)[name] / "docs")
        evidence = {
            f"{src}:{it.id}": evidence_nodes(kb, it.question, None) for src, it, _ in chosen
        }
        kb.close()
        evidence_path.write_bytes(pickle.dumps(evidence))
    with feature_locator(name) as locator:
        out = [
            probe_example(locator, name, h, f"{src}:{it.id}#offtopic", "offtopic", it.question,
                          evidence[f"{src}:{it.id}"])
            for src, it, h in chosen
        ]  # fmt: skip
    out_path.write_bytes(pickle.dumps(out))
    print(f"{name}: {len(out)} off-topic probes")
    return out


if __name__ == "__main__":
    import sys

    for dataset in sys.argv[1:] or list(DATASETS):
        offtopic(dataset)
