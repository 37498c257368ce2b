"""Word's number formats (``w:numFmt``) and level texts (``w:lvlText``), rendered as Word shows them.

:func:`format_number` turns a counter value into the text of one format; :func:`expand_level_text`
fills a level text such as ``"第%1条"`` or ``"%1.%2"`` with the counters of the levels it names.
Values a format cannot show (a Roman numeral past 3999, a counting numeral past 9999, a circled
number past 20) fall back to decimal digits, as Word does; nothing here grows with the value
beyond its digits, so a hostile ``w:start`` of 10**15 costs no more than 15 characters.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

__all__ = ["BULLET", "NONE", "expand_level_text", "format_number"]

BULLET = "bullet"
NONE = "none"

_DIGITS = "〇一二三四五六七八九"  # ideographDigital writes 0 as 〇 (一〇一)
_TEN, _HUNDRED, _THOUSAND, _ZERO = "十", "百", "千", "零"
_STEMS = "甲乙丙丁戊己庚辛壬癸"  # ideographTraditional: the ten heavenly stems
_BRANCHES = "子丑寅卯辰巳午未申酉戌亥"  # ideographZodiac: the twelve earthly branches
_LEGAL = "零壹贰叁肆伍陆柒捌玖"  # chineseLegalSimplified
_LEGAL_UNITS = ("", "拾", "佰", "仟")
_FULLWIDTH = str.maketrans("0123456789", "０１２３４５６７８９")
_ROMAN = (
    (1000, "M"),
    (900, "CM"),
    (500, "D"),
    (400, "CD"),
    (100, "C"),
    (90, "XC"),
    (50, "L"),
    (40, "XL"),
    (10, "X"),
    (9, "IX"),
    (5, "V"),
    (4, "IV"),
    (1, "I"),
)
_MAX_LETTER_REPEAT = 30  # upperLetter 27 -> AA; a counter past 26 * 30 falls back to digits
_PLACEHOLDER_RE = re.compile(r"%([1-9])")


def _tens(value: int) -> str:
    """1..99 in the counting style: 十, 十一, 二十, 二十一."""
    tens, ones = divmod(value, 10)
    if tens == 0:
        return _DIGITS[ones]
    head = "" if tens == 1 else _DIGITS[tens]
    return head + _TEN + (_DIGITS[ones] if ones else "")


def chinese_counting(value: int) -> str:
    """``chineseCounting`` / ``chineseCountingThousand``: 一, 十, 十一, 二十一, 一百, 一百零一,
    一百一十, 一千零一十, up to 9999 (then digits).

    Past 99 this writes the numbers as Chinese text writes them (一百零一), as LibreOffice shows
    both formats; Word's own drawing past 99 may differ (Open XML PowerTools draws 一〇一 and
    一百〇一), but 第一百零一条 is how statutes and the people asking about them write it.
    """
    if 1 <= value <= 99:
        return _tens(value)
    if not 100 <= value <= 9999:
        return str(value)
    out: list[str] = []
    pending_zero = False
    for size, unit in ((1000, _THOUSAND), (100, _HUNDRED), (10, _TEN), (1, "")):
        digit = value // size % 10
        if digit == 0:
            pending_zero = bool(out)
            continue
        if pending_zero:
            out.append(_ZERO)
            pending_zero = False
        out.append(_DIGITS[digit] + unit)
    return "".join(out)


def _legal_simplified(value: int) -> str:
    """``chineseLegalSimplified``: 壹, 壹拾, 壹佰零壹, up to 9999."""
    if not 1 <= value <= 9999:
        return str(value)
    digits = str(value)
    out: list[str] = []
    zero = False
    for position, char in enumerate(digits):
        digit = int(char)
        unit = _LEGAL_UNITS[len(digits) - 1 - position]
        if digit == 0:
            zero = bool(out)
            continue
        if zero:
            out.append(_LEGAL[0])
            zero = False
        out.append(_LEGAL[digit] + unit)
    return "".join(out)


def _roman(value: int) -> str:
    if not 1 <= value <= 3999:
        return str(value)
    out: list[str] = []
    for size, numeral in _ROMAN:
        count, value = divmod(value, size)
        out.append(numeral * count)
    return "".join(out)


def _letter(value: int, upper: bool) -> str:
    """Word's letters: A..Z, then AA..ZZ, AAA.. (the letter repeated)."""
    if not 1 <= value <= 26 * _MAX_LETTER_REPEAT:
        return str(value)
    repeat, index = divmod(value - 1, 26)
    char = chr((ord("A") if upper else ord("a")) + index)
    return char * (repeat + 1)


def _circled(value: int) -> str:
    return chr(0x2460 + value - 1) if 1 <= value <= 20 else str(value)


def _cycle(symbols: str) -> Callable[[int], str]:
    def render(value: int) -> str:
        return symbols[value - 1] if 1 <= value <= len(symbols) else str(value)

    return render


_FORMATS: dict[str, Callable[[int], str]] = {
    "decimal": str,
    "decimalZero": lambda v: f"{v:02d}" if 0 <= v < 10 else str(v),
    "decimalFullWidth": lambda v: str(v).translate(_FULLWIDTH),
    "decimalFullWidth2": lambda v: str(v).translate(_FULLWIDTH),
    "decimalHalfWidth": str,
    "decimalEnclosedCircle": _circled,
    "decimalEnclosedCircleChinese": _circled,
    "decimalEnclosedParen": lambda v: f"({v})",
    "decimalEnclosedFullstop": lambda v: f"{v}.",
    "upperLetter": lambda v: _letter(v, upper=True),
    "lowerLetter": lambda v: _letter(v, upper=False),
    "upperRoman": _roman,
    "lowerRoman": lambda v: _roman(v).lower(),
    "chineseCounting": chinese_counting,
    "chineseCountingThousand": chinese_counting,
    "japaneseCounting": chinese_counting,
    "taiwaneseCounting": chinese_counting,
    "taiwaneseCountingThousand": chinese_counting,
    "ideographDigital": lambda v: "".join(_DIGITS[int(d)] for d in str(v)),
    "chineseLegalSimplified": _legal_simplified,
    "ideographTraditional": _cycle(_STEMS),
    "ideographZodiac": _cycle(_BRANCHES),
    "ordinal": lambda v: f"{v}.",
}


def format_number(value: int, fmt: str) -> str:
    """``value`` in Word's number format ``fmt``; unknown formats and out-of-range values as
    decimal digits; ``"none"`` and ``"bullet"`` as the empty string."""
    if fmt in (NONE, BULLET):
        return ""
    render = _FORMATS.get(fmt, str)
    return render(max(value, 0)) if value >= 0 or render is str else str(value)


def expand_level_text(
    template: str,
    values: Sequence[int | None],
    formats: Sequence[str],
    *,
    legal: bool = False,
) -> str:
    """``template`` with every ``%n`` replaced by level ``n``'s counter in level ``n``'s format.

    ``values[i]`` is level i's counter (None: the level never ran; then it shows nothing, as a
    missing level does in Word); ``legal`` (``w:isLgl``) shows every level as decimal digits.
    """

    def replace(match: re.Match[str]) -> str:
        index = int(match.group(1)) - 1
        if index >= len(values) or values[index] is None:
            return ""
        value = values[index]
        assert value is not None
        fmt = formats[index] if index < len(formats) else "decimal"
        if legal and fmt not in (NONE, BULLET):
            fmt = "decimal"
        return format_number(value, fmt)

    return _PLACEHOLDER_RE.sub(replace, template)
