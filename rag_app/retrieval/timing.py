"""Per-stage timings of one query, collected on demand.

    with collect_stages() as stages:
        kb.ask(question)
    stages  # {"embed": 4.1, "chroma": 6.0, "keyword": 3.2, ...} in milliseconds

The collector lives in a context variable, so concurrent queries (threads, tasks) never mix their
figures. Outside :func:`collect_stages` a :func:`stage` block costs one context-variable look-up.
Stages are meant to be disjoint (not nested): a benchmark reports the rest as "other".
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_current: ContextVar[dict[str, float] | None] = ContextVar("rag_stage_timings", default=None)


@contextmanager
def collect_stages() -> Iterator[dict[str, float]]:
    """Collect the stages run inside the block into the yielded dict (name -> ms, summed)."""
    stages: dict[str, float] = {}
    token = _current.set(stages)
    try:
        yield stages
    finally:
        _current.reset(token)


@contextmanager
def stage(name: str) -> Iterator[None]:
    """Time the block as stage ``name`` when a collector is active (else do nothing)."""
    stages = _current.get()
    if stages is None:
        yield
        return
    t0 = time.perf_counter()
    try:
        yield
    finally:
        stages[name] = stages.get(name, 0.0) + (time.perf_counter() - t0) * 1000
