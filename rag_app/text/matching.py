"""Text matching at the bottom of the package: how much of a question's terms a text holds
(fuzzy credit, IDF-weighted coverage, char bigrams), whether it says a term in some form (a
label or a date written otherwise) and whether it holds a number in a range.

The reranker, the answer features, the gate's question features and the extractive answer all
match the same way; living here, below them, none of those stages calls back into another's
module to do it. Pure functions of strings; thread-safe.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from rag_app.text.tokenizer import canonical_forms

_BIGRAM_CHARS = re.compile(r"[\u4e00-\u9fff0-9a-z]")
DIGITS = re.compile(r"\d+(?:\.\d+)?")  # a number as written (2021, 0.5)
# dates and times, left out when a text's numbers are compared with a range
_DATES = re.compile(
    r"(?<![\d.])(?:19|20)\d{2}(?:[-/年]\d{1,2}(?:[-/月]\d{1,2}日?)?|年)"
    r"|(?<![\d.])\d{1,2}:\d{2}(?::\d{2})?|(?<![\d.])\d{1,2}[月日]"
)


def term_credit(term: str, text: str) -> float:
    """1 when the term occurs; half the share of its chars when at least half of them do."""
    if term in text:
        return 1.0
    if len(term) < 2:
        return 0.0
    share = sum(1 for ch in term if ch in text) / len(term)
    return 0.5 * share if share >= 0.5 else 0.0


INHERIT = 1.0  # credit of a term only the headings say (0.5 measured: cmrc 77.8 vs 83.3 %)


def weighted_coverage(
    weights: dict[str, float],
    text: str,
    title: str = "",
    credit: Callable[[str, str], float] = term_credit,
) -> float:
    """IDF-weighted coverage of the terms in ``text``, each term's ``credit`` (by default
    :func:`term_credit`, fuzzy; the reranker's is whole-token matching). With ``title`` (the
    heading path), the text is read under it: a term the text says counts fully, one only its
    headings say counts :data:`INHERIT`."""
    total = sum(weights.values())
    if total <= 0:
        return 0.0
    if not title:
        return sum(w * credit(t, text) for t, w in weights.items()) / total
    got = sum(w * max(credit(t, text), INHERIT * credit(t, title)) for t, w in weights.items())
    return got / total


def inherited_bigrams(q_bigrams: set[str], text: str, title: str) -> float:
    if not q_bigrams:
        return 0.0
    own = q_bigrams & bigrams(text)
    return (len(own) + INHERIT * len((q_bigrams & bigrams(title)) - own)) / len(q_bigrams)


def bigrams(text: str) -> set[str]:
    chars = "".join(_BIGRAM_CHARS.findall(text))
    return {chars[i : i + 2] for i in range(len(chars) - 1)}


def in_range(text: str, lo: float, hi: float) -> bool:
    """Whether ``text`` holds a number from ``lo`` to ``hi``; dates and times are not numbers
    (2021-07-01 08:00 holds no 2021)."""
    text = _DATES.sub(" ", text)
    return any(lo <= float(m.group(0)) <= hi for m in DIGITS.finditer(text))


def with_canonical_forms(text: str) -> str:
    """``text`` (lower-cased) followed by its canonical tokens (2021年03月 of "2021年3月",
    第33条 of "第三十三条"): what the question's terms are looked up in."""
    text = text.lower()
    return text + "\n" + " ".join(canonical_forms(text))


def said(term: str, evidence: str) -> bool:
    """Whether ``evidence`` (:func:`with_canonical_forms`) holds ``term``, written as the term
    or, for a label or a date, in another form (第三十三条 where it says 第33条)."""
    if term.lower() in evidence:
        return True
    forms = canonical_forms(term)
    return bool(forms) and all(f in evidence for f in forms)
