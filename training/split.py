"""The dev sets' halves, shared by training (the ``training`` package) and the benchmarks:
"calibration" (models are fitted and thresholds chosen on it) and "check" (reported, never tuned
on)."""

from __future__ import annotations

import hashlib


def half(item_id: str) -> str:
    """``sha1(id) % 2``: 0 → "calibration", 1 → "check"."""
    return (
        "calibration" if int(hashlib.sha1(item_id.encode()).hexdigest(), 16) % 2 == 0 else "check"
    )


def dev_half(dataset: str, item_id: str) -> str:
    """:func:`half`, except for retqa_tables_zh, whose dev ids all have ``sha1 % 2 == 0``: it is
    split on the next bit (``sha1 % 4 == 0`` calibration)."""
    if dataset == "retqa_tables_zh":
        n = int(hashlib.sha1(item_id.encode()).hexdigest(), 16)
        return "calibration" if n % 4 == 0 else "check"
    return half(item_id)
