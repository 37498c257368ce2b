"""An LLM endpoint that never answers: how long an answer takes (RAG_LLM_BUDGET, issue 65).

    .venv/bin/python benchmarks/performance/llm_budget.py               # the default budget (30 s)
    .venv/bin/python benchmarks/performance/llm_budget.py --budget 5

Setup (not timed): data/knowledge ingested into a temporary knowledge base whose LLM endpoint is
a socket on 127.0.0.1 that accepts connections, counts them and never answers; one refused
question asked first (the LLM is not asked: it loads the models).

Timed, each: an answer (``ask``), a streamed answer (``ask`` with ``on_text``), and a two-turn
conversation (the second turn's follow-up rewrite and its answer share one budget). Each line
gives the seconds, the answer's mode (extractive: the fallback) and the connections the endpoint
saw for it (1: no second try; 0: the budget was already spent); ``synthesis_s`` is the answer's
synthesis stage (the wait on the LLM, then the extractive answer), the rest is retrieval and the
gate (slower on a loaded machine; ``load`` is the 1-minute load average at the end). Before the budget the same
answers took 120-125 s (two tries x 60 s) and a two-turn chat 284 s (issue 65).
Writes benchmarks/results/llm_budget.json.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # common.py

from common import ROOT, write_result  # noqa: E402

from rag_app import KnowledgeBase  # noqa: E402

QUESTION = "出差回来报销材料最晚几天内要交？"
FOLLOWUP = ("出差到一类城市，住宿费每晚最多能报销多少元？", "那二类城市呢？")
REFUSED = "火星基地的氧气配额是多少？"


class DeadEndpoint:
    """Accepts connections on 127.0.0.1, counts them, never answers."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.connections: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"

    def _accept(self) -> None:
        while True:
            try:
                self.connections.append(self.sock.accept()[0])
            except OSError:
                return


def timed(endpoint: DeadEndpoint, name: str, run: Any) -> dict[str, Any]:
    before = len(endpoint.connections)
    started = time.monotonic()
    answer = run()
    seconds = time.monotonic() - started
    synthesis = answer.timings.get("synthesize_ms", 0.0) / 1000
    row = {
        "case": name,
        "seconds": round(seconds, 2),
        "synthesis_s": round(synthesis, 2),  # the wait on the LLM, then the extractive answer
        "mode": answer.mode,
        "connections": len(endpoint.connections) - before,
        "llm_error": answer.llm_error,
    }
    print(
        f"{name:>14}: {seconds:6.2f} s (synthesis {synthesis:5.2f} s)  {answer.mode:<10} "
        f"connections {row['connections']}"
    )
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=float, default=None, help="RAG_LLM_BUDGET (default 30)")
    args = parser.parse_args()
    endpoint = DeadEndpoint()
    extra = {} if args.budget is None else {"llm_budget": args.budget}
    with tempfile.TemporaryDirectory() as tmp:
        kb = KnowledgeBase.open(Path(tmp) / "kb", llm_base_url=endpoint.url, **extra)
        with kb:
            kb.ingest(sorted((ROOT / "data" / "knowledge").iterdir()))
            budget = kb.settings.llm_budget
            kb.ask(REFUSED)  # loads the models; a refusal is not sent to the LLM
            assert not endpoint.connections
            rows = [
                timed(endpoint, "ask", lambda: kb.ask(QUESTION)),
                timed(endpoint, "ask (stream)", lambda: kb.ask(QUESTION, on_text=lambda _: None)),
            ]
            first = kb.chat.turn(FOLLOWUP[0], tenant="default", key_id="bench")
            rows.append(
                timed(
                    endpoint,
                    "chat turn 2",
                    lambda: (
                        kb.chat.turn(
                            FOLLOWUP[1],
                            tenant="default",
                            key_id="bench",
                            conversation_id=first.conversation_id,
                        ).answer
                    ),
                )  # fmt: skip
            )
    within = all(r["seconds"] < budget + 2 for r in rows)
    print(f"budget {budget:g} s: every answer within budget + 2 s: {within}")
    load = round(os.getloadavg()[0], 2)
    write_result(
        "llm_budget",
        {"budget_s": budget, "within_budget_plus_2s": within, "load": load, "rows": rows},
    )


if __name__ == "__main__":
    main()
