"""The README's performance figures as text, from the results files (``figures.py --write``).

Each ``render_*`` function takes a results file's JSON and the run it shows (``headline``: the
file's top-level ``"headline"`` where it has one, else the default in ``figures.FIGURES``) and
returns the "figure" cell of its row in README.md's "## Current figures" table. ``replace_cells``
puts such texts into the table, finding each row by the benchmark script its command cell names.
Only what the results file holds is rendered; numbers round half up, as written by hand.
"""

from __future__ import annotations

import re
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

SECTION = "## Current figures"
CELL = re.compile(r"(?<!\\)\|")  # a cell border (an escaped \| is text)


def num(value: float, places: int = 0) -> str:
    """``value`` rounded half up to ``places`` decimals (194.5 → 195, 0.95 → 1.0)."""
    return str(Decimal(str(value)).quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP))


def span(values: list[float], places: int = 1) -> str:
    """ "low–high" (one value when they round alike)."""
    low, high = num(min(values), places), num(max(values), places)
    return low if low == high else f"{low}–{high}"


def labelled(data: dict[str, Any], label: str, results: str) -> dict[str, Any]:
    """The run ``label`` of ``data["runs"]``, or a ValueError naming the labels there are."""
    runs = data.get("runs") or {}
    if label not in runs:
        raise ValueError(
            f"{results}: headline {label!r} is not one of its runs ({', '.join(runs)})"
        )
    return dict(runs[label])


def p50_p95(timing: dict[str, Any]) -> str:
    return f"{num(timing['p50_ms'])} / {num(timing['p95_ms'])} ms"


def render_query_scale(data: dict[str, Any], headline: dict[str, str]) -> str:
    """query_scale.json; ``headline``: {size: label}, the smallest size the main figure, the
    others "at N chunks retrieve …, ask …" (with the keyword cache's size where it differs)."""
    sizes = sorted(headline, key=int)
    main = labelled(data, headline[sizes[0]], "query_scale.json")["sizes"][sizes[0]]
    text = f"retrieve {p50_p95(main['retrieve'])}, extractive ask {p50_p95(main['ask'])}"
    if "chat" in main:
        text += f", a chat turn {p50_p95(main['chat'])}"
    postings = (main.get("keyword_cache") or {}).get("max_postings")
    for size in sizes[1:]:
        run = labelled(data, headline[size], "query_scale.json")["sizes"][size]
        text += (
            f"; at {run['chunks']:,} chunks retrieve {p50_p95(run['retrieve'])}, "
            f"ask {p50_p95(run['ask'])}"
        )
        cache = (run.get("keyword_cache") or {}).get("max_postings")
        if cache is not None and cache != postings:
            text += f" (`RAG_KEYWORD_CACHE_POSTINGS={cache}`)"
    return text


def render_startup(data: dict[str, Any], _headline: Any = None) -> str:
    """startup.json: the wall time of one `rag ask`, through a server and cold (min–max)."""
    cold = f"{span([r['wall_s'] for r in data['one_question']])} s cold"
    if data.get("median_one_question_wall_s") is not None:
        cold += f", median {num(data['median_one_question_wall_s'], 1)} s"
    if data.get("retrieve_wall_s"):
        cold += f" (`rag retrieve` {span(data['retrieve_wall_s'])} s)"
    served = data.get("one_question_through_server")
    if not served:
        return cold
    return (
        f"{span([r['wall_s'] for r in served])} s with `--server` (a running `rag serve`); {cold}"
    )


def render_ingest(data: dict[str, Any], headline: str) -> str:
    """ingest_throughput.json: the headline run's end-to-end chunks/s and ratio to the raw model."""
    run = labelled(data, headline, "ingest_throughput.json")
    chunks_s = num(run["end_to_end"]["chunks_s"])
    text = f"{chunks_s} chunks/s; {num(run['ratio'], 2)} of the raw embedding model's speed"
    pairs = [r["pair_ratio"] for r in run.get("repeats") or []]
    if len(pairs) > 1:  # the best of each side; each pair's own ratio shows the machine's noise
        text += f" (best of {len(pairs)}; pairs {span(pairs, 2)})"
    return text


def render_memory(data: dict[str, Any], headline: float) -> str:
    """memory.json (a list of runs, no labels): the last completed run of ``headline`` MB."""
    runs = [r for r in data["runs"] if r.get("status") == "ok" and r["size_mb"] == headline]
    if not runs:
        raise ValueError(f"memory.json: no completed run of {headline} MB")
    return f"{num(runs[-1]['peak_rss_mb'])} MB RSS"


def render_tenant_fairness(data: dict[str, Any], _headline: Any = None) -> str:
    """tenant_fairness.json: the small uploads' state and upload-to-SUCCESS times."""
    files = data["files"]
    done = [f for f in files if f["small_state"] == "SUCCESS"]
    text = "SUCCESS" if len(done) == len(files) else f"{len(done)} / {len(files)} SUCCESS"
    if done:
        text += f" in {span([f['small_upload_to_success_s'] for f in done])} s"
    return text


def render_service_load(data: dict[str, Any], _headline: Any = None) -> str:
    """service_load_multiprocess.json: request errors and documents that reached SUCCESS."""
    run = data["run"]
    total, checks = run["total"], run["checks"]
    success = checks["documents"] - checks["documents_not_success"]
    return (
        f"{total['errors']} errors in {total['requests']} requests; "
        f"{success} / {checks['documents_expected']} documents SUCCESS"
    )


def _rows(text: str) -> tuple[int, int]:
    """Start and end of the "## Current figures" section in ``text``."""
    start = text.find(SECTION)
    if start < 0:
        raise ValueError(f"README.md has no {SECTION!r} section")
    end = text.find("\n## ", start + len(SECTION))
    return start, len(text) if end < 0 else end


def figure_cell(text: str, script: str) -> tuple[int, list[str]]:
    """The line number and cells (split at the borders) of the table row whose command cell
    (the third column) names ``script``."""
    start, end = _rows(text)
    first = text[:start].count("\n")
    found = [
        (first + i, cells)
        for i, line in enumerate(text[start:end].split("\n"))
        if line.startswith("|") and len(cells := CELL.split(line)) >= 5 and script in cells[3]
    ]
    if len(found) != 1:
        raise ValueError(f"{len(found)} rows of {SECTION!r} name {script} in their command cell")
    return found[0]


def replace_cells(text: str, figures: dict[str, str]) -> tuple[str, list[tuple[str, str, str]]]:
    """``text`` with the figure cell of each row named by a script in ``figures`` set to its
    text; and (script, old cell, new cell) of each that changed."""
    lines = text.split("\n")
    changed = []
    for script, figure in figures.items():
        number, cells = figure_cell(text, script)
        old = cells[2].strip()
        new = figure.replace("|", "\\|")
        if old != new:
            changed.append((script, old, new))
            cells[2] = f" {new} "
            lines[number] = "|".join(cells)
    return "\n".join(lines), changed
