"""``python -m rag_app.answer.training reader …``: train the models the answer step ships.

Needs the ``train`` extra (scikit-learn) and the shared dev data (``--data``, default
``../shared/data`` or ``RAG_SHARED_DATA``).
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from rag_app.config import shared_data_dir


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m rag_app.answer.training")
    sub = parser.add_subparsers(dest="what", required=True)
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
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")  # the command's progress
    from rag_app.answer.training.reader import DOMAINS, TrainConfig, default_out, run

    data = args.data or shared_data_dir()
    if not data.is_dir():
        parser.error(f"no dev data at {data}: pass --data or set RAG_SHARED_DATA")
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
    main()
