from __future__ import annotations

import pytest

from rag_app.retrieval.tokenizer import chinese_number, label_tokens, query_tokens, tokenize


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("三十三", 33),
        ("十", 10),
        ("十二", 12),
        ("一百零五", 105),
        ("两千", 2000),
        ("33", 33),
        ("甲", None),
    ],
)
def test_chinese_numbers(text: str, value: int | None) -> None:
    assert chinese_number(text) == value


def test_article_labels_get_one_canonical_token_either_way() -> None:
    assert label_tokens("刑法第三十三条的内容") == ["第33条"]
    assert label_tokens("依照第33条和第二章") == ["第33条", "第2章"]
    assert "第33条" in tokenize("第三十三条 主刑的种类如下")
    assert "第33条" in query_tokens("刑法第33条说了什么")


def test_stopwords_and_punctuation_are_dropped() -> None:
    tokens = query_tokens("密码多久需要修改一次？")
    assert "密码" in tokens and "修改" in tokens
    assert "？" not in tokens and "需要" not in tokens
