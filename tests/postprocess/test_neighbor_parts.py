"""Merged evidence maps back to its chunks: every character of a merged node is the character
its (chunk_index, offset, base) part names in that chunk's own text."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from rag_app.postprocess.neighbors import merge_parts
from rag_app.types import ChunkInfo

HEADER = "| 险种 | 保费 |\n| --- | --- |\n"


def chunk(index: int, text: str, prefix: int = 0, suffix: int = 0) -> ChunkInfo:
    return ChunkInfo(chunk_id=f"d:1:{index}", doc_id="d", version=1, chunk_index=index,
                     text=text, start_char=index * 100, end_char=index * 100 + len(text),
                     prefix_chars=prefix, suffix_chars=suffix)  # fmt: skip


def test_a_table_split_by_rows_maps_each_row_to_its_chunk() -> None:
    run = [
        chunk(0, HEADER + "| 重疾 | 500 |\n"),
        chunk(1, HEADER + "| 医疗 | 300 |\n| 意外 | 100 |", prefix=len(HEADER)),
    ]
    text, parts = merge_parts(run)
    assert text.count("| 险种 |") == 1  # the header once
    at = text.index("| 意外 |")
    index, offset, base = next(p for p in reversed(parts) if p[1] <= at)
    assert index == 1
    own = run[1].text
    assert own[at - offset + base :].startswith("| 意外 | 100 |")


@given(
    st.lists(
        st.tuples(
            st.text("ab\n表格", min_size=1, max_size=12), st.integers(0, 4), st.integers(0, 4)
        ),
        min_size=1,
        max_size=4,
    )
)
def test_every_merged_character_is_its_chunks_character(spec) -> None:  # type: ignore[no-untyped-def]
    run = []
    for i, (body, pre, suf) in enumerate(spec):
        text = "前" * pre + body + "后" * suf
        run.append(chunk(i, text, prefix=pre if i else 0, suffix=suf if i < len(spec) - 1 else 0))
    text, parts = merge_parts(run)
    for k, (index, offset, base) in enumerate(parts):
        end = parts[k + 1][1] - 1 if k + 1 < len(parts) else len(text)
        own = run[index].text
        for m in range(offset, end):
            assert text[m] == own[m - offset + base], (m, index)
