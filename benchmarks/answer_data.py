"""Evidence for fitting and measuring the answer model: what the answer step sees per question.

For every question of the dev sets (``../shared/data``: cmrc_trial_zh, dragonball_zh, laws_zh,
retqa_tables_zh) this runs the real retrieval path of ``kb.ask`` up to the answer step (hybrid
retrieval → rerank to the top 5 → neighbour expansion) and stores the evidence nodes, twice for
answerable questions: once over the whole KB and once with the question's gold documents taken
out of scope (``doc_ids``), which makes it a *near miss* that should be refused.

    .venv/bin/python benchmarks/answer_data.py [--datasets cmrc_trial_zh ...] [--limit N]

Cached in ``benchmarks/.cache/answer-<dataset>.pkl``; benchmarks/fit_answer_model.py reads them.
"""

from __future__ import annotations

import argparse
import pickle
import time
from typing import Any

from common import CACHE, dev_half, kb_for, load_questions, require_shared

from rag_app.kb import KnowledgeBase
from rag_app.retrieval.scope import Request

DATASETS = ("cmrc_trial_zh", "dragonball_zh", "laws_zh", "retqa_tables_zh")
# at most this many near misses per data set and half (dragonball also has its own unanswerables)
NEAR_MISS_PER_HALF = {"dragonball_zh": 250}


def evidence(kb: KnowledgeBase, question: str, doc_ids: list[str] | None) -> list[Any]:
    return kb.engine.evidence(Request.of(question, top_k=5, doc_ids=doc_ids))


def collect(name: str, limit: int | None) -> None:
    path = require_shared(name)[name]
    out = CACHE / f"answer-{name}.pkl"
    kb = kb_for(name, path / "docs")
    items = load_questions(path, limit)
    by_path = {d.rel_path: d.doc_id for d in kb.documents(limit=None)}
    all_ids = sorted(by_path.values())
    data: dict[str, Any] = pickle.loads(out.read_bytes()) if out.exists() else {}
    near_count: dict[str, int] = {}
    t0 = time.perf_counter()
    for n, item in enumerate(items, start=1):
        key = item.id
        if not item.question.strip():
            continue
        if key not in data:
            data[key] = {
                "half": dev_half(name, item.id),
                "nodes": evidence(kb, item.question, None),
            }
        gold = {by_path[g] for g in item.gold_docs if g in by_path}
        cap = NEAR_MISS_PER_HALF.get(name)
        h = dev_half(name, item.id)
        if item.answerable and gold and (cap is None or near_count.get(h, 0) < cap):
            near_count[h] = near_count.get(h, 0) + 1
            nkey = key + "#near"
            if nkey not in data:
                scope = [d for d in all_ids if d not in gold]
                data[nkey] = {"half": h, "nodes": evidence(kb, item.question, scope)}
        if n % 100 == 0:
            print(f"  {name}: {n}/{len(items)} ({time.perf_counter() - t0:.0f}s)", flush=True)
            out.write_bytes(pickle.dumps(data))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(pickle.dumps(data))
    kb.close()
    print(f"{name}: {len(data)} evidence sets in {time.perf_counter() - t0:.0f}s -> {out}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", nargs="*", default=list(DATASETS))
    parser.add_argument("--limit", type=int, default=None, help="questions per data set")
    args = parser.parse_args()
    for name in args.datasets:
        collect(name, args.limit)


if __name__ == "__main__":
    main()
