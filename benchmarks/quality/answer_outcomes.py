"""The answer step's three outcomes through the whole pipeline, on the dev sets' check halves.

For each data set this asks ``kb.ask`` (hybrid retrieval, rerank, neighbours, gate, cross reader,
synthesis) every sampled check-half question: answerable ones over the whole KB, unanswerable
ones (squad2's, dragonball's) over the whole KB, and answerable ones again with their gold
documents out of scope (a *near miss*: the KB cannot answer it then). Each record keeps the
outcome, the gate's confidence, the cross reader's reading, whether a stated value or name was
absent, and the first line without its caveat, so that any qualifying threshold can be
re-applied offline (``--thresholds``):

* **false refusals**: answerable questions refused;
* **misleading**: questions the KB cannot answer (unanswerable or near miss) answered with no
  first-line caveat;
* **qualified**: answerable questions answered with a caveat (the reader's cost);
* **first line**: answerable questions whose first line (caveat aside) holds a reference answer
  (data sets with short answers: cmrc, squad2, retqa).

    .venv/bin/python benchmarks/quality/answer_outcomes.py --datasets cmrc_trial_zh squad2_trial_zh \
        [--limit 200] [--reader reader.npz] [--bands 0.5 0.6] [--json out.json]

A reader trained by ``python -m training reader`` saw the calibration halves of
all five domains, so figures with ``--reader`` are in-domain (check halves); its
leave-one-domain-out figures are in its file's metadata (``--lodo``).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # common.py

from common import RESULTS, dev_half, kb_for, load_questions, require_shared

from rag_app.answer.cross_reader import head_threshold
from rag_app.eval.metrics import squash
from rag_app.kb import KnowledgeBase

SHORT_ANSWERS = {"cmrc_trial_zh", "squad2_trial_zh", "retqa_tables_zh"}


def first_line(answer: str, caveat: str | None) -> str:
    line = answer.splitlines()[0] if answer else ""
    return line[len(caveat) :] if caveat and line.startswith(caveat) else line


def record(kb: KnowledgeBase, item: Any, kind: str, doc_ids: list[str] | None) -> dict[str, Any]:
    t0 = time.perf_counter()
    a = kb.ask(item.question, doc_ids=doc_ids)
    line = squash(first_line(a.answer, a.caveat))
    hit = None
    if kind == "answerable" and item.answers and item.answer_match in ("any", "all"):
        hit = any(squash(x) in line for x in item.answers if x)
    return {
        "id": item.id, "kind": kind, "outcome": a.outcome, "confidence": a.confidence,
        "reading": a.reading, "absent": bool(a.absent_values or a.absent_names),
        "first_line_hit": hit, "ms": round((time.perf_counter() - t0) * 1000, 1),
    }  # fmt: skip


def collect(
    name: str, limit: int, reader: Path | None, seed: int, cross: bool = True
) -> list[dict[str, Any]]:
    path = require_shared(name)[name]
    built = kb_for(name, path / "docs")  # built once, cached
    where = built.path
    built.close()
    settings: dict[str, Any] = {}
    if reader is not None and cross:
        settings = {"cross_reader": True, "cross_reader_path": reader}
    kb = KnowledgeBase.open(where, read_only=True, **settings)
    by_path = {d.rel_path: d.doc_id for d in kb.documents.list(limit=None)}
    all_ids = sorted(by_path.values())
    items = [q for q in load_questions(path) if dev_half(name, q.id) == "check"]
    random.Random(seed).shuffle(items)
    answerable = [q for q in items if q.answerable][:limit]
    unanswerable = [q for q in items if not q.answerable][:limit]
    out = []
    t0 = time.perf_counter()
    for q in unanswerable:
        out.append(record(kb, q, "unanswerable", None))
    for q in answerable:
        out.append(record(kb, q, "answerable", None))
        gold = {by_path[g] for g in q.gold_docs if g in by_path}
        if gold:
            out.append(record(kb, q, "near_miss", [d for d in all_ids if d not in gold]))
        if len(out) % 100 < 2:
            print(f"  {name}: {len(out)} asked ({time.perf_counter() - t0:.0f}s)", flush=True)
    kb.close()
    return out


def summary(
    rows: list[dict[str, Any]], threshold: float | None, band: float = 0.0
) -> dict[str, Any]:
    """Outcomes when answers read below ``threshold`` (None: the reader off) or whose gate
    confidence is below ``band`` are qualified."""

    def outcome(r: dict[str, Any]) -> str:
        if r["outcome"] == "refused":
            return "refused"
        low = threshold is not None and r["reading"] is not None and r["reading"] < threshold
        low = low or r["confidence"] < band
        return "qualified" if r["absent"] or low else "answered"

    def share(rs: list[dict[str, Any]], what: str) -> float | None:
        return round(sum(outcome(r) == what for r in rs) / len(rs), 4) if rs else None

    ans = [r for r in rows if r["kind"] == "answerable"]
    out: dict[str, Any] = {"answerable": len(ans), "false_refusals": share(ans, "refused"),
                           "qualified": share(ans, "qualified")}  # fmt: skip
    for kind in ("unanswerable", "near_miss"):
        rs = [r for r in rows if r["kind"] == kind]
        if rs:
            out[kind] = {"n": len(rs), "misleading": share(rs, "answered"),
                         "refused": share(rs, "refused")}  # fmt: skip
    hits = [r["first_line_hit"] for r in ans if r["first_line_hit"] is not None]
    if hits:
        out["first_line"] = round(sum(hits) / len(hits), 4)
    ms = sorted(r["ms"] for r in rows)
    out["ask_ms_p50"] = ms[len(ms) // 2] if ms else None
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", nargs="*", default=["cmrc_trial_zh", "squad2_trial_zh"])
    parser.add_argument("--limit", type=int, default=200, help="questions per kind and data set")
    parser.add_argument("--reader", type=Path, default=None, help="a cross reader file")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--thresholds", nargs="*", type=float, default=[])
    parser.add_argument("--bands", nargs="*", type=float, default=[],
                        help="gate confidences below which an answer is qualified")  # fmt: skip
    parser.add_argument("--no-cross-reader", action="store_true", help="ignore --reader's file")
    parser.add_argument("--json", type=Path, default=RESULTS / "answer_outcomes.json")
    args = parser.parse_args()
    result: dict[str, Any] = json.loads(args.json.read_text()) if args.json.exists() else {}
    for name in args.datasets:
        rows = collect(name, args.limit, args.reader, args.seed, not args.no_cross_reader)
        own = {}
        if args.reader is not None:
            default = head_threshold(args.reader)
            own = {f"reader_at_{default:.4f}": summary(rows, default)}
        result[name] = {
            "reader_file": str(args.reader) if args.reader else None,
            "reader_off": summary(rows, None),
            **own,
            **{f"reader_at_{t}": summary(rows, t) for t in args.thresholds},
            **{f"confidence_below_{b}": summary(rows, None, b) for b in args.bands},
            "rows": rows,
        }
        print(name, json.dumps({k: v for k, v in result[name].items() if k != "rows"},
                               ensure_ascii=False, indent=1), flush=True)  # fmt: skip
        args.json.write_text(json.dumps(result, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main()
