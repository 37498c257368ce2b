"""Evaluation pipeline: (ingest a docs folder into a fresh KB) → run the questions → (score with
ragas) → write the Markdown/PNG report and the JSON.

``rag eval`` and ``python -m pipelines.evaluate`` are thin shells around :func:`evaluate`;
notebooks call the pieces directly (:func:`eval_kb`, :func:`rag_app.eval.runner.run_eval`,
:func:`rag_app.eval.ragas_adapter.score_run`).
"""

from __future__ import annotations

import contextlib
import logging
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rag_app.eval.dataset import QAItem, load_qa
from rag_app.eval.runner import EvalRun, ProgressFn, run_eval
from rag_app.eval.targets import Served
from rag_app.kb import KnowledgeBase, ProgressCallback
from rag_app.types import IngestReport

logger = logging.getLogger(__name__)


@dataclass
class EvalKB:
    kb: KnowledgeBase
    ingest: IngestReport | None = None
    temporary: bool = False
    notes: dict[str, str] = field(default_factory=dict)


@contextlib.contextmanager
def eval_kb(
    docs: str | Path | None = None,
    kb_dir: str | Path | None = None,
    *,
    tenant: str = "default",
    embed_model: Any = None,
    ingest_progress: ProgressCallback | None = None,
    **overrides: Any,
) -> Iterator[EvalKB]:
    """The knowledge base to evaluate: ``docs`` ingested into ``kb_dir`` (a temporary directory,
    removed afterwards, when ``kb_dir`` is None), or the existing KB at ``kb_dir`` / the default,
    opened read-only (no writer lock: it is evaluated beside a ``rag serve`` that holds it).

    ``overrides`` are Settings fields (e.g. ``chunker="sentence"``).
    """
    with contextlib.ExitStack() as stack:
        temporary = docs is not None and kb_dir is None
        if temporary:
            kb_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="rag-eval-")))
            kb_dir = kb_dir / "kb"
        read_only = docs is None  # only ingesting writes; asking and retrieving read
        kb = KnowledgeBase.open(kb_dir, embed_model=embed_model, read_only=read_only, **overrides)
        stack.callback(kb.close)
        result = EvalKB(kb=kb, temporary=temporary)
        if read_only:
            result.notes["opened"] = f"{kb.path} read-only (no writer lock taken)"
        if docs is not None:
            docs = Path(docs)
            if not docs.exists():
                raise FileNotFoundError(f"--docs {docs} does not exist")
            report = kb.ingest([docs], tenant=tenant, progress=ingest_progress)
            result.ingest = report
            if report.failed:
                failed = [f"{f.path}: {f.reason}" for f in report.files if f.status == "FAILED"]
                logger.warning("%d documents failed to ingest: %s", report.failed, failed[:5])
            if not report.total_chunks:
                raise ValueError(f"nothing was ingested from {docs} (no supported documents?)")
            result.notes["documents"] = (
                f"{report.succeeded + report.unchanged} ingested from {docs} "
                f"({report.total_chunks} chunks, {report.failed} failed, {report.seconds:.1f}s)"
            )
        elif not kb.documents.list(tenant):
            raise ValueError(
                f"knowledge base {kb.path} has no documents for tenant '{tenant}': "
                "pass --docs DIR to ingest a folder first"
            )
        yield result


def relative_sources(run: EvalRun, docs: Path) -> EvalRun:
    """Chunk sources under ``docs`` as paths relative to it (portable reports and JSON)."""
    root = docs.resolve() if docs.is_dir() else docs.resolve().parent
    for rec in run.records:
        for chunk in (*rec.retrieved, *rec.sources):
            with contextlib.suppress(ValueError):
                chunk.source = Path(chunk.source).resolve().relative_to(root).as_posix()
    return run


def evaluate(
    qa: str | Path | Sequence[QAItem],
    *,
    docs: str | Path | None = None,
    kb_dir: str | Path | None = None,
    k: int = 5,
    tenant: str = "default",
    limit: int | None = None,
    ask: bool = True,
    ragas: bool = False,
    report: str | Path | None = None,
    json_path: str | Path | None = None,
    json_texts: bool = True,
    title: str | None = None,
    progress: ProgressFn | None = None,
    ingest_progress: ProgressCallback | None = None,
    embed_model: Any = None,
    served: Served | None = None,
    **overrides: Any,
) -> EvalRun:
    """Run the whole evaluation and write the requested outputs; returns the run. ``served``:
    evaluate a running server's knowledge base through its API instead (no ``docs``)."""
    items = load_qa(qa, limit=limit) if isinstance(qa, str | Path) else list(qa)[:limit]
    if not items:
        raise ValueError("no questions to evaluate")
    if served is not None:
        if docs is not None:
            raise ValueError("--docs ingests here: with --server the served knowledge base is "
                             "evaluated as it is")  # fmt: skip
        run = run_eval(served, items, k=k, tenant=tenant, progress=progress, ask=ask)
        if ragas:
            from rag_app.eval.ragas_adapter import score_run

            run.ragas = score_run(run).model_dump()
        notes = {"evaluated": f"through the server at {served.description.get('server')}"}
        return _write(run, qa, notes, report=report, json_path=json_path, texts=json_texts,
                      title=title)  # fmt: skip
    with eval_kb(
        docs,
        kb_dir,
        tenant=tenant,
        embed_model=embed_model,
        ingest_progress=ingest_progress,
        **overrides,
    ) as target:
        run = run_eval(target.kb, items, k=k, tenant=tenant, progress=progress, ask=ask)
        if docs is not None:
            relative_sources(run, Path(docs))
        if ragas:
            from rag_app.eval.ragas_adapter import score_run

            run.ragas = score_run(run, settings=target.kb.settings).model_dump()
    return _write(run, qa, target.notes, report=report, json_path=json_path, texts=json_texts,
                  title=title)  # fmt: skip


def _write(
    run: EvalRun,
    qa: str | Path | Sequence[QAItem],
    notes: dict[str, str],
    *,
    report: str | Path | None,
    json_path: str | Path | None,
    texts: bool,
    title: str | None,
) -> EvalRun:
    """Write the JSON and the report that were asked for; returns ``run``."""
    if json_path is not None:
        run.save(json_path, texts=texts)
    if report is not None:
        from rag_app.eval.report import write_report

        extra = dict(notes)
        default_title = "Evaluation report"
        if isinstance(qa, str | Path):
            extra = {"questions file": str(qa), **extra}
            default_title += f": {Path(qa).name}"
        write_report(run, report, title=title or default_title, extra=extra)
    return run
