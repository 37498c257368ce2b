"""Are the performance figures in README.md measured on today's code?

    .venv/bin/python benchmarks/performance/figures.py            # a table: figure, run at, fresh or stale
    .venv/bin/python benchmarks/performance/figures.py --check    # exit 1 when a figure is stale (make figures)

Every results file written through ``common.write_json`` records its provenance: when it ran,
the command, and a hash of every file of ``rag_app/`` and of the benchmark script. A figure is
*stale* when a file it depends on (``FIGURES`` below: the script and the packages it measures)
changed since its results file was written, or when the file predates provenance. The README's
figures table names each figure's command; ``make bench`` reruns the small versions,
the commands in the table the full ones.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # common.py

from common import RESULTS, ROOT, source_hashes  # noqa: E402

INGEST = ("rag_app/ingestion/", "rag_app/chunking/", "rag_app/readers/", "rag_app/store/",
          "rag_app/embeddings.py", "rag_app/e5_torch.py", "rag_app/text/", "rag_app/kb.py")  # fmt: skip
QUERY = ("rag_app/retrieval/", "rag_app/postprocess/", "rag_app/answer/", "rag_app/synthesis/",
         "rag_app/analysis/", "rag_app/engine.py", "rag_app/query.py", "rag_app/store/",
         "rag_app/embeddings.py", "rag_app/e5_torch.py", "rag_app/text/", "rag_app/kb.py")  # fmt: skip
SERVICE = ("rag_app/service/", "rag_app/cli/", *INGEST, *QUERY)


@dataclass(frozen=True)
class Figure:
    script: str  # as the README's command names it
    results: str  # under benchmarks/results/
    depends: tuple[str, ...]  # files and folders (a trailing /) of the package


FIGURES = [
    Figure("benchmarks/quality/retrieval.py", "retrieval_laws.json", QUERY),
    Figure("benchmarks/quality/retrieval.py", "retrieval_retqa.json", QUERY),
    Figure("benchmarks/performance/query_scale.py", "query_scale.json", QUERY),
    Figure("benchmarks/performance/ingest_throughput.py", "ingest_throughput.json", INGEST),
    Figure("benchmarks/performance/memory.py", "memory.json", INGEST),
    Figure("benchmarks/performance/service_load.py", "service_load_multiprocess.json", SERVICE),
    Figure("benchmarks/performance/tenant_fairness.py", "tenant_fairness.json", SERVICE),
    Figure("benchmarks/performance/startup.py", "startup.json", SERVICE),
]


def _relevant(path: str, figure: Figure) -> bool:
    return path == figure.script or any(
        path.startswith(d) if d.endswith("/") else path == d for d in figure.depends
    )


def status(figure: Figure, now: dict[str, str]) -> tuple[str, str, list[str]]:
    """(run at, fresh | stale | missing, the changed files)."""
    path = RESULTS / figure.results
    if not path.exists():
        return "", "missing", []
    data = json.loads(path.read_text(encoding="utf-8"))
    recorded = (data.get("provenance") or {}).get("sources")
    run_at = str((data.get("provenance") or {}).get("run_at") or data.get("date") or "")
    if not recorded:
        return run_at, "stale", ["(written before provenance was recorded)"]
    names = {p for p in (*now, *recorded) if _relevant(p, figure)}
    changed = sorted(p for p in names if now.get(p) != recorded.get(p))
    return run_at, "stale" if changed else "fresh", changed


def readme_scripts() -> list[str]:
    """The benchmark scripts the README's performance figures ("## Current figures") name."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    text = text.split("## Current figures", 1)[-1].split("\n## ", 1)[0]
    rows = "\n".join(line for line in text.splitlines() if line.startswith("|"))
    return sorted(set(re.findall(r"benchmarks/[a-z_]+\.py", rows)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when a figure is stale")
    args = parser.parse_args()
    now = source_hashes((ROOT / "benchmarks").rglob("*.py"))
    stale = 0
    for figure in FIGURES:
        run_at, state, changed = status(figure, now)
        stale += state != "fresh"
        more = f" ({len(changed)} changed: {', '.join(changed[:3])}…)" if changed else ""
        print(f"{state:7} {figure.results:26} {run_at or '-':25}{more}")
    unknown = [s for s in readme_scripts() if s not in {f.script for f in FIGURES}]
    for script in unknown:
        print(f"untracked {script} (named in README.md; add it to FIGURES)")
    return 1 if args.check and (stale or unknown) else 0


if __name__ == "__main__":
    raise SystemExit(main())
