"""Ingest files and folders into a knowledge base: the ingestion pipeline, runnable.

    python -m pipelines.ingest data/knowledge --kb .rag/demo [--tenant default]

Each file goes reader -> structure-aware node parser -> embedding -> ledger + Chroma (see
docs/architecture.md); prints the report (one line per file, then the totals) and exits 1 when a
file failed. The stages are in ``rag_app/ingestion/`` (``pipeline.py`` assembles the LlamaIndex
``IngestionPipeline``, ``service.py`` runs it over the files); this is the same as ``rag ingest``
without the progress bar, for scripts that start from the pipelines folder.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rag_app.kb import KnowledgeBase
from rag_app.types import IngestReport


def ingest(paths: list[Path], kb_dir: Path | None = None, tenant: str = "default") -> IngestReport:
    """Ingest ``paths`` (files and folders, recursive) into the knowledge base in ``kb_dir``."""
    with KnowledgeBase.open(kb_dir) as kb:
        return kb.ingest(paths, tenant=tenant)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", type=Path, help="files and folders (recursive)")
    parser.add_argument("--kb", type=Path, default=None, help="KB directory (default: RAG_KB_DIR)")
    parser.add_argument("--tenant", default="default")
    args = parser.parse_args(argv)
    report = ingest(args.paths, args.kb, args.tenant)
    lines = [f"{f.status:9} {f.path}" + (f": {f.reason}" if f.reason else "") for f in report.files]
    lines.append(
        f"{report.succeeded} ingested, {report.failed} failed, {report.total_chunks} chunks"
    )
    sys.stdout.write("\n".join(lines) + "\n")
    return 1 if report.failed else 0


if __name__ == "__main__":
    sys.exit(main())
