"""Quantities as amounts, whatever their spelling: 12万元, 120,000元, 120000元, １２００００元 and
十二万元 are one amount of 元; 35岁 and 三十五周岁 one of 岁. What tells a stated value present in
the evidence in another form (rag_app/answer/caveat.py)."""

from __future__ import annotations

import re
import unicodedata

from rag_app.text.numerals import CN_NUMERALS, chinese_number

# a thousands separator between digit groups (120,000; not 1,2 or 3,14159)
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_SCALES = {"万": 1e4, "亿": 1e8}
# a number in digits, with its scale word (1.5万); the unit is read after it
_DIGIT_AMOUNT = re.compile(r"(?<![\d.])(\d+(?:\.\d+)?)\s*(万|亿)?")
_CN_RUN = CN_NUMERALS + "万亿"  # the characters of a Chinese numeral with its 万 and 亿
# the units one quantity is written in: a unit's other spellings
_UNIT_FORMS = {"周岁": "岁", "日": "天", "个月": "月", "块": "元", "％": "%"}


def plain(text: str) -> str:
    """``text`` in NFKC (full-width digits and letters as ASCII), lower case, numbers without
    their thousands separators (120,000 -> 120000)."""
    return _THOUSANDS.sub("", unicodedata.normalize("NFKC", text).lower())


def unit_of(unit: str) -> str:
    """A unit's one spelling: 周岁 -> 岁, 日 -> 天, 个月 -> 月."""
    unit = unit.strip()
    return _UNIT_FORMS.get(unit, unit)


def stated_amount(value: str) -> tuple[float, str] | None:
    """A stated value (:func:`plain`) as its amount and unit: 12万元 -> (120000, 元), 35周岁 ->
    (35, 岁), 5% -> (5, %); None when it isn't a number with an optional unit."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*(万|亿)?\s*(\D{0,3})", value.strip())
    if m is None:
        return None
    return float(m.group(1)) * _SCALES.get(m.group(2) or "", 1.0), unit_of(m.group(3))


def cn_amount(run: str) -> float | None:
    """A Chinese numeral with its 万 and 亿 (十二万 -> 120000, 一亿两千万 -> 120000000)."""
    total = 0.0
    for scale_word in ("亿", "万"):
        if scale_word in run:
            head, run = run.split(scale_word, 1)
            n = chinese_number(head) if head else 1
            if n is None:
                return None
            total += n * _SCALES[scale_word]
    if run:
        n = chinese_number(run)
        if n is None:
            return None
        total += n
    return total


def _same(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))


def amount_in(value: str, text: str) -> bool:
    """Whether ``text`` (:func:`plain`) holds the amount of ``value`` (:func:`plain`) in any
    spelling: in digits with or without 万/亿 (whatever unit follows: as a stated value's
    number is matched), or, when the value has a unit, in Chinese numerals followed by that unit
    in any of its spellings (三十五周岁 for 35岁, 一百二十天 for 120日, 百分之五 for 5%)."""
    stated = stated_amount(value)
    if stated is None:
        return False
    amount, unit = stated
    for m in _DIGIT_AMOUNT.finditer(text):
        if _same(float(m.group(1)) * _SCALES.get(m.group(2) or "", 1.0), amount):
            return True
    if not unit or unit.isascii() and unit != "%":
        return False
    if unit == "%":
        return any(
            (n := cn_amount(m.group(1))) is not None and _same(n, amount)
            for m in re.finditer(f"百分之([{_CN_RUN}]+)", text)
        )
    spellings = [u for u, one in _UNIT_FORMS.items() if one == unit] + [unit]
    units = "|".join(re.escape(u) for u in sorted(spellings, key=len, reverse=True))
    for m in re.finditer(rf"([{_CN_RUN}]+)\s*(?:个\s*)?(?:{units})", text):
        n = cn_amount(m.group(1))
        if n is not None and _same(n, amount):
            return True
    return False
