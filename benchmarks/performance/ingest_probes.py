"""What :mod:`ingest_throughput` observes of one ``KnowledgeBase.ingest`` run: each stage's busy time
and the texts given to the model (by wrapping the pipeline's functions for the run), and digests of
what the run stored (ledger rows, vectors) to tell whether two code versions ingest identically.
"""

from __future__ import annotations

import functools
import hashlib
import json
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from rag_app import KnowledgeBase


class StageTimer:
    """Thread-safe busy-time accumulators, attached by wrapping the pipeline's functions."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self.lock = threading.Lock()

    def wrap(self, stage: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def timed(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                dt = time.perf_counter() - t0
                with self.lock:
                    self.seconds[stage] += dt
                    self.calls[stage] += 1

        return timed


@contextmanager
def patched(obj: Any, name: str, value: Any, *, force: bool = False) -> Iterator[None]:
    """Set ``obj.name`` for the duration (``force``: bypass pydantic's ``__setattr__``)."""
    had = name in vars(obj)
    old = vars(obj).get(name)
    (object.__setattr__ if force else setattr)(obj, name, value)
    try:
        yield
    finally:
        if had:
            (object.__setattr__ if force else setattr)(obj, name, old)
        else:
            delattr(obj, name) if not force else vars(obj).pop(name, None)


@contextmanager
def instrument(kb: KnowledgeBase, timer: StageTimer, captured: list[str]) -> Iterator[None]:
    """Time each stage of ``kb.ingest`` and capture the embedded texts (in order)."""
    import rag_app.ingestion.isolation as parse_mod
    import rag_app.ingestion.pipeline as ingest_mod
    from rag_app.chunking.nodes import ChunkNodeParser

    # patched on the class: batch ingestion may embed with a second (single-thread) instance
    model_cls = type(kb.embed_model)
    raw_embed = model_cls._get_text_embeddings
    lock = threading.Lock()

    def capture_and_embed(self: Any, texts: list[str]) -> list[list[float]]:
        with lock:
            captured.extend(texts)
        return raw_embed(self, texts)

    parser_cls = (
        type(kb.ingestion.pipeline.transformations[0])
        if kb.ingestion.pipeline.transformations
        else None
    )
    get_nodes = ChunkNodeParser.get_nodes_from_documents
    with (
        # parsing and chunking are timed only with RAG_PARSE_IN_PROCESS=true (else: a child's)
        patched(parse_mod, "read_bytes", timer.wrap("read_parse", parse_mod.read_bytes)),
        patched(ingest_mod, "tokenize", timer.wrap("keywords", ingest_mod.tokenize)),
        patched(kb.vectors, "upsert", timer.wrap("chroma_upsert", kb.vectors.upsert)),
        patched(kb.ledger, "commit_version", timer.wrap("ledger_commit", kb.ledger.commit_version)),
        patched(model_cls, "_get_text_embeddings", timer.wrap("embedding", capture_and_embed)),
        patched(ChunkNodeParser, "get_nodes_from_documents", timer.wrap("chunking", get_nodes)),
    ):
        assert parser_cls is None or issubclass(parser_cls, ChunkNodeParser)
        yield


def ledger_embed_texts(kb: KnowledgeBase) -> list[str]:
    """The EMBED texts of the active chunks (heading path + "\\n" + text, see
    rag_app/chunking/nodes.py), files in ingestion order, chunks in document order."""
    from sqlalchemy import text

    with kb.ledger.engine.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT d.rel_path, c.chunk_index, c.title_path, c.text FROM chunks c"
                " JOIN documents d ON d.doc_id = c.doc_id AND d.version = c.version"
            )
        ).all()
    rows.sort(key=lambda r: (Path(r[0]).parts, r[1]))
    return [f"{r[2]}\n{r[3]}" if r[2] else r[3] for r in rows]


def ledger_digest(kb: KnowledgeBase) -> tuple[str, int]:
    """sha256 over every active chunk row (ids, text, spans, keywords) in a stable order."""
    from sqlalchemy import text

    h = hashlib.sha256()
    n = 0
    with kb.ledger.engine.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT c.chunk_id, c.text, c.title_path, c.start_char, c.end_char, c.prefix_chars,"
                " c.suffix_chars, c.token_count, c.block_types, f.tokens FROM chunks c"
                " JOIN documents d ON d.doc_id = c.doc_id AND d.version = c.version"
                " LEFT JOIN chunk_fts f ON f.chunk_id = c.chunk_id"
                " ORDER BY c.chunk_id"
            )
        )
        for row in rows:
            h.update(json.dumps(list(row), ensure_ascii=False).encode())
            n += 1
    return h.hexdigest()[:16], n


def vector_digest(kb: KnowledgeBase) -> tuple[str, list[str], np.ndarray]:
    """sha256 over the stored vectors rounded to 3 decimals (ids sorted) and their metadata;
    also the ids and vectors themselves (for an exact comparison between runs)."""
    got = kb.vectors.collection.get(include=["embeddings", "metadatas"])
    order = sorted(range(len(got["ids"])), key=lambda i: got["ids"][i])
    h = hashlib.sha256()
    for i in order:
        vec = [round(float(x), 3) + 0.0 for x in got["embeddings"][i]]
        h.update(json.dumps([got["ids"][i], got["metadatas"][i], vec], sort_keys=True).encode())
    ids = [got["ids"][i] for i in order]
    matrix = np.asarray([got["embeddings"][i] for i in order], dtype=np.float32)
    return h.hexdigest()[:16], ids, matrix


def compare_vectors(
    folder: Path, label: str, key: str, ids: list[str], matrix: np.ndarray
) -> dict[str, Any]:
    """Store this run's vectors; max |difference| and min cosine vs the other labels' vectors."""
    folder.mkdir(parents=True, exist_ok=True)
    np.savez(folder / f"{label}.npz", ids=np.asarray(ids), vectors=matrix, key=np.asarray(key))
    out: dict[str, Any] = {}
    for other in sorted(folder.glob("*.npz")):
        if other.stem == label:
            continue
        with np.load(other) as z:
            if str(z["key"]) != key or list(z["ids"]) != ids:
                continue
            theirs = z["vectors"]
        cos = np.sum(matrix * theirs, axis=1) / (
            np.linalg.norm(matrix, axis=1) * np.linalg.norm(theirs, axis=1)
        )
        out[other.stem] = {
            "max_abs_diff": float(np.abs(matrix - theirs).max()),
            "identical_vectors": int(np.all(matrix == theirs, axis=1).sum()),
            "min_cosine": round(float(cos.min()), 12),
        }
    return out
