"""The bundled question sets agree with the bundled documents: every gold span and answer of
an answerable question is in its gold document (``data/eval/_check_qa.py``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def check(path: Path) -> subprocess.CompletedProcess[str]:
    """``data/eval/_check_qa.py`` run on ``path``."""
    script = ROOT / "data" / "eval" / "_check_qa.py"
    return subprocess.run(
        [sys.executable, str(script), str(path)], capture_output=True, text=True, check=False
    )


@pytest.mark.parametrize("name", ["sample_qa.jsonl", "lay_qa.jsonl", "lay_policy_qa.jsonl"])
def test_question_set_matches_the_documents(name: str) -> None:
    done = check(ROOT / "data" / "eval" / name)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "OK" in done.stdout


def test_a_span_missing_from_its_document_fails(tmp_path: Path) -> None:
    line = (ROOT / "data" / "eval" / "lay_qa.jsonl").read_text(encoding="utf-8").splitlines()[0]
    broken = tmp_path / "broken.jsonl"
    broken.write_text(line.replace("犹豫期", "冷静期") + "\n", encoding="utf-8")
    done = check(broken)
    assert done.returncode == 1
    assert "span not found" in done.stdout
