"""Are the performance figures in README.md measured on today's code?

    .venv/bin/python benchmarks/performance/figures.py            # a table: figure, run at, fresh or stale
    .venv/bin/python benchmarks/performance/figures.py --check    # exit 1 when a figure is stale (make figures)
    .venv/bin/python benchmarks/performance/figures.py --write    # the README's figure cells from the results

Every results file written through ``common.write_json`` records its provenance: when it ran,
the command, and a hash of every file of ``rag_app/`` and of the benchmark script. A figure is
*stale* when a file it depends on (``FIGURES`` below: the script and the packages it measures)
changed since its results file was written, or when the file predates provenance. The README's
figures table names each figure's command; ``make bench`` reruns the small versions,
the commands in the table the full ones.

The performance rows' "figure" cells are written from the results files (``render`` below,
``figure_rows.py``), each from the run the file's ``"headline"`` names (``--headline`` of the
scripts that keep labelled runs) or else the spec's ``headline``: ``--write`` rewrites them in
README.md, ``--check`` also fails when one differs (a test checks that too).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # common.py
sys.path.insert(0, str(Path(__file__).resolve().parent))  # figure_rows.py (imported by a test)

from figure_rows import (  # noqa: E402
    render_ingest,
    render_memory,
    render_query_scale,
    render_service_load,
    render_startup,
    render_tenant_fairness,
    replace_cells,
)

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"  # common.RESULTS (common imports rag_app: in main())
README = ROOT / "README.md"

E5 = ("rag_app/e5_model.py", "rag_app/e5_torch.py", "rag_app/e5_numpy.py")
INGEST = ("rag_app/ingestion/", "rag_app/chunking/", "rag_app/readers/", "rag_app/store/",
          "rag_app/embeddings.py", *E5, "rag_app/text/", "rag_app/kb.py")  # fmt: skip
QUERY = ("rag_app/retrieval/", "rag_app/postprocess/", "rag_app/answer/", "rag_app/synthesis/",
         "rag_app/analysis/", "rag_app/engine.py", "rag_app/query.py", "rag_app/store/",
         "rag_app/embeddings.py", *E5, "rag_app/text/", "rag_app/kb.py")  # fmt: skip
SERVICE = ("rag_app/service/", "rag_app/cli/", *INGEST, *QUERY)


@dataclass(frozen=True)
class Figure:
    script: str  # as the README's command names it
    results: str  # under benchmarks/results/
    depends: tuple[str, ...]  # files and folders (a trailing /) of the package
    # the README row's figure cell from the results JSON and the run to show (None: not rendered)
    render: Callable[[dict[str, Any], Any], str] | None = None
    headline: Any = None  # that run when the file has no "headline"


FIGURES = [
    Figure("benchmarks/quality/retrieval.py", "retrieval_laws.json", QUERY),
    Figure("benchmarks/quality/retrieval.py", "retrieval_retqa.json", QUERY),
    # per size the row shows, the label of its run
    Figure("benchmarks/performance/query_scale.py", "query_scale.json", QUERY,
           render_query_scale, {"100000": "chat", "1000000": "1m-cache60m"}),
    Figure("benchmarks/performance/ingest_throughput.py", "ingest_throughput.json", INGEST,
           render_ingest, "after"),
    # no labels: the last completed run of this many MB
    Figure("benchmarks/performance/memory.py", "memory.json", INGEST, render_memory, 100),
    Figure("benchmarks/performance/service_load.py", "service_load_multiprocess.json", SERVICE,
           render_service_load),
    Figure("benchmarks/performance/tenant_fairness.py", "tenant_fairness.json", SERVICE,
           render_tenant_fairness),
    Figure("benchmarks/performance/startup.py", "startup.json", SERVICE, render_startup),
]  # fmt: skip


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
    labelled = isinstance(data.get("runs"), dict)
    origin = (run_provenance(figure, data) if labelled else data.get("provenance")) or {}
    recorded = origin.get("sources")
    run_at = str(origin.get("run_at") or data.get("date") or "")
    if not recorded:
        which = "its headline run" if labelled else "it"
        return run_at, "stale", [f"({which} was written before provenance was recorded)"]
    names = {p for p in (*now, *recorded) if _relevant(p, figure)}
    changed = sorted(p for p in names if now.get(p) != recorded.get(p))
    return run_at, "stale" if changed else "fresh", changed


def run_provenance(figure: Figure, data: dict[str, Any]) -> dict[str, Any] | None:
    """The provenance the headline run recorded itself (a file of labelled runs is rewritten
    by every run, so the file's own provenance says when *some* run was made); for a run per
    size, the oldest of them. None when the run has none (older files)."""
    runs = data.get("runs")
    if not isinstance(runs, dict):
        return None
    chosen = headline(figure, data)
    labels = chosen.values() if isinstance(chosen, dict) else [chosen]
    found = [(runs.get(label) or {}).get("provenance") for label in labels]
    if not found or any(not isinstance(f, dict) for f in found):
        return None
    return min(found, key=lambda f: str(f.get("run_at")))


def headline(figure: Figure, data: dict[str, Any]) -> Any:
    """The run ``figure``'s row shows: the results file's "headline", else the spec's; per size
    for a mapping (the sizes the spec names)."""
    chosen = data.get("headline")
    if isinstance(figure.headline, dict):
        return {size: {**figure.headline, **(chosen or {})}[size] for size in figure.headline}
    return figure.headline if chosen is None else chosen


def rendered_cells() -> tuple[dict[str, str], list[str]]:
    """Script → its README row's figure text, for each rendered figure whose results exist;
    and what could not be rendered (a headline not among the runs, a field missing)."""
    cells, errors = {}, []
    for figure in FIGURES:
        path = RESULTS / figure.results
        if figure.render is None or not path.exists():
            continue
        data = json.loads(path.read_text(encoding="utf-8"))
        try:
            cells[figure.script] = figure.render(data, headline(figure, data))
        except (KeyError, ValueError) as e:
            errors.append(f"cannot render {figure.results}: {e!r}")
    return cells, errors


def readme_scripts() -> list[str]:
    """The benchmark scripts the README's performance figures ("## Current figures") name."""
    text = README.read_text(encoding="utf-8")
    text = text.split("## Current figures", 1)[-1].split("\n## ", 1)[0]
    rows = "\n".join(line for line in text.splitlines() if line.startswith("|"))
    return sorted(set(re.findall(r"benchmarks/[a-z_]+\.py", rows)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--check", action="store_true", help="exit 1 when a figure is stale or not the README's"
    )
    parser.add_argument(
        "--write", action="store_true", help="rewrite the README's figure cells from the results"
    )
    args = parser.parse_args()
    from common import source_hashes

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
    cells, errors = rendered_cells()
    readme = README.read_text(encoding="utf-8")
    try:
        text, differ = replace_cells(readme, cells)
    except ValueError as e:  # a row not found
        text, differ = readme, []
        errors.append(str(e))
    for error in errors:
        print(error)
    for script, old, new in differ:
        print(f"differs {script}:\n  README:  {old}\n  results: {new}")
    if args.write and differ:
        README.write_text(text, encoding="utf-8")
        print(f"wrote {len(differ)} figure(s) into README.md")
    failed = stale or unknown or errors or (differ and not args.write)
    return 1 if args.check and failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
