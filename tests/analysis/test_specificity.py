"""Word specificity in general Chinese (jieba's dictionary counts), the same in any KB."""

from __future__ import annotations

import pytest

from rag_app.analysis.specificity import WordSpecificity


@pytest.fixture(scope="module")
def specificity() -> WordSpecificity:
    return WordSpecificity()


def test_everyday_words_are_less_specific_than_rare_ones(specificity: WordSpecificity) -> None:
    for everyday in ("时间", "公司", "温度", "名单"):
        for rare in ("禁药", "呋喃", "利润总额"):
            assert specificity(everyday) < specificity(rare), (everyday, rare)


def test_scores_lie_between_zero_and_one(specificity: WordSpecificity) -> None:
    for word in ("的", "时间", "禁药", "XQ-7731", "2005", "更高"):
        assert 0.0 <= specificity(word) <= 1.0, word
    assert specificity("") == 0.0
    assert specificity("  ") == 0.0


def test_a_phrase_of_everyday_words_is_not_taken_for_a_name(specificity: WordSpecificity) -> None:
    """Not in the dictionary, but it cuts into everyday words: the mean of its pieces."""
    assert specificity("更高") < specificity("禁药")
    # a code or a number the dictionary can't cut is as specific as a word can be
    assert specificity("XQ7731") == 1.0


def test_a_quantity_is_everyday_whatever_its_dictionary_count(
    specificity: WordSpecificity,
) -> None:
    """A numeral and a measure word (一晚, 两家, 十天) counts a thing, it names none: read as its
    characters, however rarely the dictionary lists the pair (一晚: 3 times)."""
    for quantity in ("一晚", "两家", "十天", "每晚", "三次"):
        assert specificity(quantity) < 0.5, quantity
        assert specificity(quantity) < specificity("禁药")
    assert specificity("2005") == 1.0  # a number on its own is still as specific as can be
