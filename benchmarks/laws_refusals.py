"""False refusals on real layperson legal questions: ``kb.ask`` over every laws_zh dev question.

    .venv/bin/python benchmarks/laws_refusals.py [--limit N]

laws_zh's questions (STARD, asked by non-lawyers: "谁可以成为个体工商户？") are all answerable
from the statutes, so every refusal is a false refusal (an answer may still be wrong; this
counts refusals only). The evidence gate was calibrated on dragonball_zh's entity–attribute
questions (benchmarks/gate.py); this measures how it treats a different way of asking. The
questions are split as in benchmarks/gate.py (sha1(id) % 2: 0 calibration, 1 check) and reported
per half, with the gate's reasons, and whether a gold document was among the retrieved top 5.
Writes benchmarks/results/laws_refusals.json. Dev split: part of laws_zh is held out.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import half, kb_for, load_questions, require_shared, write_result  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--limit", type=int, help="only the first N questions")
    args = parser.parse_args()
    data = require_shared("laws_zh")
    kb = kb_for("laws_zh", data["laws_zh"] / "docs")
    questions = load_questions(data["laws_zh"], limit=args.limit)
    stats: dict[str, Counter[str]] = {"calibration": Counter(), "check": Counter()}
    t0 = time.perf_counter()
    for n, item in enumerate(questions, start=1):
        answer = kb.ask(item.question, top_k=5)
        retrieved = kb.retrieve(item.question, top_k=5)
        gold = {g.replace("\\", "/") for g in item.gold_docs}
        gold_hit = any(any(s.source.endswith(g) for g in gold) for s in retrieved)
        c = stats[half(item.id)]
        c["questions"] += 1
        c["gold_in_top5"] += gold_hit
        if answer.refused:
            c["refused"] += 1
            c[f"reason:{answer.reason}"] += 1
            c["refused_with_gold_in_top5"] += gold_hit
        if n % 200 == 0:
            print(f"  {n}/{len(questions)} questions", file=sys.stderr, flush=True)
    kb.close()
    out: dict[str, Any] = {}
    for name, c in stats.items():
        q = c["questions"] or 1
        out[name] = {
            **dict(sorted(c.items())),
            "false_refusal_rate": round(c["refused"] / q, 4),
            "false_refusal_rate_gold_in_top5": round(
                c["refused_with_gold_in_top5"] / (c["gold_in_top5"] or 1), 4
            ),
        }
        print(
            f"{name:12s} {c['refused']}/{c['questions']} refused ({c['refused'] / q:.1%}); "
            f"with a gold document in the top 5: {c['refused_with_gold_in_top5']}/"
            f"{c['gold_in_top5']}; reasons "
            + ", ".join(f"{k[7:]} {v}" for k, v in sorted(c.items()) if k.startswith("reason:"))
        )
    path = write_result(
        "laws_refusals",
        {
            "note": "laws_zh dev questions are all answerable: every refusal is a false refusal",
            "seconds": round(time.perf_counter() - t0, 1),
            "halves": out,
        },
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
