"""Markdown tables of benchmarks/results/formats_<set>.json (every run label, every format).

.venv/bin/python benchmarks/formats/table.py [retqa_tables_zh laws_zh]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parents[1] / "results"


def pct(x: float | None) -> str:
    return "" if x is None else f"{x:.3f}"


def retqa_rows(run: dict[str, Any]) -> list[str]:
    out = []
    for fmt, e in run["formats"].items():
        a = e["retrieval"]["ALL"]
        ask = e.get("ask", {})
        c, i = e["chunks"], e["ingest"]
        out.append(
            f"| {fmt} | {pct(a['row@5'])} | **{pct(a['row_with_header@5'])}** | "
            f"{pct(ask.get('refused'))} / {pct(ask.get('refused_or_hedged'))} | "
            f"{c['chunks_with_header']} / {c['chunks_with_page_footer']} / "
            f"{c['chunks_with_cut_word']} of {c['chunks']} | {i['seconds']} s "
            f"({i.get('speed_vs_md', '')}×) |"
        )
    return out


def dev_recall(r: dict[str, Any]) -> dict[str, float]:
    """The dev questions' Recall@5 (every category but the generated 第N条 questions)."""
    cats = [m for g, m in r.items() if g not in ("ALL", "misses", "article_number_question")]
    n = sum(m["n"] for m in cats)
    return {
        key: round(sum(m[key] * m["n"] for m in cats) / n, 4)
        for key in ("recall@5", "recall@5_zero_as_ling")
        if n and all(key in m for m in cats)
    }


def laws_rows(run: dict[str, Any]) -> list[str]:
    out = []
    for fmt, e in run["formats"].items():
        r = e["retrieval"]
        art = r.get("article_number_question", {})
        law = dev_recall(r)
        c, i = e["chunks"], e["ingest"]
        out.append(
            f"| {fmt} | **{pct(law.get('recall@5'))}** ({pct(law.get('recall@5_zero_as_ling'))}) | "
            f"**{pct(art.get('recall@5'))}** ({pct(art.get('recall@5_zero_as_ling'))}) | "
            f"{c['chunks_with_header']} / {c['chunks_with_page_footer']} / "
            f"{c['chunks_with_cut_word']} of {c['chunks']} | {i['seconds']} s "
            f"({i.get('speed_vs_md', '')}×) |"
        )
    return out


def main() -> None:
    for name in sys.argv[1:] or ["retqa_tables_zh", "laws_zh"]:
        path = RESULTS / f"formats_{name}.json"
        if not path.exists():
            continue
        data = json.loads(path.read_text())
        q = data["questions"]
        print(f"\n**{name}** — {data['subset']}; {q['retrieval']} questions, {q['asked']} asked\n")
        if name == "retqa_tables_zh":
            print("| run · format | answer row @5 | row with header @5 | refused / refused or hedged "
                  "| chunks with running header / page footer / cut word | ingest (md ÷ this) |")  # fmt: skip
        else:
            print("| run · format | dev questions: gold article @5 (〇 as 零) | 第N条 questions @5 "
                  "(〇 as 零) | chunks with running header / page footer / cut word "
                  "| ingest (md ÷ this) |")  # fmt: skip
        print("|---|---|---|---|---|" + ("---|" if name == "retqa_tables_zh" else ""))
        for label, run in data["runs"].items():
            rows = retqa_rows(run) if name == "retqa_tables_zh" else laws_rows(run)
            print("\n".join(f"| {label} · {r[2:]}" for r in rows))
            print(f"<!-- {label}: {run['git']} -->")


if __name__ == "__main__":
    main()
