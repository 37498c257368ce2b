from __future__ import annotations

from pathlib import Path

import pytest

from rag_app.text.tokenizer import (
    chinese_number,
    label_tokens,
    month_tokens,
    query_tokens,
    tokenize,
)

KNOWLEDGE = Path(__file__).resolve().parents[2] / "data" / "knowledge"


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


def test_a_year_and_month_get_one_canonical_token_however_written() -> None:
    for text in ("2021年3月", "2021年03月", "2021-03-01 08:00:00", "2021/3", "2021.03.05"):
        assert month_tokens(text) == ["2021年03月"], text
        assert "2021年03月" in tokenize(f"成交日期：{text}")
    assert "2021年03月" in query_tokens("2021年3月春江山居成交了多少套？")
    # not a month: a decimal, a span of years, month 13, a year alone, digits run together
    for text in ("2021.5万元", "2019-2021年", "2021年13月", "2021年", "20210301", "12021-03"):
        assert month_tokens(text) == [], text
    assert month_tokens("2021-03-01至2021-04-30") == ["2021年03月", "2021年04月"]


def test_stopwords_and_punctuation_are_dropped() -> None:
    tokens = query_tokens("密码多久需要修改一次？")
    assert "密码" in tokens and "修改" in tokens
    assert "？" not in tokens and "需要" not in tokens


def _reference_tokenize(text: str) -> list[str]:
    """The tokenizer as it was written before the rjieba fast path: jieba alone."""
    import re
    import unicodedata

    import jieba

    from rag_app.text.tokenizer import STOPWORDS

    normalized = unicodedata.normalize("NFKC", text).lower()
    word = re.compile(r"\w", re.UNICODE)
    return (
        [
            tok.strip()
            for tok in jieba.lcut_for_search(normalized)
            if tok.strip() and word.search(tok) and tok.strip() not in STOPWORDS
        ]
        + label_tokens(normalized)
        + month_tokens(normalized)
    )


def test_tokens_equal_jieba_search_mode_on_mixed_text() -> None:
    """The rjieba fast path gives jieba's own tokens (blocks with joiners stay in jieba)."""
    samples = [
        path.read_text(encoding="utf-8")
        for path in sorted(KNOWLEDGE.rglob("*"))
        if path.suffix in (".md", ".txt")
    ] + [
        "2022-06-01 成交均价 12345.67元/㎡，环比上涨3.5%，C++ 与 C# 工程师 a_b.c",
        "第三十三条 主刑的种类如下：（一）管制；（二）拘役；（三）有期徒刑；（四）无期徒刑；（五）死刑。",
        "IP地址 192.168.0.1 的 VPN 账号每90天修改一次；API v2.3-beta 返回 HTTP 429。",
        "中华人民共和国劳动合同法规定用人单位应当依法建立和完善劳动规章制度\n\n  \t末尾 ÉCOLE αβγ",
        "",
    ]
    assert len(samples) > 6  # the bundled knowledge base is there
    for text in samples:
        assert tokenize(text) == _reference_tokenize(text)


def test_a_month_or_day_matches_with_or_without_its_leading_zero() -> None:
    from rag_app.text.tokenizer import with_number_variants

    assert with_number_variants(["2021", "年", "3", "月"]) == ["2021", "年", "3", "03", "月"]
    assert with_number_variants(["2021", "03", "01"]) == ["2021", "03", "3", "01", "1"]
    # not other numbers: 0, 10, 100 and 007 have no such twin
    assert with_number_variants(["0", "10", "100", "007", "00"]) == ["0", "10", "100", "007", "00"]
    assert with_number_variants(["3", "03"]) == ["3", "03"]


def test_jiebas_cache_is_read_whole_into_the_same_objects(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import marshal

    from rag_app.text.tokenizer import _jieba, _WholeFileMarshal

    value = ({"密码": 12, "密": 3, "x" * 40: 0}, 15)
    path = tmp_path / "cache"
    with path.open("wb") as fh:
        _WholeFileMarshal.dump(value, fh)
    with path.open("rb") as fh:
        assert _WholeFileMarshal.load(fh) == value == marshal.loads(path.read_bytes())
    jieba = _jieba()
    assert jieba.dt.initialized and jieba.dt.FREQ.get("密码") and jieba.dt.total > 1_000_000
