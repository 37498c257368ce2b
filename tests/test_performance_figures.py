"""The README's performance figures are the ones the results files hold
(benchmarks/performance/figures.py --write; whether they are fresh is `make figures`)."""

from __future__ import annotations

import importlib
import json
from typing import Any

import pytest

from tests.scripts import load_script

FIGURES = load_script("benchmarks/performance/figures.py", "performance_figures")
ROWS = importlib.import_module("figure_rows")  # on sys.path once figures.py is loaded
RENDERED = [f for f in FIGURES.FIGURES if f.render is not None]


def _results(figure: Any) -> dict[str, Any]:
    path = FIGURES.RESULTS / figure.results
    if not path.exists():
        pytest.skip(f"{figure.results} is absent")
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("figure", RENDERED, ids=[f.results for f in RENDERED])
def test_readme_shows_the_results_file(figure: Any) -> None:
    data = _results(figure)
    text = figure.render(data, FIGURES.headline(figure, data))
    _, cells = ROWS.figure_cell(FIGURES.README.read_text(encoding="utf-8"), figure.script)
    assert cells[2].strip() == text, (
        f"README's {figure.script} figure differs from {figure.results}: "
        "run benchmarks/performance/figures.py --write"
    )


def test_a_changed_figure_shows_and_only_its_cell_is_replaced() -> None:
    figure = next(f for f in RENDERED if f.results == "service_load_multiprocess.json")
    data = _results(figure)
    data["run"]["total"]["errors"] = 7
    readme = FIGURES.README.read_text(encoding="utf-8")
    text, changed = ROWS.replace_cells(readme, {figure.script: figure.render(data, None)})
    assert [script for script, _, _ in changed] == [figure.script]
    assert "7 errors in" in changed[0][2]
    old, new = readme.split("\n"), text.split("\n")
    assert [i for i, (a, b) in enumerate(zip(old, new, strict=True)) if a != b] == [
        ROWS.figure_cell(readme, figure.script)[0]
    ]


def test_the_files_headline_picks_the_run() -> None:
    ingest = next(f for f in RENDERED if f.results == "ingest_throughput.json")
    run = {"end_to_end": {"chunks_s": 91.5}, "ratio": 0.904}
    data: dict[str, Any] = {
        "runs": {ingest.headline: {"end_to_end": {"chunks_s": 1}, "ratio": 0.1}, "new": run}
    }
    assert FIGURES.headline(ingest, data) == ingest.headline
    data["headline"] = "new"
    assert ingest.render(data, FIGURES.headline(ingest, data)).startswith("92 chunks/s; 0.90 ")
    data["headline"] = "gone"
    with pytest.raises(ValueError, match="'gone' is not one of its runs"):
        ingest.render(data, FIGURES.headline(ingest, data))
    scale = next(f for f in RENDERED if f.results == "query_scale.json")
    chosen = FIGURES.headline(scale, {"headline": {"100000": "x", "5000": "y"}})
    assert chosen == {**scale.headline, "100000": "x"}  # only the sizes the row shows


def test_numbers_round_half_up() -> None:
    assert [ROWS.num(194.5), ROWS.num(0.95, 1), ROWS.num(0.848, 2)] == ["195", "1.0", "0.85"]
    assert ROWS.span([0.72, 0.95, 0.91]) == "0.7–1.0"
    assert ROWS.span([3.41, 3.44]) == "3.4"
