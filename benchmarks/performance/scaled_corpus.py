"""The scaled corpora of :mod:`query_scale` (~5k, ~10k, ~100k chunks): the documents of KBs built
by real ingestion read back whole (chunks, keyword tokens, vectors), and copied round after round as
variants (new ids, the same texts, the vectors plus a little noise) into a KB of the target size
through the ledger's and the vector store's own writes. The recipe is told in query_scale.py's
docstring (it goes into the results JSON from there).
"""

from __future__ import annotations

import gc
import hashlib
import json
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # common.py

from common import CACHE  # noqa: E402
from sqlalchemy import text  # noqa: E402

from rag_app import KnowledgeBase  # noqa: E402

SOURCES = ("laws_zh", "dragonball_zh", "retqa_tables_zh")
NOISE_SIGMA = 0.005
SEED = 1234
RECIPE = {"sources": SOURCES, "noise_sigma": NOISE_SIGMA, "seed": SEED, "version": 1}


@dataclass
class SourceDoc:
    dataset: str
    doc_id: str
    rel_path: str
    source: str
    doc_type: str
    title: str | None
    content_hash: str | None
    fingerprint: str
    size: int
    rows: list[dict[str, Any]]  # ledger rows + "keywords", in chunk order
    vectors: np.ndarray  # (chunks, dim) float32, same order


def read_source(dataset: str, kb: KnowledgeBase) -> list[SourceDoc]:
    """Every active document of a cached KB with its chunks, keyword tokens and vectors."""
    with kb.ledger.engine.connect() as conn:
        tokens = dict(conn.execute(text("SELECT chunk_id, tokens FROM chunk_fts")).all())
        fingerprints = dict(conn.execute(text("SELECT doc_id, fingerprint FROM documents")).all())
    docs: list[SourceDoc] = []
    for info in kb.ledger.list_documents(tenant=None):
        if info.version <= 0:
            continue
        chunks = kb.ledger.active_chunks(info.doc_id)
        if not chunks:
            continue
        ids = [c.chunk_id for c in chunks]
        got = kb.vectors.collection.get(ids=ids, include=["embeddings"])
        by_id = dict(zip(got["ids"], got["embeddings"], strict=True))
        vectors = np.asarray([by_id[i] for i in ids], dtype=np.float32)
        rows = [c.model_dump() | {"keywords": tokens.get(c.chunk_id, "")} for c in chunks]
        docs.append(
            SourceDoc(
                dataset=dataset,
                doc_id=info.doc_id,
                rel_path=info.rel_path,
                source=info.source,
                doc_type=info.doc_type,
                title=info.title,
                content_hash=info.content_hash,
                fingerprint=fingerprints.get(info.doc_id) or "",
                size=info.size_bytes,
                rows=rows,
                vectors=vectors,
            )
        )
    return docs


def plan_corpus(sources: dict[str, list[SourceDoc]], target: int) -> list[tuple[int, SourceDoc]]:
    """(round, document) pairs: whole documents, round after round, up to ``target`` chunks."""
    plan: list[tuple[int, SourceDoc]] = []
    total = 0
    for rnd in range(1000):
        for name in SOURCES:
            for doc in sources[name]:
                if total + len(doc.rows) > target:
                    return plan
                plan.append((rnd, doc))
                total += len(doc.rows)
    return plan


def scale_dir(target: int) -> Path:
    tag = hashlib.sha1(json.dumps(RECIPE, sort_keys=True).encode()).hexdigest()[:8]
    return CACHE / f"scale-{target}-{tag}"


def build_scaled(target: int, sources: dict[str, list[SourceDoc]], embed: Any) -> dict[str, Any]:
    """Build (once) the KB of about ``target`` chunks; return its BUILT record."""
    path = scale_dir(target)
    done = path / "BUILT"
    if done.exists():
        return json.loads(done.read_text())
    t0 = time.perf_counter()
    tmp = path.with_name(path.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    plan = plan_corpus(sources, target)
    print(f"building {path.name}: {len(plan)} documents …", flush=True)
    rng = np.random.default_rng(SEED + target)
    kb = KnowledgeBase.open(tmp, embed_model=embed)
    buf_ids: list[str] = []
    buf_vecs: list[np.ndarray] = []
    buf_meta: list[dict[str, Any]] = []
    counts: dict[str, dict[str, int]] = {}

    spent = {"chroma_s": 0.0, "ledger_s": 0.0}

    def flush() -> None:
        if buf_ids:
            t = time.perf_counter()
            kb.vectors.upsert(list(buf_ids), np.concatenate(buf_vecs).tolist(), list(buf_meta))
            spent["chroma_s"] += time.perf_counter() - t
            buf_ids.clear()
            buf_vecs.clear()
            buf_meta.clear()

    for rnd, doc in plan:
        if rnd == 0:
            doc_id, rel, source, vecs = doc.doc_id, doc.rel_path, doc.source, doc.vectors
        else:
            doc_id = hashlib.sha1(f"variant{rnd}:{doc.doc_id}".encode()).hexdigest()[:24]
            rel, source = f"variant{rnd}/{doc.rel_path}", f"variant{rnd}/{doc.source}"
            noisy = doc.vectors + rng.normal(0.0, NOISE_SIGMA, doc.vectors.shape).astype(np.float32)
            vecs = noisy / np.linalg.norm(noisy, axis=1, keepdims=True)
        version = kb.ledger.begin_document(
            doc_id=doc_id,
            tenant="default",
            source=source,
            rel_path=rel,
            doc_type=doc.doc_type,
            size=doc.size,
        )
        rows = []
        for row in doc.rows:
            chunk_id = f"{doc_id}:{version}:{row['chunk_index']}"
            rows.append(row | {"chunk_id": chunk_id, "doc_id": doc_id, "version": version})
            buf_ids.append(chunk_id)
            buf_meta.append(
                {
                    "tenant": "default",
                    "doc_id": doc_id,
                    "version": version,
                    "chunk_index": row["chunk_index"],
                }
            )
        buf_vecs.append(np.asarray(vecs, dtype=np.float32))
        if len(buf_ids) >= 4000:
            flush()
        t_ledger = time.perf_counter()
        kb.ledger.commit_version(
            doc_id=doc_id,
            tenant="default",
            version=version,
            rows=rows,
            content_hash=doc.content_hash or "",
            fingerprint=doc.fingerprint,
            doc_type=doc.doc_type,
            title=doc.title,
            source=source,
            size=doc.size,
        )
        spent["ledger_s"] += time.perf_counter() - t_ledger  # rows + keyword index (FTS5)
        c = counts.setdefault(f"{doc.dataset} round {rnd}", {"documents": 0, "chunks": 0})
        c["documents"] += 1
        c["chunks"] += len(rows)
    flush()
    chunks = kb.vectors.count()
    keyword_rows = kb.ledger.keyword_count()
    kb.close()
    gc.collect()
    record = {
        "target": target,
        "chunks": chunks,
        "keyword_rows": keyword_rows,
        "documents": len(plan),
        "composition": counts,
        "build_seconds": round(time.perf_counter() - t0, 1),
        "build_chroma_seconds": round(spent["chroma_s"], 1),
        "build_ledger_seconds": round(spent["ledger_s"], 1),
        "recipe": RECIPE,
    }
    (tmp / "BUILT").write_text(json.dumps(record, ensure_ascii=False, indent=2))
    shutil.rmtree(path, ignore_errors=True)
    tmp.rename(path)
    print(f"  {chunks} chunks in {record['build_seconds']:.0f}s", flush=True)
    return record
