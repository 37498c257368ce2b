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
  (data sets with short answers: cmrc, squad2, retqa);
* **qualified correct**: of the answerable questions whose first line is right (a reference
  answer in it; laws and dragonball, whose answers are long: a 10-character run of a gold span
  in it), those answered with a caveat anyway (each row says which rule qualified it:
  ``rule``; ``hedging.py`` reads them).

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

from rag_app.analysis import QuestionAnalyzer
from rag_app.analysis.names import firm_names
from rag_app.answer.cross_reader import head_threshold
from rag_app.answer.features import stated_values
from rag_app.eval.metrics import squash
from rag_app.kb import KnowledgeBase

SHORT_ANSWERS = {"cmrc_trial_zh", "squad2_trial_zh", "retqa_tables_zh"}


def first_line(answer: str, caveat: str | None) -> str:
    line = answer.splitlines()[0] if answer else ""
    return line[len(caveat) :] if caveat and line.startswith(caveat) else line


def caveat_rule(a: Any) -> str | None:
    """Which rule qualified an answer: an absent stated value, an absent firm name, the cross
    reader's band, the gate's confidence band (None: not qualified)."""
    if not a.caveat:
        return None
    if a.absent_values:
        return "value"
    if a.absent_names:
        return "name"
    return "reading" if "没有找到确切" in a.caveat else "confidence"


def span_overlap(line: str, spans: list[str], run: int = 10) -> bool:
    """The first line shares a run of ``run`` characters (or a whole short span) with a gold
    span: the correctness proxy of the data sets with reference answers (laws, dragonball)."""
    for span in (squash(s) for s in spans):
        if not span or not line:
            continue
        if len(span) <= run and span in line:
            return True
        if any(line[i : i + run] in span for i in range(max(1, len(line) - run + 1))):
            return True
    return False


def record(kb: KnowledgeBase, item: Any, kind: str, doc_ids: list[str] | None) -> dict[str, Any]:
    t0 = time.perf_counter()
    a = kb.ask(item.question, doc_ids=doc_ids)
    line = squash(first_line(a.answer, a.caveat))
    hit = None
    if kind == "answerable" and item.answers and item.answer_match in ("any", "all"):
        hit = any(squash(x) in line for x in item.answers if x)
    elif kind == "answerable" and item.gold_spans and a.outcome != "refused":
        hit = span_overlap(line, item.gold_spans)
    return {
        "id": item.id, "kind": kind, "outcome": a.outcome, "confidence": a.confidence,
        "reading": a.reading, "absent": bool(a.absent_values or a.absent_names),
        "absent_values": a.absent_values, "absent_names": a.absent_names,
        "rule": caveat_rule(a), "question": item.question, "first_line": line[:120],
        "first_line_hit": hit, "correct_by": "answers" if item.answer_match in ("any", "all")
        else "gold_span_overlap", "ms": round((time.perf_counter() - t0) * 1000, 1),
    }  # fmt: skip


def collect(
    name: str,
    limit: int,
    reader: Path | None,
    seed: int,
    cross: bool = True,
    recheck: list[dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """The rows of ``name``'s sampled check-half questions; with ``recheck`` (rows of an earlier
    run, same sample), only the answers a change of the first-line caveat's value and name rules
    can alter are asked again (not refused, and the question states a value or a firm name): the
    other rows are kept as they were."""
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
    earlier = {(r["id"], r["kind"]): r for r in recheck or []}
    analyzer = QuestionAnalyzer()

    def ask(q: Any, kind: str, doc_ids: list[str] | None) -> dict[str, Any]:
        old = earlier.get((q.id, kind))
        if old is not None and (
            old["outcome"] == "refused" or not states_values_or_names(analyzer, q)
        ):
            return {**old, "rechecked": False}
        return record(kb, q, kind, doc_ids)

    out = []
    t0 = time.perf_counter()
    for q in unanswerable:
        out.append(ask(q, "unanswerable", None))
    for q in answerable:
        out.append(ask(q, "answerable", None))
        gold = {by_path[g] for g in q.gold_docs if g in by_path}
        if gold:
            out.append(ask(q, "near_miss", [d for d in all_ids if d not in gold]))
        if len(out) % 100 < 2:
            print(f"  {name}: {len(out)} asked ({time.perf_counter() - t0:.0f}s)", flush=True)
    kb.close()
    return out


def states_values_or_names(analyzer: QuestionAnalyzer, item: Any) -> bool:
    """Whether the question states a value or a firm name (what the caveat's value and name
    rules read)."""
    analysis = analyzer(item.question)
    return bool(stated_values(analysis) or firm_names(analysis))


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
    if hits and all(r.get("correct_by", "answers") == "answers" for r in ans):
        out["first_line"] = round(sum(hits) / len(hits), 4)
    if ans and "rule" in ans[0]:  # rows that say whether the first line is right
        right = [r for r in ans if r["first_line_hit"]]
        out["correct"] = round(len(right) / len(ans), 4)
        out["qualified_correct"] = share(right, "qualified") if right else None
        out["qualified_correct_of_answerable"] = round(
            sum(outcome(r) == "qualified" for r in right) / len(ans), 4
        )
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
    parser.add_argument("--recheck", type=Path, default=None,
                        help="an earlier run's results: ask again only what the caveat's value "
                        "and name rules can change (same --limit and --seed)")  # fmt: skip
    args = parser.parse_args()
    earlier = json.loads(args.recheck.read_text()) if args.recheck else {}
    result: dict[str, Any] = json.loads(args.json.read_text()) if args.json.exists() else {}
    for name in args.datasets:
        old = earlier[name]["rows"] if name in earlier else None
        rows = collect(name, args.limit, args.reader, args.seed, not args.no_cross_reader, old)
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
