"""The dev data the answer model is fitted on, and the knowledge bases built from it.

The shared dev data (``--data``; default :func:`rag_app.config.shared_data_dir`, that is
``RAG_SHARED_DATA`` or ``../shared/data``) holds one folder per data set, each with ``docs/`` and
``qa.jsonl``. The knowledge bases built from it, and what fitting derives from them (evidence,
features, probes, readings), are cached in a cache folder (``--cache``: ``.cache/answer`` by
default; the benchmarks pass their own ``benchmarks/.cache``, whose knowledge bases they share).
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rag_app.config import Settings, shared_data_dir
from rag_app.eval.dataset import QAItem, load_qa

if TYPE_CHECKING:
    from rag_app.kb import KnowledgeBase

logger = logging.getLogger(__name__)

DATASETS = ("cmrc_trial_zh", "dragonball_zh", "laws_zh", "retqa_tables_zh")
DEFAULT_CACHE = Path(".cache/answer")


class MissingDevData(FileNotFoundError):
    """A data set (or what is derived from it) that fitting needs is not there."""


def dataset_folder(shared: Path, name: str) -> Path | None:
    """The data set's folder under ``shared`` when it holds ``docs/`` and ``qa.jsonl``."""
    path = shared / name
    return path if (path / "docs").is_dir() and (path / "qa.jsonl").is_file() else None


def cached_kb(
    cache: Path,
    dataset: str,
    docs: Path,
    *,
    embed_model: Any = None,
    read_only: bool = False,
    **settings: Any,
) -> KnowledgeBase:
    """Open (building on first use) the KB of ``dataset`` cached under ``cache`` with
    ``settings`` (``read_only``: a KB already built is opened without the writer lock)."""
    from rag_app.kb import KnowledgeBase

    defaults = Settings().model_dump()
    settings = {k: v for k, v in settings.items() if defaults.get(k) != v}
    key = json.dumps(settings, sort_keys=True)
    tag = "-".join(f"{k}{v}" for k, v in sorted(settings.items())) or "default"
    path = cache / f"{dataset}-{hashlib.sha1(key.encode()).hexdigest()[:8]}-{tag}"[:120]
    done = path / "INGESTED"
    if read_only and done.exists():
        return KnowledgeBase.open(path, embed_model=embed_model, read_only=True, **settings)
    kb = KnowledgeBase.open(path, embed_model=embed_model, **settings)
    if not done.exists():
        t0 = time.perf_counter()
        logger.info("building KB %s from %s …", path.name, docs)
        report = kb.ingest([docs])
        done.write_text(
            json.dumps(
                {
                    "seconds": round(time.perf_counter() - t0, 1),
                    "chunks": report.total_chunks,
                    "failed": report.failed,
                }
            )
        )
        logger.info("  %d chunks in %.0fs", report.total_chunks, time.perf_counter() - t0)
    return kb


@dataclass(frozen=True)
class DevData:
    """Where the dev data is (``shared``) and where what is built from it is cached."""

    shared: Path
    cache: Path

    @classmethod
    def at(cls, shared: Path | None = None, cache: Path = DEFAULT_CACHE) -> DevData:
        """Both folders made absolute (the cache folder created); ``shared`` defaults to
        :func:`rag_app.config.shared_data_dir`."""
        cache = cache.resolve()
        cache.mkdir(parents=True, exist_ok=True)
        return cls((shared or shared_data_dir()).resolve(), cache)

    def require(self, *names: str) -> dict[str, Path]:
        """Each data set's folder; :class:`MissingDevData` when one is missing."""
        found = {n: dataset_folder(self.shared, n) for n in names}
        missing = [n for n, p in found.items() if p is None]
        if missing:
            raise MissingDevData(f"shared dev data not found for {', '.join(missing)} "
                                 f"under {self.shared}")  # fmt: skip
        return {n: p for n, p in found.items() if p is not None}

    def questions(self, name: str, limit: int | None = None) -> list[QAItem]:
        """The data set's questions (``qa.jsonl``)."""
        return load_qa(self.require(name)[name] / "qa.jsonl", limit=limit)

    def kb(self, name: str, **settings: Any) -> KnowledgeBase:
        """The data set's cached knowledge base (:func:`cached_kb`), built on first use."""
        return cached_kb(self.cache, name, self.require(name)[name] / "docs", **settings)
