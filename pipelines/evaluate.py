"""Evaluate a knowledge base on a question file: the evaluation pipeline, runnable.

    python -m pipelines.evaluate data/eval/sample_qa.jsonl --docs data/knowledge \
        [--report out/report.md] [--json out/run.json]

(Ingest ``--docs`` into a fresh temporary KB, or use ``--kb``) → run the questions → write the
Markdown/PNG report and the JSON. The stages are in ``rag_app/eval/`` (``pipeline.py`` chains
them; notebooks call :func:`eval_kb`, :func:`evaluate` and ``rag_app.eval.runner.run_eval``
directly); ``rag eval`` is the same with progress bars and the summary table.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rag_app.eval.pipeline import EvalKB, eval_kb, evaluate, relative_sources

__all__ = ["EvalKB", "eval_kb", "evaluate", "relative_sources"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("qa", type=Path, help="questions (JSONL, the shared evaluation schema)")
    parser.add_argument("--docs", type=Path, help="ingest this folder first, into a temporary KB")
    parser.add_argument("--kb", type=Path, help="use (or ingest into) this KB directory")
    parser.add_argument("-k", type=int, default=5, help="top k")
    parser.add_argument("--report", type=Path, help="write a Markdown report (+ PNG plots)")
    parser.add_argument("--json", type=Path, help="write the run as JSON")
    args = parser.parse_args(argv)
    run = evaluate(
        args.qa, docs=args.docs, kb_dir=args.kb, k=args.k, report=args.report, json_path=args.json
    )
    sys.stdout.write(f"{run.overall}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
