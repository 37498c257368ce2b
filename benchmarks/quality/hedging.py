"""How often a correct answer is hedged: answerable questions whose first line holds a reference
answer (or whose case passes) and that yet carry a first-line caveat ("知识库中没有“X”的记录；
最接近的是：" …), per question set and per rule that qualified them; and, beside it, how often a
question the knowledge base cannot answer is answered with no caveat (misleading).

``sample``: the sample knowledge base (``data/knowledge``, built once into benchmarks/.cache)
on ``data/eval/sample_qa.jsonl``, ``lay_qa.jsonl`` and ``lay_policy_qa.jsonl`` (lay wording over
the same office documents), judged as ``rag eval`` judges them. ``dev``: the rows
``answer_outcomes.py`` recorded on the dev sets' check halves (run it first). Each run is kept
under ``--label`` in the results file, with the qualified-correct cases listed.

    .venv/bin/python benchmarks/quality/answer_outcomes.py --datasets cmrc_trial_zh \\
        squad2_trial_zh dragonball_zh laws_zh retqa_tables_zh --limit 300
    .venv/bin/python benchmarks/quality/hedging.py sample dev --label after [--show]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from answer_outcomes import caveat_rule, first_line

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # common.py

from common import RESULTS, ROOT, kb_for, load_questions  # noqa: F401

from rag_app.eval.dataset import load_qa
from rag_app.eval.metrics import squash
from rag_app.eval.runner import evaluate_question
from rag_app.kb import KnowledgeBase

SAMPLE_SETS = ["sample_qa", "lay_qa", "lay_policy_qa", "hedging_probes"]
RULES = ["value", "name", "reading", "confidence"]
BANDS = [0.0, 0.1, 0.15, 0.2, 0.25, 0.3]


def sample_rows(kb: KnowledgeBase, name: str) -> list[dict[str, Any]]:
    """Each question of ``data/eval/<name>.jsonl`` judged as ``rag eval`` does, with the
    caveat's rule (the answer asked again: the pipeline is deterministic)."""
    rows = []
    for item in load_qa(ROOT / "data" / "eval" / f"{name}.jsonl"):
        rec = evaluate_question(kb, item, k=5)
        a = kb.ask(item.question, top_k=5)
        line = squash(first_line(a.answer, a.caveat))
        rows.append({
            "id": item.id, "kind": "answerable" if item.answerable else "unanswerable",
            "category": item.category, "question": item.question, "outcome": a.outcome,
            "rule": caveat_rule(a), "absent_values": a.absent_values,
            "absent_names": a.absent_names, "confidence": a.confidence,
            "first_line_hit": bool(rec.passed) if item.answerable else None,
            "first_line_holds": any(squash(x) in line for x in item.answers if x) or None,
            "first_line": line[:120], "caveat": a.caveat,
        })  # fmt: skip
    return rows


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Qualified-correct (of the answerable, and of the correct ones), by rule; false refusals;
    misleading per kind of unanswerable question."""
    ans = [r for r in rows if r["kind"] == "answerable"]
    right = [r for r in ans if r["first_line_hit"]]
    hedged = [r for r in right if r["outcome"] == "qualified"]

    def rate(n: int, d: int) -> float | None:
        return round(n / d, 4) if d else None

    out: dict[str, Any] = {
        "answerable": len(ans),
        "correct": len(right),
        "qualified_correct": len(hedged),
        "qualified_correct_of_answerable": rate(len(hedged), len(ans)),
        "qualified_correct_of_correct": rate(len(hedged), len(right)),
        "by_rule": {k: sum(r["rule"] == k for r in hedged) for k in RULES},
        "qualified_wrong": sum(
            r["outcome"] == "qualified" and not r["first_line_hit"] for r in ans
        ),
        "false_refusals": rate(sum(r["outcome"] == "refused" for r in ans), len(ans)),
    }
    for kind in ("unanswerable", "near_miss"):
        rs = [r for r in rows if r["kind"] == kind]
        if rs:
            out[kind] = {
                "n": len(rs),
                "misleading": rate(sum(r["outcome"] == "answered" for r in rs), len(rs)),
                "qualified": rate(sum(r["outcome"] == "qualified" for r in rs), len(rs)),
                "refused": rate(sum(r["outcome"] == "refused" for r in rs), len(rs)),
                "qualified_by_rule": {k: sum(r["rule"] == k for r in rs) for k in RULES},
            }
    return out


def band_tradeoff(rows: list[dict[str, Any]], bands: list[float]) -> dict[str, Any]:
    """What another ``RAG_QUALIFY_CONFIDENCE`` would give, re-applied offline to rows recorded
    at the default (0.3; the value and name caveats as recorded, the cross reader off):
    qualified-correct of the answerable, misleading of the questions the KB cannot answer."""
    ans = [r for r in rows if r["kind"] == "answerable"]
    cannot = [r for r in rows if r["kind"] in ("unanswerable", "near_miss")]

    def qualified(r: dict[str, Any], band: float) -> bool:
        return r["outcome"] != "refused" and (bool(r["absent_values"] or r["absent_names"])
                                              or r["confidence"] < band)  # fmt: skip

    out = {}
    for band in bands:
        hedged = sum(bool(r["first_line_hit"]) and qualified(r, band) for r in ans)
        answered = sum(r["outcome"] != "refused" and not qualified(r, band) for r in cannot)
        out[str(band)] = {
            "qualified_correct_of_answerable": round(hedged / len(ans), 4) if ans else None,
            "misleading": round(answered / len(cannot), 4) if cannot else None,
        }
    return out


def cases(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The correct answers that were qualified, for reading."""
    keep = ("id", "question", "rule", "absent_values", "absent_names", "confidence", "first_line")
    return [
        {k: r.get(k) for k in keep}
        for r in rows
        if r["kind"] == "answerable" and r["first_line_hit"] and r["outcome"] == "qualified"
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", nargs="+", choices=["sample", "dev"])
    parser.add_argument("--label", default="current")
    parser.add_argument("--outcomes", type=Path, default=RESULTS / "answer_outcomes.json")
    parser.add_argument("--show", action="store_true", help="print the qualified-correct cases")
    parser.add_argument("--json", type=Path, default=RESULTS / "hedging.json")
    parser.add_argument("--code", default=None, help="what code ran (default: git HEAD)")
    args = parser.parse_args()
    result: dict[str, Any] = json.loads(args.json.read_text()) if args.json.exists() else {}
    git = args.code or subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                                      capture_output=True, text=True).stdout.strip()  # fmt: skip
    run: dict[str, Any] = {"git": git, "sets": {}}
    rows_by: dict[str, list[dict[str, Any]]] = {}
    if "sample" in args.what:
        kb = kb_for("sample_kb", ROOT / "data" / "knowledge")
        for name in SAMPLE_SETS:
            rows_by[name] = sample_rows(kb, name)
        kb.close()
    if "dev" in args.what:
        data = json.loads(args.outcomes.read_text())
        for name, v in data.items():
            if v["rows"] and "rule" in v["rows"][0]:
                rows_by[name] = v["rows"]
    for name, rows in rows_by.items():
        run["sets"][name] = {**summarize(rows), "cases": cases(rows)}
        if name not in SAMPLE_SETS:
            run["sets"][name]["band_tradeoff"] = band_tradeoff(rows, BANDS)
        summ = {k: v for k, v in run["sets"][name].items() if k not in ("cases", "band_tradeoff")}
        print(name, json.dumps(summ, ensure_ascii=False), flush=True)
        if args.show:
            for c in run["sets"][name]["cases"]:
                print("   ", json.dumps(c, ensure_ascii=False))
    result.setdefault(args.label, {}).update({"code": git})
    result[args.label].setdefault("sets", {}).update(run["sets"])
    args.json.write_text(json.dumps(result, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main()
