"""Which question terms the keyword branch sends to the index (keyword_query_tokens)."""

from __future__ import annotations

from rag_app.retrieval.hybrid import keyword_query_tokens


def test_absent_and_near_universal_terms_are_dropped_phrases_kept() -> None:
    freqs = {"报销": 40, "提交": 300, "的": 900, "陈 某某": 0}
    tokens = ["报销", "未知词", "提交", "的", "陈 某某", "c++"]
    kept = keyword_query_tokens(tokens, freqs, total=1000)
    # 未知词 matches nothing; 的 is in > half the chunks (BM25 IDF 0); phrases and tokens the
    # index splits ("c++") have no vocabulary entry and are kept as they are
    assert kept == ["报销", "提交", "陈 某某", "c++"]


def test_only_common_terms_keeps_the_rarest() -> None:
    assert keyword_query_tokens(["a", "b"], {"a": 9, "b": 7}, total=10) == ["b"]
    assert keyword_query_tokens(["x"], {}, total=10) == []


def test_budget_drops_the_most_common_terms_first() -> None:
    freqs = {"侵权": 100, "责任": 4000, "承担": 3000, "缺陷": 50}
    tokens = ["缺陷", "侵权", "承担", "责任"]
    assert keyword_query_tokens(tokens, freqs, total=10000, budget=0) == tokens
    assert keyword_query_tokens(tokens, freqs, total=10000, budget=3500) == ["缺陷", "侵权", "承担"]
    assert keyword_query_tokens(tokens, freqs, total=10000, budget=3000) == ["缺陷", "侵权"]
    assert keyword_query_tokens(tokens, freqs, total=10000, budget=10) == ["缺陷"]
