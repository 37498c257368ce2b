"""Error bars for the answer model's leave-one-domain-out figures: refit each fold on bootstrap
resamples of its training questions and measure the held-out domain each time.

`fit_answer_model.py` (``python -m training answer-model``) reports one fit per
left-out domain. A change to the question analysis or to a feature moves those cells, and the
question is whether it moved them more than refitting on another draw of the same kind of
questions would. Each replicate draws the training examples of every fold with replacement
(seeded by the replicate's number), refits everything (unit, support and gate models, reading
stage, thresholds) and measures the left-out domain's check half at the balanced preset. Uses the evidence cache of `answer_data.py` (5 replicates take about
five minutes on 2 cores once the e5 readings are cached). Takes the fit's options
(``--reader usem3``, …; ``fit_answer_model.py --help``) and their old environment variables.

    .venv/bin/python benchmarks/quality/answer_bootstrap.py [--replicates 5]
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # common.py

from common import CACHE, SHARED, machine, require_shared, write_json, write_result
from fit_answer_model import legacy_options

from training.__main__ import add_fit_options, fit_options
from training.answer_features import feature_version
from training.answer_fit import FitContext, fit
from training.answer_measure import measure
from training.answer_run import dev_examples, left_out_training
from training.dev_data import DATASETS, DevData

CELLS = ("false_refusal", "unanswerable_refused", "near_miss_refused", "offtopic_refused")
RANKED = ("unanswerable", "near", "offtopic")  # kinds whose AUC against the answerable is kept


def summary(runs: list[dict[str, float]]) -> dict[str, dict[str, float]]:
    """Mean, standard deviation, lowest and highest of each cell over the replicates."""
    out = {}
    for key in runs[0]:
        v = np.array([r[key] for r in runs])
        out[key] = {
            "mean": round(float(v.mean()), 4),
            "std": round(float(v.std()), 4),
            "min": round(float(v.min()), 4),
            "max": round(float(v.max()), 4),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replicates", type=int, default=5)
    parser.add_argument("--datasets", nargs="*", default=list(DATASETS))
    parser.add_argument(
        "--json", type=Path, help="write the results here instead of benchmarks/results/"
    )
    add_fit_options(parser)
    args = parser.parse_args([*legacy_options(), *sys.argv[1:]])
    require_shared(*args.datasets)
    ctx = FitContext.of(fit_options(args), DevData.at(SHARED, CACHE))
    data = dev_examples(ctx, args.datasets)
    runs: dict[str, list[dict[str, float]]] = {d: [] for d in data}
    for b in range(args.replicates):
        rng = random.Random(b)
        for d in data:
            check = [e for e in data[d] if e.half == "check"]
            others = left_out_training(data, d)
            drawn = [others[rng.randrange(len(others))] for _ in others]
            lodo = fit(ctx, drawn)
            cells = measure(ctx, lodo, lodo.thresholds["balanced"], check)
            run = {k: float(cells[k]) for k in CELLS if k in cells}
            # the ranking apart from the threshold: how much a refit moves the AUC
            run.update({f"auc_{k}": float(v["auc"]) for k, v in cells["ranking"].items()
                        if k in RANKED})  # fmt: skip
            runs[d].append(run)
            print(b, d, runs[d][-1], flush=True)
    result: dict[str, Any] = {
        "command": " ".join(["benchmarks/quality/answer_bootstrap.py", *sys.argv[1:]]),
        "features": feature_version(),
        "replicates": args.replicates,
        "preset": "balanced",
        "datasets": {d: {"summary": summary(r), "runs": r} for d, r in runs.items()},
    }
    for d, row in result["datasets"].items():
        print(d, {k: (v["mean"], v["std"]) for k, v in row["summary"].items()})
    if args.json:
        path = write_json(
            args.json, {"benchmark": "answer_bootstrap", "machine": machine(), **result}
        )
    else:
        path = write_result("answer_bootstrap", result)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
