"""Evidence for fitting and measuring the answer model: what the answer step sees per question.

For every question of the dev sets (:data:`~training.dev_data.DATASETS`:
cmrc_trial_zh, dragonball_zh, laws_zh, retqa_tables_zh) this runs the real retrieval path of
``kb.ask`` up to the answer step (hybrid retrieval → rerank to the top 5 → neighbour expansion) and
stores the evidence nodes, twice for answerable questions: once over the whole KB and once with
the question's gold documents taken out of scope (``doc_ids``), which makes it a *near miss* that
should be refused.

    python -m training answer-data [--datasets cmrc_trial_zh ...] [--limit N]

Cached in ``<cache>/answer-<dataset>.pkl``; the fit (``answer-model``) reads them.
"""

from __future__ import annotations

import logging
import pickle
import time
from typing import Any

from rag_app.kb import KnowledgeBase
from rag_app.retrieval.scope import Request
from training.dev_data import DevData
from training.split import dev_half

logger = logging.getLogger(__name__)

# at most this many near misses per data set and half (dragonball also has its own unanswerables)
NEAR_MISS_PER_HALF = {"dragonball_zh": 250}


def evidence(kb: KnowledgeBase, question: str, doc_ids: list[str] | None) -> list[Any]:
    return kb.query.engine.evidence(Request.of(question, top_k=5, doc_ids=doc_ids))


def collect(data: DevData, name: str, limit: int | None) -> None:
    """Add the evidence of the data set's questions (and near misses) not yet cached."""
    data.require(name)
    out = data.cache / f"answer-{name}.pkl"
    kb = data.kb(name)
    items = data.questions(name, limit)
    by_path = {d.rel_path: d.doc_id for d in kb.documents.list(limit=None)}
    all_ids = sorted(by_path.values())
    cached: dict[str, Any] = pickle.loads(out.read_bytes()) if out.exists() else {}
    near_count: dict[str, int] = {}
    t0 = time.perf_counter()
    for n, item in enumerate(items, start=1):
        key = item.id
        if not item.question.strip():
            continue
        if key not in cached:
            cached[key] = {
                "half": dev_half(name, item.id),
                "nodes": evidence(kb, item.question, None),
            }
        gold = {by_path[g] for g in item.gold_docs if g in by_path}
        cap = NEAR_MISS_PER_HALF.get(name)
        h = dev_half(name, item.id)
        if item.answerable and gold and (cap is None or near_count.get(h, 0) < cap):
            near_count[h] = near_count.get(h, 0) + 1
            nkey = key + "#near"
            if nkey not in cached:
                scope = [d for d in all_ids if d not in gold]
                cached[nkey] = {"half": h, "nodes": evidence(kb, item.question, scope)}
        if n % 100 == 0:
            logger.info("  %s: %d/%d (%.0fs)", name, n, len(items), time.perf_counter() - t0)
            out.write_bytes(pickle.dumps(cached))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(pickle.dumps(cached))
    kb.close()
    logger.info("%s: %d evidence sets in %.0fs -> %s", name, len(cached),
                time.perf_counter() - t0, out)  # fmt: skip
