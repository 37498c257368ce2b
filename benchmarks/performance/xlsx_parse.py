"""Big spreadsheets: parse time and peak memory of a generated .xlsx, streamed (openpyxl
read_only, a workbook without merged cells) and loaded whole (issue 65).

    .venv/bin/python benchmarks/performance/xlsx_parse.py                 # 100k and 1M rows
    .venv/bin/python benchmarks/performance/xlsx_parse.py --rows 100000 --full-max 1000000

Files (generated, not timed): ``2col``, the issue's file (tenant_fairness.py's ``xlsx-rows``: a
header and N rows of two numbers, about 12 MB at 1M rows), and ``6col``, N rows of six columns
(an id, two Chinese texts, a date text, two numbers; inline strings), for N in ``--rows``.

Timed, each case in a fresh Python process (so that its peak RSS is its own), ``stage``
``parse`` (the reader, ``read_xlsx``) or ``parse+chunk`` (as an ingestion's parse child does,
``parse_and_chunk`` with the default settings): ``seconds`` (wall), ``cpu_s`` (the process's
user + system time: what the wall time comes to on an idle machine; the machine these ran on
is shared, ``load`` its 1-minute load average at the end), ``peak_rss_mb``, the process's peak
RSS, and ``added_rss_mb``, that minus its RSS after the imports. ``stream``: the path a workbook without
merged cells takes now; ``full``: the whole-workbook load (the only path before, and still that of
a workbook with merged cells), run up to ``--full-max`` rows (the 1M-row load takes minutes and
GBs). ``bounded``: the same file through ``parse_bounded`` under the default
``RAG_PARSE_TIMEOUT`` (60 s) and ``RAG_PARSE_MAX_MB``: ok, or its reason.
Writes benchmarks/results/xlsx_parse.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # common.py

from common import ROOT, write_result  # noqa: E402
from tenant_fairness import _cell, _xlsx, xlsx_rows  # noqa: E402

CHILD = """
import json, resource, sys, time
from pathlib import Path
from rag_app.config import Settings
from rag_app.ingestion.isolation import ParseJob, parse_and_chunk
import rag_app.readers.sheets as sheets
from rag_app.text.tokenizer import tokenize
tokenize("预热")  # jieba's dictionary, as the parse child has it
path, stream, stage = Path(sys.argv[1]), sys.argv[2] == "stream", sys.argv[3]
def cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime
with open("/proc/self/statm") as f:
    base = int(f.read().split()[1]) * resource.getpagesize() / 1048576
data = path.read_bytes()
real = sheets.read_xlsx
sheets.read_xlsx = lambda d, n="": real(d, n, stream=stream)
c0, t0 = cpu(), time.perf_counter()
if stage == "parse":
    out = {"chars": len(sheets.read_xlsx(data, path.name).text)}
else:
    job = ParseJob.of(Settings(), data, path.name, doc_id="d", tenant="t", source=str(path))
    out = {"chunks": len(parse_and_chunk(job).nodes)}
wall, used = time.perf_counter() - t0, cpu() - c0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
out.update({"seconds": round(wall, 2), "cpu_s": round(used, 2), "peak_rss_mb": round(peak),
            "added_rss_mb": round(peak - base)})
print(json.dumps(out))
"""


def six_columns(path: Path, n: int) -> None:
    def rows() -> Iterator[str]:
        header = ["编号", "名称", "类别", "日期", "数量", "单价"]
        cells = "".join(_cell(f"{chr(65 + i)}1", h) for i, h in enumerate(header))
        yield f'<row r="1">{cells}</row>'
        for i in range(2, n + 2):
            yield (
                f'<row r="{i}">{_cell(f"A{i}", f"SKU-{i:07d}")}'
                f"{_cell(f'B{i}', f'螺丝型号{i % 1000}号')}{_cell(f'C{i}', f'五金类别{i % 13}')}"
                f"{_cell(f'D{i}', f'2024-{i % 12 + 1:02d}-{i % 28 + 1:02d}')}"
                f'<c r="E{i}"><v>{i % 997}</v></c><c r="F{i}"><v>{(i % 500) / 4}</v></c></row>'
            )

    _xlsx(path, f"A1:F{n + 1}", rows)


def measure(path: Path, way: str, stage: str, timeout: float) -> dict[str, Any]:
    try:
        out = subprocess.run(
            [sys.executable, "-c", CHILD, str(path), way, stage], capture_output=True,
            text=True, timeout=timeout, cwd=ROOT, check=True,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return {"error": f"over {timeout:g} s"}
    except subprocess.CalledProcessError as exc:
        return {"error": exc.stderr.strip().splitlines()[-1][:200]}
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def bounded(path: Path) -> dict[str, Any]:
    """Through the ingestion's parse child, the default limits (what a worker does)."""
    from rag_app.config import Settings
    from rag_app.ingestion.isolation import ParseJob, parse_bounded
    from rag_app.readers import ReaderError

    settings = Settings()
    job = ParseJob.of(settings, path.read_bytes(), path.name, doc_id="d", tenant="t", source="")
    started = time.perf_counter()
    try:
        chunked = parse_bounded(job, timeout=settings.parse_timeout, max_mb=settings.parse_max_mb)
    except ReaderError as exc:
        return {"ok": False, "reason": str(exc), "seconds": round(time.perf_counter() - started)}
    return {
        "ok": True,
        "chunks": len(chunked.nodes),
        "seconds": round(time.perf_counter() - started, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--full-max", type=int, default=100_000, help="largest N loaded whole")
    parser.add_argument("--timeout", type=float, default=600.0, help="per measured case")
    args = parser.parse_args()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.rows:
            for shape, make in (("2col", xlsx_rows), ("6col", six_columns)):
                path = Path(tmp) / f"{shape}-{n}.xlsx"
                make(path, n)
                size_mb = round(path.stat().st_size / 1048576, 1)
                ways = ["stream"] + (["full"] if n <= args.full_max else [])
                for way in ways:
                    for stage in ("parse", "parse+chunk"):
                        row = {"shape": shape, "rows": n, "file_mb": size_mb, "way": way,
                               "stage": stage}  # fmt: skip
                        row.update(measure(path, way, stage, args.timeout))
                        print(row, flush=True)
                        rows.append(row)
                row = {"shape": shape, "rows": n, "file_mb": size_mb, "way": "bounded"}
                row.update(bounded(path))
                print(row, flush=True)
                rows.append(row)
    write_result(
        "xlsx_parse", {"load": round(os.getloadavg()[0], 2), "cpus": os.cpu_count(), "rows": rows}
    )


if __name__ == "__main__":
    main()
