"""The README's and docs' answer-step figures are the ones the results file holds."""

from __future__ import annotations

import json
from types import ModuleType

import pytest

from tests.scripts import load_script


def _tables() -> ModuleType:
    return load_script("benchmarks/quality/answer_tables.py", "answer_tables")


def test_readme_and_docs_show_the_results_file() -> None:
    tables = _tables()
    results = json.loads(tables.RESULTS.read_text(encoding="utf-8"))
    readme = tables.README.read_text(encoding="utf-8")
    docs = tables.DOCS.read_text(encoding="utf-8")
    new_readme, new_docs = tables.rendered(results, readme, docs)
    assert new_readme == readme, "README's table differs: run benchmarks/quality/answer_tables.py"
    assert new_docs == docs, (
        "docs/answering.md's tables differ: run benchmarks/quality/answer_tables.py"
    )


def test_a_table_is_replaced_up_to_the_blank_line_and_nothing_else() -> None:
    tables = _tables()
    text = "intro\n\n| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |\n\nafter | a | b |\n"
    out = tables.replace_table(text, "| a | b |\n|---|---|\n| 9 | 9 |")
    assert out == "intro\n\n| a | b |\n|---|---|\n| 9 | 9 |\n\nafter | a | b |\n"
    with pytest.raises(ValueError, match="no table"):
        tables.replace_table(text, "| c |\n|---|\n| 1 |")


def test_a_changed_figure_shows() -> None:
    tables = _tables()
    results = json.loads(tables.RESULTS.read_text(encoding="utf-8"))
    first = next(iter(results["table"]))
    results["table"][first]["leave_one_domain_out"]["false_refusal"] = 0.987
    readme = tables.README.read_text(encoding="utf-8")
    new_readme, _ = tables.rendered(results, readme, tables.DOCS.read_text(encoding="utf-8"))
    assert "98.7 %" in new_readme and "98.7 %" not in readme
