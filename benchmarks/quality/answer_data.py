"""Evidence for fitting and measuring the answer model, in benchmarks/.cache (where the dev KBs
the other benchmarks share are): ``python -m training answer-data`` (training/answer_data.py,
which describes it; its options are this script's).

    .venv/bin/python benchmarks/quality/answer_data.py [--datasets cmrc_trial_zh ...] [--limit N]

benchmarks/quality/fit_answer_model.py reads it.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # common.py

from common import CACHE, SHARED

from training.__main__ import main
from training.dev_data import MissingDevData

if __name__ == "__main__":
    try:
        main(["answer-data", "--data", str(SHARED), "--cache", str(CACHE), *sys.argv[1:]])
    except MissingDevData as e:
        print(f"skipped: {e}")
