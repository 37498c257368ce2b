"""How borderline an answer must be to be qualified: ``RAG_QUALIFY_CONFIDENCE``, chosen
leave-one-domain-out from ``answer_outcomes.py``'s rows.

An answer the gate lets through with a probability below the band gets a first-line caveat
("知识库中可能没有确切的答案；最接近的是："). For each domain D the band is chosen on the other
domains' rows (the largest band on a grid at which no other domain qualifies more than
``--budget`` of its answerable questions), then D's figures are read at that band: what to
expect on documents of your own. The rows are check halves (the gate never saw them).

    .venv/bin/python benchmarks/quality/answer_outcomes.py --datasets cmrc_trial_zh squad2_trial_zh \\
        dragonball_zh laws_zh retqa_tables_zh --limit 100
    .venv/bin/python benchmarks/quality/answer_qualify.py [--budget 0.15]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from answer_outcomes import summary

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # common.py

from common import RESULTS

GRID = [round(0.05 * i, 2) for i in range(0, 20)]


def qualified_share(rows: list[dict[str, Any]], band: float) -> float:
    summ = summary(rows, None, band)
    return float(summ["qualified"] or 0.0)


def choose(rows_by: dict[str, list[dict[str, Any]]], budget: float) -> float:
    """The largest band at which every domain here qualifies at most ``budget`` answerable."""
    ok = [b for b in GRID if all(qualified_share(r, b) <= budget for r in rows_by.values())]
    return max(ok) if ok else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--outcomes", type=Path, default=RESULTS / "answer_outcomes.json")
    parser.add_argument("--budget", type=float, default=0.15,
                        help="most answerable questions a domain may see qualified")  # fmt: skip
    parser.add_argument("--json", type=Path, default=RESULTS / "answer_qualify.json")
    args = parser.parse_args()
    data = json.loads(args.outcomes.read_text())
    rows_by = {name: v["rows"] for name, v in data.items()}
    result: dict[str, Any] = {"budget": args.budget, "all": choose(rows_by, args.budget)}
    for name, rows in rows_by.items():
        band = choose({k: v for k, v in rows_by.items() if k != name}, args.budget)
        result[name] = {"band": band, "off": summary(rows, None), "lodo": summary(rows, None, band),
                        "all": summary(rows, None, result["all"])}  # fmt: skip
        print(name, band, json.dumps(result[name]["lodo"], ensure_ascii=False), flush=True)
    print("band from all domains:", result["all"])
    args.json.write_text(json.dumps(result, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main()
