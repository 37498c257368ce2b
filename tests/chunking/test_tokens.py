from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag_app.chunking import count_tokens
from rag_app.chunking.tokens import tokenize


def reference_count(text: str) -> int:
    """Independent implementation of the documented rule, character by character."""
    total = 0
    run = 0
    for ch in text + " ":
        if ch.isascii() and ch.isalnum():
            run += 1
            continue
        if run:
            total += math.ceil(run / 4)
            run = 0
        if not ch.isspace():
            total += 1
    return total


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("  \n\t\u3000", 0),
        ("保险金额", 4),
        ("，。！？；：（）【】", 10),
        ("abcd", 1),
        ("hello", 2),
        ("RAG系统2024年", 1 + 2 + 1 + 1),
        ("top_k = 5", 1 + 1 + 1 + 1 + 1),
        ("第1000元", 1 + 1 + 1),
        ("｜全角：１２", 6),  # full-width digits are not ASCII: 1 each
    ],
)
def test_count_tokens_examples(text: str, expected: int) -> None:
    assert count_tokens(text) == expected
    assert len(tokenize(text)) == expected


TEXT = st.text(
    alphabet=st.sampled_from(list("保险条款第一二三，。！？；abcXYZ0189 _-|#\n\t\u3000")),
    max_size=200,
)


@settings(max_examples=200, deadline=None)
@given(TEXT)
def test_count_tokens_matches_reference_and_tokenizer(text: str) -> None:
    assert count_tokens(text) == reference_count(text) == len(tokenize(text))


@settings(max_examples=200, deadline=None)
@given(TEXT, TEXT)
def test_count_tokens_is_subadditive(a: str, b: str) -> None:
    # the chunker sums piece counts as an upper bound of the joined text's count
    assert count_tokens(a + b) <= count_tokens(a) + count_tokens(b)


def test_count_tokens_counts_a_long_text_exactly() -> None:
    # its cost is part of the chunker throughput measured in benchmarks/quality/chunking.py, not asserted
    text = "根据《中华人民共和国保险法》第16条，投保人应当如实告知 RAG-2024 版本。\n" * 25000
    assert count_tokens(text) == reference_count(text)
