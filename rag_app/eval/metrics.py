"""Hit rules and retrieval/answer metrics (pure functions, hand-checked in the tests).

Hit rules (the evaluation data's README): text is compared with all whitespace removed; a chunk
hits a question when it contains one of its ``gold_spans``, or, for tables, when one line of it
holds every cell of a gold row and the chunk holds every column name (a *full* hit).
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

_WS = re.compile(r"\s+")


def squash(text: str) -> str:
    """Remove all whitespace (the comparison rule of the evaluation data)."""
    return _WS.sub("", text)


def span_hit(chunk_text: str, gold_spans: Iterable[str]) -> bool:
    body = squash(chunk_text)
    return any(squash(sp) and squash(sp) in body for sp in gold_spans)


def row_in_chunk(chunk_text: str, row: Mapping[str, Any]) -> bool:
    """Some line of the chunk holds every cell of ``row``."""
    cells = [squash(str(v)) for v in row.values() if squash(str(v))]
    return any(all(c in squash(line) for c in cells) for line in chunk_text.splitlines())


def header_in_chunk(chunk_text: str, header: Iterable[str]) -> bool:
    body = squash(chunk_text)
    return all(squash(h) in body for h in header)


def row_hit(
    chunk_text: str,
    gold_rows: Sequence[Mapping[str, Any]],
    gold_header: Sequence[str],
    *,
    require_header: bool = True,
) -> bool:
    if not any(row_in_chunk(chunk_text, r) for r in gold_rows):
        return False
    return header_in_chunk(chunk_text, gold_header) if require_header else True


def is_hit(chunk_text: str, item: Any, *, require_header: bool = True) -> bool:
    """A chunk hits an item (``QAItem`` or anything with the same attributes)."""
    if getattr(item, "gold_rows", None):
        return row_hit(chunk_text, item.gold_rows, item.gold_header, require_header=require_header)
    return span_hit(chunk_text, getattr(item, "gold_spans", []) or [])


def first_hit_rank(texts: Sequence[str], item: Any, *, require_header: bool = True) -> int:
    """1-based rank of the first hitting chunk, 0 when none hits."""
    for rank, text in enumerate(texts, start=1):
        if is_hit(text, item, require_header=require_header):
            return rank
    return 0


def recall_at_k(ranks: Sequence[int], k: int) -> float:
    return sum(1 for r in ranks if 0 < r <= k) / len(ranks) if ranks else 0.0


def mrr_at_k(ranks: Sequence[int], k: int) -> float:
    return sum(1.0 / r for r in ranks if 0 < r <= k) / len(ranks) if ranks else 0.0


def keyword_hit(answer: str, answers: Sequence[str], match: str) -> bool | None:
    """Answer contains the reference values (``any``: one of them, ``all``: each); None for
    ``reference`` answers, which need a model or a similarity metric instead."""
    if match not in ("any", "all") or not answers:
        return None
    body = squash(answer)
    found = [squash(a) in body for a in answers if squash(a)]
    if not found:
        return None
    return all(found) if match == "all" else any(found)


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100); 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return float(ordered[min(rank, len(ordered)) - 1])


# ----- answers with groups of alternatives ------------------------------------------------------
def answer_groups_hit(answer: str, groups: Sequence[Sequence[str]]) -> bool | None:
    """Every group is matched by at least one of its alternatives (AND of ORs); None when there
    are no non-empty groups. ``[["30分钟", "半小时"], ["5次", "五次"]]`` needs both facts, each
    in either spelling."""
    body = squash(answer)
    verdicts = []
    for group in groups:
        options = [squash(str(a)) for a in group if squash(str(a))]
        if options:
            verdicts.append(any(o in body for o in options))
    return all(verdicts) if verdicts else None


def answer_hit(answer: str, item: Any) -> bool | None:
    """The answer contains the item's reference values: ``answer_groups`` when the item has them
    (AND of ORs), otherwise :func:`keyword_hit` with ``answers``/``answer_match``."""
    groups = getattr(item, "answer_groups", None)
    if groups:
        return answer_groups_hit(answer, groups)
    return keyword_hit(
        answer, getattr(item, "answers", []) or [], getattr(item, "answer_match", "any")
    )


# ----- documents ----------------------------------------------------------------------------------
def _path_parts(path: str) -> list[str]:
    text = unicodedata.normalize("NFC", str(path)).replace("\\", "/")
    return [p for p in text.split("/") if p and p != "."]


def doc_matches(source: str, gold_doc: str) -> bool:
    """``gold_doc`` (a path relative to the docs folder) names the file ``source`` (any path):
    its components are the trailing components of ``source`` (``a/b.md`` matches ``/x/a/b.md``,
    not ``/x/ca/b.md``)."""
    gold, src = _path_parts(gold_doc), _path_parts(source)
    return bool(gold) and len(gold) <= len(src) and src[-len(gold) :] == gold


def matched_gold_doc(source: str, gold_docs: Iterable[str]) -> str | None:
    """The gold document ``source`` is, or None."""
    return next((g for g in gold_docs if doc_matches(source, g)), None)


def rate(flags: Iterable[bool | None]) -> float | None:
    """Share of True among the defined flags (None = not applicable); None when none apply."""
    defined = [f for f in flags if f is not None]
    return sum(1 for f in defined if f) / len(defined) if defined else None


def mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None
