"""The timed passes of :mod:`query_scale` over one KB: ``retrieve`` and ``ask`` (and, if asked, chat
turns) per question, each call timed alone with its per-stage breakdown (``rag_app.retrieval.timing``),
summarised as p50/p95/mean; digests of what came back, memory and disk figures, a profiled pass.
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any

from rag_app import KnowledgeBase
from rag_app.eval.metrics import percentile
from rag_app.retrieval.timing import collect_stages

RETRIEVE_STAGES = ("embed", "chroma", "dense_filter", "keyword", "fuse_nodes")
ASK_STAGES = (
    "engine_build",
    *RETRIEVE_STAGES,
    "rerank",
    "gate",
    "neighbors",
    "synthesis",
)


def summary(values: list[float]) -> dict[str, float]:
    return {
        "p50_ms": round(percentile(values, 50), 1),
        "p95_ms": round(percentile(values, 95), 1),
        "mean_ms": round(sum(values) / max(len(values), 1), 1),
    }


def timed_pass(
    call: Any, questions: list[str]
) -> tuple[list[float], list[dict[str, float]], list[Any]]:
    """Each question through ``call(q, top_k=5)``, timed alone: (ms, stages, results)."""
    times: list[float] = []
    stage_rows: list[dict[str, float]] = []
    results: list[Any] = []
    for q in questions:
        with collect_stages() as stages:
            t0 = time.perf_counter()
            results.append(call(q, top_k=5))
            times.append((time.perf_counter() - t0) * 1000)
        stage_rows.append(stages)
    return times, stage_rows, results


def stage_table(rows: list[dict[str, float]], totals: list[float], names: tuple[str, ...]) -> dict:
    """Per stage p50/p95/mean (ms) over the calls; "other" = total - the named stages.

    When the keyword branch runs beside the dense one (a thread), "keyword" is its own duration
    and "keyword_wait" what the call waited for it after the dense branch; "other" then counts
    the wait, not the overlapped duration."""
    out: dict[str, dict[str, float]] = {}
    for name in (*names, "keyword_wait"):
        values = [r.get(name, 0.0) for r in rows]
        if any(values):
            out[name] = summary(values)

    def serial(r: dict[str, float]) -> float:
        spent = sum(r.get(n, 0.0) for n in names)
        if "keyword_wait" in r:
            spent += r["keyword_wait"] - r.get("keyword", 0.0)
        return spent

    other = [t - serial(r) for r, t in zip(rows, totals, strict=True)]
    out["other"] = summary(other)
    return out


def peak_rss_mb() -> float:
    """This process's peak resident memory so far (VmHWM), in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def disk_mb(path: Path) -> dict[str, float]:
    """MB on disk: the ledger (SQLite with its FTS5 index) and Chroma."""

    def size(p: Path) -> float:
        files = [p] if p.is_file() else [f for f in p.rglob("*") if f.is_file()]
        return round(sum(f.stat().st_size for f in files) / 2**20, 1)

    return {"ledger": size(path / "ledger.db"), "chroma": size(path / "chroma"), "all": size(path)}


def digest(items: list[Any]) -> str:
    return hashlib.sha1(json.dumps(items, ensure_ascii=False).encode()).hexdigest()[:16]


def chat_pass(kb: KnowledgeBase, questions: list[str]) -> dict[str, Any]:
    """Each question as a turn of ``kb.chat`` (the service's /api/chat below HTTP), timed alone:
    even ones open a conversation, odd ones continue it (a second turn: the follow-up step reads
    the previous turn; a question that stands alone is asked as written)."""
    times: list[float] = []
    conversation: str | None = None
    rewritten = 0
    for i, q in enumerate(questions):
        t0 = time.perf_counter()
        turn = kb.chat.turn(
            q, tenant="default", key_id="bench", conversation_id=conversation if i % 2 else None
        )
        times.append((time.perf_counter() - t0) * 1000)
        conversation = turn.conversation_id
        rewritten += turn.resolved_question != q
    return {**summary(times), "turns": len(times), "resolved_differently": rewritten}


def measure(
    kb: KnowledgeBase, warmup: list[str], questions: list[str], chat: bool = False
) -> dict[str, Any]:
    for q in warmup:  # model, jieba, SQLite page cache, Chroma's HNSW segment
        kb.retrieve(q, top_k=5)
        kb.ask(q, top_k=5)
    gc.collect()
    load_before = os.getloadavg()
    retrieve_ms, retrieve_stages, retrieved = timed_pass(kb.retrieve, questions)
    ask_ms, ask_stages, answered = timed_pass(kb.ask, questions)
    chatted = chat_pass(kb, questions) if chat else None
    answers: list[list[Any]] = [
        [answer.answer, answer.refused, answer.reason, [s.chunk_id for s in answer.sources]]
        for answer in answered
    ]
    retrieved = [[s.chunk_id for s in sources] for sources in retrieved]
    extra: dict[str, Any] = {}
    if chatted is not None:
        asked = summary(ask_ms)
        extra = {
            "chat": chatted,
            "chat_p95_over_ask_p95": round(chatted["p95_ms"] / asked["p95_ms"], 3),
        }
    return {
        "retrieve": summary(retrieve_ms),
        "ask": summary(ask_ms),
        **extra,
        "stages": {
            "retrieve": stage_table(retrieve_stages, retrieve_ms, RETRIEVE_STAGES),
            "ask": stage_table(ask_stages, ask_ms, ASK_STAGES),
        },
        "refused": sum(1 for a in answers if a[1]),
        "digest": {"retrieve": digest(retrieved), "ask": digest(answers)},
        "load_average_1_5_15": {
            "before": [round(x, 2) for x in load_before],
            "after": [round(x, 2) for x in os.getloadavg()],
        },
        "_answers": {"retrieved": retrieved, "answers": answers},
    }


def profile_asks(kb: KnowledgeBase, questions: list[str], out: Path) -> None:
    from pyinstrument import Profiler

    profiler = Profiler(interval=0.0005)
    profiler.start()
    for q in questions:
        kb.ask(q, top_k=5)
    profiler.stop()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".txt").write_text(profiler.output_text(unicode=True, show_all=False))
    out.with_suffix(".html").write_text(profiler.output_html())
    print(f"  profile: {out.with_suffix('.txt')}", flush=True)
