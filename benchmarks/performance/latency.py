"""Query latency on the laws_zh dev corpus: ``retrieve`` and extractive ``ask``, p50/p95.

    flock /tmp/rag-bench.lock .venv/bin/python benchmarks/performance/latency.py [--n 200]

Uses the cached structure-chunked KB (built by benchmarks/common.py on first use), warms up the
models and caches, then times each call on its own (mean time per stage from
``rag_app.retrieval.timing``). Run it on a quiet machine, under ``flock /tmp/rag-bench.lock``:
another process on the 2 cores doubles the figures. Writes benchmarks/results/latency.json.
At 10k and 100k chunks: benchmarks/performance/query_scale.py.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # common.py

from common import kb_for, load_questions, require_shared, write_result  # noqa: E402

from rag_app.eval.metrics import percentile  # noqa: E402
from rag_app.retrieval.timing import collect_stages  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=200)
    args = parser.parse_args()
    path = require_shared("laws_zh")["laws_zh"]
    kb = kb_for("laws_zh", path / "docs")
    questions = [q.question for q in load_questions(path)][: args.n]
    for q in questions[:5]:  # warm-up: model, jieba, SQLite and Chroma caches
        kb.ask(q)
    timings: dict[str, list[float]] = {"retrieve": [], "ask": []}
    stages: dict[str, dict[str, float]] = {"retrieve": {}, "ask": {}}
    load_at_start = os.getloadavg()[0]
    for q in questions:
        for name, call in (("retrieve", kb.retrieve), ("ask", kb.ask)):
            with collect_stages() as spent:
                t0 = time.perf_counter()
                call(q, top_k=5)
                timings[name].append((time.perf_counter() - t0) * 1000)
            for stage, ms in spent.items():
                stages[name][stage] = stages[name].get(stage, 0.0) + ms
    result = {
        "corpus_chunks": kb.vectors.count(),
        "questions": len(questions),
        "load_average_at_start": load_at_start,
        "load_average_at_end": os.getloadavg()[0],
    }
    for name, values in timings.items():
        result[name] = {
            "p50_ms": round(percentile(values, 50), 1),
            "p95_ms": round(percentile(values, 95), 1),
            "mean_ms": round(sum(values) / len(values), 1),
        }
        result[name]["stage_mean_ms"] = {
            k: round(v / len(values), 2) for k, v in sorted(stages[name].items())
        }
        print(f"{name:8} p50 {result[name]['p50_ms']:.1f} ms  p95 {result[name]['p95_ms']:.1f} ms")
        print("         " + ", ".join(f"{k} {v}" for k, v in result[name]["stage_mean_ms"].items()))
    print(f"wrote {write_result('latency', result)}")


if __name__ == "__main__":
    main()
