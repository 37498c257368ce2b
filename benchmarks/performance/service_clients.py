"""The service benchmarks' clients: documents to upload, question askers, upload polling and
the summaries of what they measured (shared by ``service_load.py`` and
``service_multiprocess.py``, which import this and not each other)."""

from __future__ import annotations

import os
import random
import shutil
import socket
import sys
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # common.py

from common import ROOT

from rag_app.eval.metrics import percentile

SAMPLE_KB = ROOT / "data" / "knowledge"
SAMPLE_QA = ROOT / "data" / "eval" / "sample_qa.jsonl"

# Phrases for the generated upload documents (the content is made unique by ids and numbers).
TOPICS = [
    "差旅报销",
    "信息安全",
    "数据备份",
    "员工入职",
    "设备采购",
    "会议管理",
    "培训计划",
    "合同审批",
]
PHRASES = [
    "申请人应在规定时间内提交材料",
    "部门负责人负责审核并签字确认",
    "超过标准的部分由个人承担",
    "相关记录须保存不少于{n}年",
    "每季度由管理部门组织一次检查",
    "发现问题应在{n}个工作日内整改",
    "单笔金额超过{n}元的须经总经理批准",
    "系统账号每{n}天须修改一次密码",
]


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def rag_cmd() -> list[str]:
    exe = Path(sys.executable).parent / "rag"
    if exe.exists():
        return [str(exe)]
    found = shutil.which("rag")
    return [found] if found else [sys.executable, "-m", "rag_app.cli"]


def env() -> dict[str, str]:
    out = dict(os.environ)
    out.setdefault("HF_HUB_OFFLINE", "1")
    out.setdefault("ANONYMIZED_TELEMETRY", "False")
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def make_document(rng: random.Random, tag: str) -> str:
    topic = rng.choice(TOPICS)
    lines = [f"# {topic}补充规定（{tag}）", ""]
    for section in range(1, 3):
        lines += [f"## 第{section}章 一般规定", ""]
        for article in range(1, 4):
            phrase = rng.choice(PHRASES).format(n=rng.randint(2, 9000))
            lines.append(
                f"第{section * 10 + article}条 {topic}事项中，{phrase}；编号 {tag}-{article}。"
            )
        lines.append("")
    return "\n".join(lines)


@dataclass
class Record:
    op: str
    started: float
    seconds: float
    ok: bool
    status: int | None
    error: str | None = None


@dataclass
class Upload:
    doc_id: str
    accepted_at: float  # wall clock (time.time) at the 202


@dataclass
class ClientState:
    records: list[Record] = field(default_factory=list)
    uploads: list[Upload] = field(default_factory=list)


def client_loop(
    base_url: str,
    key: str,
    questions: list[str],
    upload_share: float,
    deadline: float,
    seed: int,
    state: ClientState,
) -> None:
    rng = random.Random(seed)
    headers = {"Authorization": f"Bearer {key}"}
    with httpx.Client(base_url=base_url, headers=headers, timeout=120.0) as http:
        n = 0
        while time.perf_counter() < deadline:
            n += 1
            upload = rng.random() < upload_share
            t0 = time.perf_counter()
            status, error, ok = None, None, False
            try:
                if upload:
                    tag = f"{seed}-{n}-{uuid.uuid4().hex[:8]}"
                    body = make_document(rng, tag).encode()
                    r = http.post(
                        "/api/documents",
                        files={"file": (f"load-{tag}.md", body, "text/markdown")},
                    )
                    status, ok = r.status_code, r.status_code == 202
                    if ok:
                        state.uploads.append(Upload(r.json()["doc_id"], time.time()))
                else:
                    r = http.post("/api/ask", json={"question": rng.choice(questions), "top_k": 5})
                    status, ok = r.status_code, r.status_code == 200
                if not ok:
                    error = f"HTTP {status}: {r.text[:200]}"
            except Exception as exc:  # counted as an error, the client goes on
                error = f"{type(exc).__name__}: {exc}"[:200]
            state.records.append(
                Record(
                    op="upload" if upload else "ask",
                    started=t0,
                    seconds=time.perf_counter() - t0,
                    ok=ok,
                    status=status,
                    error=error,
                )
            )


def summarize_op(records: list[Record], window: float) -> dict[str, Any]:
    ms = [r.seconds * 1000 for r in records]
    errors = [r for r in records if not r.ok]
    out: dict[str, Any] = {
        "requests": len(records),
        "errors": len(errors),
        "throughput_rps": round(len(records) / window, 2) if window > 0 else 0.0,
        "p50_ms": round(percentile(ms, 50), 1) if ms else None,
        "p95_ms": round(percentile(ms, 95), 1) if ms else None,
        "max_ms": round(max(ms), 1) if ms else None,
    }
    if errors:
        out["error_samples"] = sorted({e.error or "" for e in errors})[:5]
    return out


def parse_time(value: str | None) -> float | None:
    if not value:
        return None
    dt = datetime.fromisoformat(value)
    if dt.tzinfo is None:  # SQLite drops the zone; the ledger writes UTC
        dt = dt.replace(tzinfo=UTC)
    return dt.timestamp()


def poll_uploads(
    base_url: str, key: str, uploads: list[Upload], until: float
) -> dict[str, dict[str, Any]]:
    """Latest document state per upload, polling until all are done or ``until`` (monotonic)."""
    headers = {"Authorization": f"Bearer {key}"}
    state: dict[str, dict[str, Any]] = {}
    pending = {u.doc_id for u in uploads}
    with httpx.Client(base_url=base_url, headers=headers, timeout=30.0) as http:
        while pending:
            for doc_id in sorted(pending):
                try:
                    r = http.get(f"/api/documents/{doc_id}")
                except httpx.HTTPError:
                    continue
                if r.status_code == 200:
                    state[doc_id] = r.json()
                    if r.json()["status"] in ("SUCCESS", "FAILED"):
                        pending.discard(doc_id)
            if not pending or time.monotonic() > until:
                break
            time.sleep(0.5)
    return state
