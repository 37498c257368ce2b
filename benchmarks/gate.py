"""Evidence gate on the shared dev data: refuse the unanswerable, answer the answerable.

    .venv/bin/python benchmarks/gate.py              # defaults, baselines, sample KB
    .venv/bin/python benchmarks/gate.py --sweep      # + the threshold sweep on the calibration half
    .venv/bin/python benchmarks/gate.py --refresh    # recompute the cached top-5 evidence

``dragonball_zh`` (1,529 questions, 155 unanswerable near misses: "the entity exists, the asked
detail does not") is split deterministically by ``sha1(id) % 2`` into a *calibration* half (the
only one thresholds were tuned on) and a *check* half, reported separately. The bundled sample KB
(``data/knowledge`` + ``data/eval/sample_qa.jsonl``) is reported as a third set.

``retqa_tables_zh`` (783 answerable table look-ups) measures false refusals on tables. Its dev
file holds only ids with ``sha1(id) % 2 == 0`` (the other parity is the held-out part), so it is
split one bit further: ``sha1(id) % 4 == 0`` → calibration, ``== 2`` → check. It has no
unanswerable questions; *near-miss probes* stand in for them: each question whose asked column
matches one of ``PROBE_RULES`` is rewritten to ask for a column its table does not have
("…的容积率" on a price table → "…的物业费"), and is run on the original question's evidence
(the entity is there, the column is not): the gate should refuse it.

The evidence is what the gate sees in ``KnowledgeBase.ask``: hybrid retrieval → LexicalReranker →
top 5 (cached in ``benchmarks/.cache/gate-*.pkl``); the gate then runs with the KB's ledger (its
look-ups in the entity's documents included). Baseline: the best single score threshold (top
dense cosine, or the reranker's query-term coverage of the top passage), chosen on the
calibration half as the threshold that refuses the most unanswerable questions while refusing at
most 5 % of the answerable ones. The gate's own thresholds come from ``--sweep`` under the same
rule, plus: on the sample KB every unanswerable question refused and no answerable one. Writes ``benchmarks/results/gate.json``.
Dev-split figures: part of each source is held out by the team for independent evaluation.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import pickle
import re
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import CACHE, ROOT, kb_for, load_questions, require_shared, write_result  # noqa: E402

from rag_app import KnowledgeBase  # noqa: E402
from rag_app.eval.dataset import QAItem, load_qa  # noqa: E402
from rag_app.postprocess.gate import EvidenceGate  # noqa: E402

MAX_FALSE_REFUSAL = 0.05
SAMPLE_QA = ROOT / "data" / "eval" / "sample_qa.jsonl"
SAMPLE_KB = ROOT / "data" / "knowledge"

# The grid the defaults were chosen from (see ``sweep``): stage 1 the quorum rules and the two
# coverage thresholds, stage 2 the answer-type window, the fuzzy credit and the subject check,
# stage 3 the value checks.
SWEEP: dict[str, list[Any]] = {
    "entity_quorum": [0.5, 1.0],
    "compare_quorum": [0.5, 1.0],
    "min_head_coverage": [0.4, 0.5, 0.6],
    "min_attribute_coverage": [0.3, 0.4, 0.5],
}
SWEEP_STAGE2: dict[str, list[Any]] = {
    "typed_quorum": [0.5, 1.0],
    "type_window": [20, 30],
    "window_credit": [0.6, 0.75],
    "min_subject_coverage": [0.0, 0.3],
}
# stage 3: where the asked value must be (the head's sentence/clause), what kind of value, and
# when "A和B的X分别是多少" needs it for both
SWEEP_STAGE3: dict[str, list[Any]] = {
    "number_scope": ["window", "sentence"],
    "valued_entity_quorum": [0.5, 1.0],
    "unknown_values": [False, True],
    "skip_case_numbers": [False, True],
    "spot_min_weight": [0.0, 0.6],
    "value_kinds": [[], ["money"], ["money", "hours", "country"]],
}
# not swept (rules, each checked on the calibration half by switching it off; see the tests):
# scope_lookup, fuzzy_spots, value_cues, check_members


def half(item_id: str) -> str:
    return (
        "calibration" if int(hashlib.sha1(item_id.encode()).hexdigest(), 16) % 2 == 0 else "check"
    )


def retqa_half(item_id: str) -> str:
    """retqa's dev ids all have sha1 % 2 == 0: split on the next bit."""
    return (
        "calibration" if int(hashlib.sha1(item_id.encode()).hexdigest(), 16) % 4 == 0 else "check"
    )


# near-miss probes: the asked column swapped for one no retqa table has (first matching rule)
PROBE_RULES: list[tuple[str, str]] = [
    (r"容积率", "物业费"),
    (r"绿化覆盖率|绿化率", "物业费"),
    (r"建筑密度", "车位数量"),
    (r"平均房价|房屋成交均价|成交均价|房价|均价", "物业费"),
    (r"拍卖成交价格|成交价格|成交总价", "土地面积"),
    (r"成交了多少套(?:房子|房屋|房产)?", "有多少个停车位"),
    (r"房子数量|房屋成交量|成交量", "停车位数量"),
    (r"营业总成本|营业利润|营业总收入|利润|负债总计|负债合计|总负债|负债总额|资产总计", "员工人数"),
    (r"(?:是否|是不是)(都|均)?(?:属于|为)?(?:一家)?国有企业(?:类别|性质)?", r"是否\1是上市公司"),
    (r"债务违约", "注册资本"),
    (r"风险等级", "注册地址"),
    (r"哪一年成交", "哪一年开盘"),
]


def probes(items: list[QAItem]) -> list[tuple[QAItem, str]]:
    out = []
    for item in items:
        for pattern, repl in PROBE_RULES:
            if re.search(pattern, item.question):
                out.append((item, re.sub(pattern, repl, item.question, count=1)))
                break
    return out


def retqa_report(
    kb: KnowledgeBase, items: list[QAItem], data: dict[str, Any], **settings: Any
) -> dict[str, Any]:
    """False refusals per half (all, and where the gold row is in the top 5), reasons, and the
    near-miss probes refused."""
    from rag_app.eval.metrics import first_hit_rank

    gate = EvidenceGate(ledger=kb.ledger, **settings)
    out: dict[str, Any] = {}
    decisions = {it.id: gate.decide(it.question, data[it.id]["nodes"]) for it in items}
    probed = [(it, q, gate.decide(q, data[it.id]["nodes"]).refused) for it, q in probes(items)]
    for name in ("calibration", "check"):
        group = [it for it in items if retqa_half(it.id) == name]
        hit = [
            it
            for it in group
            if first_hit_rank([n.node.get_content() for n in data[it.id]["nodes"]], it) > 0
        ]
        per_cat: dict[str, list[bool]] = defaultdict(list)
        for it in group:
            per_cat[it.category].append(decisions[it.id].refused)
        near = [r for it, _, r in probed if retqa_half(it.id) == name]
        out[name] = {
            **rates([(it, decisions[it.id].refused) for it in group]),
            "gold_row_in_top5": len(hit),
            "false_refusal_gold_row_in_top5": round(
                sum(decisions[it.id].refused for it in hit) / len(hit), 4
            )
            if hit
            else None,
            "per_category": {
                c: {"n": len(v), "refused": round(sum(v) / len(v), 4)}
                for c, v in sorted(per_cat.items())
            },
            "reasons": dict(
                Counter(decisions[it.id].reason or "passed" for it in group).most_common()
            ),
            "near_miss_probes": len(near),
            "near_miss_probes_refused": round(sum(near) / len(near), 4) if near else None,
            "refused_examples": [
                {"question": it.question, "reason": decisions[it.id].reason}
                for it in group
                if decisions[it.id].refused
            ][:10],
            "passed_probe_examples": [
                q for it, q, r in probed if retqa_half(it.id) == name and not r
            ][:10],
        }
    return out


def kind(item: QAItem) -> str:
    """Question kind from the dragonball id (irrelevant near miss, comparison, integration)."""
    if "irrelevant" in item.id:
        return "irrelevant"
    return "compare" if "compare" in item.id else "integration"


# ----- evidence ----------------------------------------------------------------------------------
def collect(kb: KnowledgeBase, items: list[QAItem], cache: Path | None) -> dict[str, Any]:
    """Top-5 reranked evidence per question (what the gate sees), plus the top dense cosine."""
    from llama_index.core.schema import QueryBundle

    from rag_app.engine import build_query_engine

    if cache is not None and cache.exists():
        data: dict[str, Any] = pickle.loads(cache.read_bytes())
        if all(it.id in data for it in items):
            return data
    parts = build_query_engine(kb, top_k=5)
    data = {}
    t0 = time.perf_counter()
    for n, item in enumerate(items, start=1):
        bundle = QueryBundle(item.question)
        nodes = parts.retriever.retrieve(bundle)
        if parts.reranker is not None:
            nodes = parts.reranker.postprocess_nodes(nodes, query_bundle=bundle)
        dense = parts.retriever.dense(item.question, 1)
        data[item.id] = {"nodes": nodes[:5], "dense_top": dense[0][1] if dense else 0.0}
        if n % 200 == 0:
            print(f"  evidence {n}/{len(items)} ({time.perf_counter() - t0:.0f}s)", flush=True)
    if cache is not None:
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_bytes(pickle.dumps(data))
    return data


# ----- scoring -----------------------------------------------------------------------------------
def rates(rows: list[tuple[QAItem, bool]]) -> dict[str, Any]:
    unans = [r for it, r in rows if not it.answerable]
    ans = [r for it, r in rows if it.answerable]
    return {
        "unanswerable": len(unans),
        "unanswerable_refused": round(sum(unans) / len(unans), 4) if unans else None,
        "answerable": len(ans),
        "false_refusal": round(sum(ans) / len(ans), 4) if ans else None,
    }


def run_gate(
    kb: KnowledgeBase, items: list[QAItem], data: dict[str, Any], **settings: Any
) -> dict[str, Any]:
    gate = EvidenceGate(ledger=kb.ledger, **settings)
    decisions = {}
    times, cpu = [], []
    for item in items:
        t0, c0 = time.perf_counter(), time.process_time()
        decisions[item.id] = gate.decide(item.question, data[item.id]["nodes"])
        times.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.process_time() - c0) * 1000)
    return {"decisions": decisions, "ms": times, "cpu_ms": cpu}


def summarize(items: list[QAItem], decisions: dict[str, Any], split: bool) -> dict[str, Any]:
    groups: dict[str, list[QAItem]] = defaultdict(list)
    for item in items:
        groups[half(item.id) if split else "all"].append(item)
    out: dict[str, Any] = {}
    for name, group in sorted(groups.items()):
        rows = [(it, decisions[it.id].refused) for it in group]
        per_cat: dict[str, list[tuple[QAItem, bool]]] = defaultdict(list)
        reasons: dict[str, Counter[str]] = {"answerable": Counter(), "unanswerable": Counter()}
        for it, refused in rows:
            if split:
                per_cat[f"{it.category}/{kind(it)}"].append((it, refused))
            side = "answerable" if it.answerable else "unanswerable"
            reasons[side][decisions[it.id].reason or "passed"] += 1
        out[name] = {
            **rates(rows),
            "per_category": {
                c: {"n": len(r), "refused": round(sum(x for _, x in r) / len(r), 4)}
                for c, r in sorted(per_cat.items())
            },
            "reasons": {k: dict(v.most_common()) for k, v in reasons.items()},
        }
    return out


def threshold_baseline(items: list[QAItem], data: dict[str, Any], score: str) -> dict[str, Any]:
    """Refuse when one score is below t; t chosen on the calibration half."""

    def value(item: QAItem) -> float:
        rec = data[item.id]
        if score == "dense_top":
            return float(rec["dense_top"])
        nodes = rec["nodes"]
        return float(nodes[0].node.metadata.get("rerank_coverage", 0.0)) if nodes else 0.0

    cal = [it for it in items if half(it.id) == "calibration"]
    candidates = sorted({round(value(it), 4) for it in cal})
    best_t, best = 0.0, (-1.0, 0.0)
    for t in candidates:
        r = rates([(it, value(it) < t) for it in cal])
        if (
            r["false_refusal"] <= MAX_FALSE_REFUSAL
            and (r["unanswerable_refused"], -r["false_refusal"]) > best
        ):
            best_t, best = t, (r["unanswerable_refused"], -r["false_refusal"])
    result: dict[str, Any] = {"score": score, "threshold": best_t}
    for name in ("calibration", "check"):
        group = [it for it in items if half(it.id) == name]
        result[name] = rates([(it, value(it) < best_t) for it in group])
    return result


def sweep(
    kb: KnowledgeBase,
    items: list[QAItem],
    data: dict[str, Any],
    sample: tuple[KnowledgeBase, list[QAItem], dict[str, Any]],
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Three-stage grid search on the calibration half (and the sample KB, our own data).

    Feasible: at most 5 % of the calibration half's answerable questions refused, and the sample
    KB (our own data) all right: every unanswerable question refused, no answerable one. Among
    those: most unanswerable refused on the calibration half, then fewest false refusals, then
    the settings already in place (ties keep them).
    """
    cal = [it for it in items if half(it.id) == "calibration"]
    skb, sitems, sdata = sample
    log: list[dict[str, Any]] = []
    chosen: dict[str, Any] = {}
    for grid in (SWEEP, SWEEP_STAGE2, SWEEP_STAGE3):
        best: tuple[Any, ...] | None = None
        best_settings = chosen
        keys = list(grid)
        current = EvidenceGate(**chosen)
        for values in itertools.product(*grid.values()):
            combo = dict(zip(keys, values, strict=True))
            settings = {**chosen, **combo}
            decisions = run_gate(kb, cal, data, **settings)["decisions"]
            r = rates([(it, decisions[it.id].refused) for it in cal])
            sdec = run_gate(skb, sitems, sdata, **settings)["decisions"]
            sr = rates([(it, sdec[it.id].refused) for it in sitems])
            log.append({"settings": combo, **r, "sample_kb": sr})
            print(f"  {combo} → {r} sample {sr}", flush=True)
            feasible = (
                r["false_refusal"] <= MAX_FALSE_REFUSAL
                and sr["false_refusal"] == 0
                and sr["unanswerable_refused"] == 1
            )
            same = all(getattr(current, k) == v for k, v in combo.items())
            key = (feasible, r["unanswerable_refused"], -r["false_refusal"], same)
            if best is None or key > best:
                best, best_settings = key, settings
        chosen = best_settings
    return chosen, log


# ----- report ------------------------------------------------------------------------------------
def pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f} %"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sweep", action="store_true", help="run the threshold sweep")
    parser.add_argument("--refresh", action="store_true", help="recompute the cached evidence")
    args = parser.parse_args()

    shared = require_shared("dragonball_zh", "retqa_tables_zh")
    path = shared["dragonball_zh"]
    items = load_questions(path)
    kb = kb_for("dragonball_zh", path / "docs")
    cache = CACHE / "gate-dragonball_zh.pkl"
    if args.refresh and cache.exists():
        cache.unlink()
    print(f"dragonball_zh: {len(items)} questions; collecting the top-5 evidence …", flush=True)
    data = collect(kb, items, cache)

    gate = EvidenceGate()
    skip = ("callback_manager", "tenant", "doc_ids")
    defaults = {k: getattr(gate, k) for k in EvidenceGate.model_fields if k not in skip}

    # the bundled sample KB, built fresh (10 s) so that it matches data/knowledge
    sample_items = load_qa(SAMPLE_QA)
    tmp = tempfile.TemporaryDirectory()
    skb = KnowledgeBase.open(Path(tmp.name) / "kb")
    skb.ingest([SAMPLE_KB])
    sdata = collect(skb, sample_items, None)

    settings: dict[str, Any] = {}
    sweep_log: list[dict[str, Any]] = []
    if args.sweep:
        print("sweep on the calibration half (and the sample KB) …", flush=True)
        chosen, sweep_log = sweep(kb, items, data, (skb, sample_items, sdata))
        settings = {k: v for k, v in chosen.items() if defaults.get(k) != v}
        print(f"chosen: {chosen} (differs from the defaults in {settings or 'nothing'})")

    run = run_gate(kb, items, data, **settings)
    dragon = summarize(items, run["decisions"], split=True)
    latency = {}
    for name in ("ms", "cpu_ms"):  # wall clock (shared, busy machine) and CPU time
        ms = sorted(run[name])
        latency[name] = {
            "median": round(statistics.median(ms), 2),
            "mean": round(sum(ms) / len(ms), 2),
            "p90": round(ms[int(0.9 * (len(ms) - 1))], 2),
            "max": round(ms[-1], 2),
        }
    no_lookup = summarize(
        items, run_gate(kb, items, data, **settings, lookup=False)["decisions"], True
    )
    baselines = [threshold_baseline(items, data, s) for s in ("dense_top", "top_coverage")]

    srun = run_gate(skb, sample_items, sdata, **settings)
    sample = summarize(sample_items, srun["decisions"], split=False)["all"]
    sample["refused_answerable"] = [
        it.id for it in sample_items if it.answerable and srun["decisions"][it.id].refused
    ]
    sample["passed_unanswerable"] = [
        it.id for it in sample_items if not it.answerable and not srun["decisions"][it.id].refused
    ]
    sample["reasons_by_id"] = {
        it.id: srun["decisions"][it.id].reason for it in sample_items if not it.answerable
    }
    skb.close()
    tmp.cleanup()

    # tables: false refusals (retqa has no unanswerable questions) and near-miss probes
    ritems = load_questions(shared["retqa_tables_zh"])
    rkb = kb_for("retqa_tables_zh", shared["retqa_tables_zh"] / "docs")
    rcache = CACHE / "gate-retqa_tables_zh.pkl"
    if args.refresh and rcache.exists():
        rcache.unlink()
    print(f"retqa_tables_zh: {len(ritems)} questions; collecting the top-5 evidence …", flush=True)
    rdata = collect(rkb, ritems, rcache)
    retqa = retqa_report(rkb, ritems, rdata, **settings)
    rkb.close()

    print("\n## Evidence gate (dev data; thresholds tuned on the calibration half only)\n")
    print("| set | method | unanswerable refused | answerable refused (false refusal) |")
    print("| --- | --- | --- | --- |")
    for name in ("calibration", "check"):
        r = dragon[name]
        print(
            f"| dragonball {name} ({r['unanswerable']} / {r['answerable']}) | EvidenceGate | "
            f"{pct(r['unanswerable_refused'])} | {pct(r['false_refusal'])} |"
        )
        r = no_lookup[name]
        print(
            f"| dragonball {name} | EvidenceGate, no look-up | {pct(r['unanswerable_refused'])} | "
            f"{pct(r['false_refusal'])} |"
        )
        for b in baselines:
            r = b[name]
            print(
                f"| dragonball {name} | threshold {b['score']} < {b['threshold']} | "
                f"{pct(r['unanswerable_refused'])} | {pct(r['false_refusal'])} |"
            )
    print(
        f"| sample KB ({sample['unanswerable']} / {sample['answerable']}) | EvidenceGate | "
        f"{pct(sample['unanswerable_refused'])} | {pct(sample['false_refusal'])} |"
    )
    for name in ("calibration", "check"):
        r = retqa[name]
        print(
            f"| retqa {name} ({r['near_miss_probes']} probes / {r['answerable']}) | EvidenceGate | "
            f"{pct(r['near_miss_probes_refused'])} (near-miss probes) | {pct(r['false_refusal'])} "
            f"({pct(r['false_refusal_gold_row_in_top5'])} where the gold row is in the top 5) |"
        )
    print("\n### Per category (share refused)\n")
    print("| category | calibration | check |")
    print("| --- | --- | --- |")
    cats = sorted(set(dragon["calibration"]["per_category"]) | set(dragon["check"]["per_category"]))
    for c in cats:
        cells = []
        for name in ("calibration", "check"):
            v = dragon[name]["per_category"].get(c)
            cells.append(f"{pct(v['refused'])} of {v['n']}" if v else "–")
        print(f"| {c} | {cells[0]} | {cells[1]} |")
    print("\n### Reasons\n")
    for name in ("calibration", "check"):
        print(f"- {name}: {dragon[name]['reasons']}")
    print(f"- sample KB: {sample['reasons']}")
    for name in ("calibration", "check"):
        print(f"- retqa {name}: {retqa[name]['reasons']}")
    print(f"\ngate latency per question (wall ms, CPU ms): {latency}")

    out = write_result(
        "gate",
        {
            "note": "development figures: thresholds were tuned on the calibration half only",
            "split": "sha1(id) % 2 == 0 → calibration, else check",
            "max_false_refusal": MAX_FALSE_REFUSAL,
            "settings": {**defaults, **settings},
            "dragonball_zh": dragon,
            "dragonball_zh_without_lookup": no_lookup,
            "baselines": baselines,
            "sample_kb": sample,
            "retqa_tables_zh": {
                "split": "sha1(id) % 4 == 0 → calibration, == 2 → check (dev ids are all even)",
                **retqa,
            },
            "latency": latency,
            "sweep": {"grid": [SWEEP, SWEEP_STAGE2, SWEEP_STAGE3], "runs": sweep_log}
            if sweep_log
            else None,
        },
    )
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
