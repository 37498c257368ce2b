"""Chinese numerals: reading them (三十三 -> 33) and writing small numbers with them (4倍 ->
四倍), and the characters that spell them (for the numbering patterns of headings and items)."""

from __future__ import annotations

import re

# every character of a Chinese numeral: digits, units and the alternative forms 〇 and 两
CN_NUMERALS = "一二三四五六七八九十百千零〇两"

_CN_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6,
              "七": 7, "八": 8, "九": 9}  # fmt: skip
_CN_UNITS = {"十": 10, "百": 100, "千": 1000}


def chinese_number(text: str) -> int | None:
    """'三十三' -> 33, '一百零五' -> 105, '33' -> 33; None when it isn't a number."""
    if text.isdigit():
        return int(text)
    total, current = 0, 0
    for ch in text:
        if ch in _CN_DIGITS:
            current = _CN_DIGITS[ch]
        elif ch in _CN_UNITS:
            total += (current or 1) * _CN_UNITS[ch]
            current = 0
        else:
            return None
    return total + current


_DIGIT_WORDS = "零一二三四五六七八九"


def in_words(value: str) -> list[str]:
    """The spellings of ``value`` with its whole number below 100 in Chinese numerals (4倍 ->
    四倍, 15日 -> 十五日, 20天 -> 二十天; a lone 2 also as 两: 2倍 -> 二倍, 两倍); ``value``
    itself when it has no such number."""
    m = re.fullmatch(r"(\d{1,2})(\D*)", value)
    if m is None:
        return [value]
    n = int(m.group(1))
    tens, ones = divmod(n, 10)
    if tens == 0:
        words = _DIGIT_WORDS[ones]
    else:
        words = (
            ("" if tens == 1 else _DIGIT_WORDS[tens]) + "十" + (_DIGIT_WORDS[ones] if ones else "")
        )
    spellings = [words + m.group(2)]
    if n == 2:
        spellings.append("两" + m.group(2))
    return spellings
