"""The cross reader: its input encoding, its file's verification, and the qualified outcome it
drives (over a reader file written here: the package bundles none, docs/answering.md says why)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rag_app.answer.cross_reader import (
    MAX_TOKENS,
    CrossReader,
    PairEncoding,
    PieceSpans,
    best_span,
    build_top,
    encode_pair,
    save_head,
    window,
)


@pytest.fixture(scope="module")
def e5():  # type: ignore[no-untyped-def]
    from rag_app.e5_torch import TorchE5

    return TorchE5(threads=2)


@pytest.fixture(scope="module")
def reader(e5):  # type: ignore[no-untyped-def]
    return CrossReader(e5)


def test_a_window_keeps_the_unit_and_some_of_what_precedes_it() -> None:
    text = "".join(f"第{i}句话在这里。" for i in range(60))
    start = text.index("第30句")
    end = start + len("第30句话在这里。")
    got = window(text, start, end, width=60)
    assert len(got) == 60
    assert "第30句话在这里。" in got
    assert got.index("第30句") > 0  # some context before it
    assert window("短文本", 0, 2, width=60) == "短文本"


def test_a_pair_is_question_then_passage_and_its_pieces_map_back_to_characters(e5) -> None:  # type: ignore[no-untyped-def]
    splitter = PieceSpans(e5.tokenizer)
    pair = encode_pair(splitter, "密码多久修改一次？", "用户密码每90天必须修改一次。")
    tok = e5.tokenizer
    assert pair.ids[0] == tok.bos and pair.ids[-1] == tok.eos
    assert tok.eos in pair.ids[1 : pair.passage_start]  # the question ends before the passage
    pieces = "".join(pair.passage[a:b] for a, b in pair.spans)
    assert pieces == pair.passage  # every passage character is covered once, in order
    assert "90天" in pair.passage
    long = encode_pair(splitter, "问题", "很长的文本。" * 400)
    assert len(long.ids) <= MAX_TOKENS


def test_the_best_span_is_none_when_the_no_answer_span_wins() -> None:
    pair = PairEncoding(ids=[0, 5, 2, 7, 8, 9, 2], passage_start=3, spans=[(0, 2), (2, 4), (4, 6)],
                        passage="▁ab cd")  # fmt: skip
    start = np.array([5.0, 0, 0, 0, 3.0, 0, 0])
    end = np.array([5.0, 0, 0, 0, 0, 3.0, 0])
    assert best_span(start, end, pair) is None  # 10 at <s> beats 6
    start[0] = end[0] = 0.0
    assert best_span(start, end, pair) == (1, 5)  # tokens 1..2 of the passage, characters 2..6


def test_a_reader_file_for_another_shape_or_version_is_refused(e5, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import torch

    top = build_top(torch, e5.hidden, e5.heads, 1536, 1, e5.eps)
    ok = tmp_path / "one.npz"
    save_head(ok, top, e5, {"frozen": 11, "trained": 1, "ffn": 1536})
    assert CrossReader(e5, ok).frozen == 11
    lying = tmp_path / "lying.npz"
    save_head(lying, top, e5, {"frozen": 10, "trained": 2, "ffn": 1536})  # claims two blocks
    with pytest.raises(ValueError, match="missing or misshapen"):
        CrossReader(e5, lying)
    data = dict(np.load(ok))
    data["__meta__"] = np.frombuffer(b'{"format": "other/9"}', dtype=np.uint8)
    other = tmp_path / "other.npz"
    np.savez(other, **data)
    with pytest.raises(ValueError, match="format"):
        CrossReader(e5, other)
    with pytest.raises(ValueError, match="no cross reader"):
        CrossReader(e5, tmp_path / "absent.npz")
    broken = tmp_path / "broken.npz"
    broken.write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="could not load"):
        CrossReader(e5, broken)


@pytest.fixture(scope="module")
def reader_file(e5, tmp_path_factory):  # type: ignore[no-untyped-def]
    """An untrained reader file of the shipped shape (two trained blocks over ten frozen)."""
    import torch

    torch.manual_seed(0)
    top = build_top(torch, e5.hidden, e5.heads, 1536, 2, e5.eps)
    path = tmp_path_factory.mktemp("reader") / "reader.npz"
    save_head(path, top, e5, {"frozen": 10, "trained": 2, "ffn": 1536, "threshold_3pct": 0.0})
    return path


def test_a_reader_reads_each_unit_into_a_probability_and_a_span_inside_it(  # type: ignore[no-untyped-def]
    e5, reader_file
) -> None:
    reader = CrossReader(e5, reader_file)
    assert reader.threshold == pytest.approx(0.5)  # sigmoid of the file's logit
    units = ["用户密码每90天必须修改一次。", "机房应配备不间断电源。"]
    reads = reader.read("密码多久修改一次？", units)
    assert len(reads) == 2
    for read, unit in zip(reads, units, strict=True):
        assert 0.0 <= read.probability <= 1.0
        if read.span is not None:
            a, b = read.span
            assert 0 <= a <= b <= len(unit) + 1
    again = reader.read("密码多久修改一次？", units[:1])
    assert again[0].probability == pytest.approx(reads[0].probability, abs=1e-4)  # batch-free


def test_an_answer_below_the_readers_threshold_is_qualified_on_its_first_line(  # type: ignore[no-untyped-def]
    sample_kb, embed_model, reader_file
) -> None:
    """With the threshold at 1 every answer reads below it: its first line says the knowledge
    base has no exact answer, then gives the closest; without the reader nothing is read."""
    from rag_app import KnowledgeBase

    question = "密码多久需要修改一次？"
    plain = sample_kb.ask(question)
    assert plain.reading is None  # no reader unless asked for
    strict = KnowledgeBase.open(sample_kb.path, embed_model=embed_model, cross_reader=True,
                                cross_reader_path=reader_file, qualify_below=1.0,
                                read_only=True)  # fmt: skip
    off = KnowledgeBase.open(sample_kb.path, embed_model=embed_model, read_only=True)
    try:
        qualified, unread = strict.ask(question), off.ask(question)
    finally:
        strict.close()
        off.close()
    assert qualified.reading is not None and 0.0 <= qualified.reading <= 1.0
    assert qualified.outcome == "qualified" and not qualified.refused
    assert qualified.answer.startswith("知识库中没有找到确切的答案；最接近的是：")
    assert qualified.answer.splitlines()[0].endswith(plain.answer.splitlines()[0])
    assert unread.reading is None and unread.outcome in ("answered", "qualified")
    assert unread.caveat is None or "没有“" in unread.caveat  # only a stated value or name
