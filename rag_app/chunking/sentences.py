"""Sentence-aligned splitting with character spans (Chinese separators) and overlap search.

:func:`split_spans` is the span-keeping equivalent of langchain's ``RecursiveCharacterTextSplitter``
with separators ``["\\n\\n", "\\n", "。", "！", "？", "；", "，", ""]``: a range over the budget is cut at
the highest-priority separator it contains (the separator stays with the text before it), parts
still over the budget are cut at the next separator, and the parts are then packed greedily. It
returns spans into the original text instead of strings, so chunk spans stay honest, and it uses
:func:`~rag_app.chunking.tokens.count_tokens` for the budget.
"""

from __future__ import annotations

import re

from rag_app.chunking.tokens import count_tokens

__all__ = [
    "CHINESE_SEPARATORS",
    "SENTENCE_ENDS",
    "overlap_start",
    "split_spans",
    "trim_span",
]

CHINESE_SEPARATORS: tuple[str, ...] = ("\n\n", "\n", "。", "！", "？", "；", "，", "")
SENTENCE_ENDS = "。！？；!?;\n"
_SENTENCE_END_RE = re.compile(r"[。！？；!?;\n]")


def trim_span(text: str, start: int, end: int) -> tuple[int, int]:
    """Shrink ``[start, end)`` to exclude leading and trailing whitespace (may become empty)."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _hard_cut(
    text: str, start: int, end: int, budget: int, out: list[tuple[int, int, int]]
) -> None:
    """Cut anywhere into pieces of at most ``budget`` tokens, as long as possible.

    A character adds at most one token, so a window of ``t`` tokens can grow by ``budget - t``
    characters and stay within the budget (ASCII text grows well past ``budget`` characters).
    """
    s = start
    while s < end:
        e = min(s + budget, end)
        t = count_tokens(text[s:e])
        while e < end and t < budget:
            e = min(e + budget - t, end)
            t = count_tokens(text[s:e])
        out.append((s, e, t))
        s = e


def _atoms(
    text: str,
    start: int,
    end: int,
    budget: int,
    seps: tuple[str, ...],
    out: list[tuple[int, int, int]],
) -> None:
    tokens = count_tokens(text[start:end])
    if tokens <= budget:
        out.append((start, end, tokens))
        return
    for k, sep in enumerate(seps):
        if sep == "":
            _hard_cut(text, start, end, budget, out)
            return
        if text.find(sep, start, end) != -1:
            rest = seps[k + 1 :]
            pos = start
            while pos < end:
                hit = text.find(sep, pos, end)
                stop = end if hit == -1 else hit + len(sep)
                _atoms(text, pos, stop, budget, rest, out)
                pos = stop
            return
    # no separator at all (seps lacked ""): hard cut by characters
    _atoms(text, start, end, budget, ("",), out)


def split_spans(
    text: str,
    start: int,
    end: int,
    budget: int,
    *,
    first_budget: int | None = None,
    separators: tuple[str, ...] = CHINESE_SEPARATORS,
    strict_first: bool = False,
) -> list[tuple[int, int, int]] | None:
    """Split ``text[start:end]`` into ``(start, end, tokens)`` spans of at most ``budget`` tokens.

    The first span gets ``first_budget`` (default ``budget``). When the first sentence-level atom
    does not fit into it, ``None`` is returned with ``strict_first``, else that atom is cut
    further for the first span. ``tokens`` is an upper bound of the span's token count. Spans are
    trimmed of surrounding whitespace; whitespace-only stretches produce no span.
    """
    budget = max(budget, 1)
    atoms: list[tuple[int, int, int]] = []
    _atoms(text, start, end, budget, separators, atoms)
    limit = budget if first_budget is None else max(first_budget, 1)
    while atoms and not atoms[0][2] and not text[atoms[0][0] : atoms[0][1]].strip():
        atoms.pop(0)
    if atoms and atoms[0][2] > limit:
        if strict_first:
            return None
        head: list[tuple[int, int, int]] = []
        _atoms(text, atoms[0][0], atoms[0][1], limit, separators, head)
        atoms[:1] = head
    spans: list[tuple[int, int, int]] = []
    cur_s = cur_e = -1
    cur_t = 0
    for s, e, t in atoms:
        if cur_s < 0:
            if t == 0 and not text[s:e].strip():
                continue
            cur_s, cur_e, cur_t = s, e, t
        elif cur_t + t <= limit:
            cur_e = e
            cur_t += t
        else:
            spans.append((cur_s, cur_e, cur_t))
            limit = budget
            if t == 0 and not text[s:e].strip():
                cur_s = -1
                continue
            cur_s, cur_e, cur_t = s, e, t
    if cur_s >= 0:
        spans.append((cur_s, cur_e, cur_t))
    out: list[tuple[int, int, int]] = []
    for s, e, t in spans:
        s, e = trim_span(text, s, e)
        if s < e:
            out.append((s, e, t))
    return out


def overlap_start(text: str, start: int, end: int, max_tokens: int) -> int | None:
    """Start of the longest run of whole sentences ending ``text[start:end]`` within ``max_tokens``.

    A sentence starts at ``start`` or after one of 。！？；!?; or a newline. Returns the offset of
    its first non-whitespace character, or ``None`` if not even the last sentence fits.
    """
    if max_tokens <= 0 or end <= start:
        return None
    window = max(start, end - 8 * max_tokens - 64)
    candidates = [m.end() for m in _SENTENCE_END_RE.finditer(text, window, end - 1)]
    if window == start:
        candidates.insert(0, start)
    best: int | None = None
    for b in reversed(candidates):
        s, _ = trim_span(text, b, end)
        if s >= end:
            continue
        if count_tokens(text[s:end]) > max_tokens:
            break
        best = s
    return best
