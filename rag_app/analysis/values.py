"""Values a question states (5000元, 63岁, 2021年) and which of them only bound the answer."""

from __future__ import annotations

import re

from rag_app.analysis.lexicon import Lexicon

NUMBER_WITH_UNIT = re.compile(
    r"(\d+(?:\.\d+)?)\s*(万元|亿元|万|亿|元|周岁|岁|年|月|日|天|个月|小时|分钟|%|％|人|名|次|平方米|米|公里)?"
)
_DATE = re.compile(r"(?<!\d)\d{4}[-/.]\d{1,2}(?:[-/.]\d{1,2})?(?!\d)")


def value_matches(question: str) -> list[re.Match[str]]:
    """The numbers of ``question``, each with its unit when one follows (5000元, 63岁, 2021年)."""
    return list(NUMBER_WITH_UNIT.finditer(question))


def bounds_among(question: str, values: list[re.Match[str]], lexicon: Lexicon) -> list[str]:
    """The values that end a range (20000至30000元, 2019年到2021年: two values with a range
    mark between them) or that a comparative precedes or follows (超过7亿, 5000元以上)."""
    dates = [m.span() for m in _DATE.finditer(question)]
    out: set[int] = set()
    for i, m in enumerate(values):
        before = question[max(0, m.start() - 5) : m.start()].rstrip("了")  # 超过了7亿
        if before.endswith(tuple(lexicon.comparatives)) or question[m.end() :].startswith(
            tuple(lexicon.comparatives)
        ):
            out.add(i)
        if i + 1 < len(values):
            gap = question[m.end() : values[i + 1].start()].strip()
            in_date = any(a <= m.start() and values[i + 1].end() <= b for a, b in dates)
            if gap in lexicon.range_marks and not in_date:  # 2020-07-01 is a date
                out.update((i, i + 1))
    return [values[i].group(0) for i in sorted(out)]
