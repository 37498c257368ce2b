"""The questions of a compound question ("等待期是多少天？轻症能赔多少？"): the analysis stage
splits it (:meth:`~rag_app.analysis.question.QuestionAnalyzer.asked`) so that the decision finds
the best unit for each of them and the answer gives every one."""

from __future__ import annotations

from rag_app.analysis.lexicon import Lexicon

_PART_ENDS = ("？", "?", "；", ";")


def question_parts(question: str, lexicon: Lexicon) -> list[str]:
    """The questions of a compound question ("等待期是多少天？轻症能赔多少？"): the first as
    written (with any sentence before it), each later one with the words of the ones before it,
    their question words blanked (a later question often leaves its subject out: "重疾险的等待
    期是   ，轻症能赔多少？"). Empty for a question that asks one thing."""
    pieces, start = [], 0
    for i, ch in enumerate(question):
        if ch in _PART_ENDS:
            pieces.append(question[start : i + 1])
            start = i + 1
    pieces.append(question[start:])
    pieces = [p for p in pieces if p.strip()]
    asking = [k for k, p in enumerate(pieces) if lexicon.cues(p)]
    if len(asking) < 2:
        return []
    parts = ["".join(pieces[: asking[0] + 1])]
    for k in asking[1:]:
        before = list("".join(pieces[:k]))
        for cue_start, cue_end, _, _ in lexicon.cues("".join(before)):
            before[cue_start:cue_end] = " " * (cue_end - cue_start)
        text = "".join(before).rstrip()
        if text and text[-1] in _PART_ENDS:
            text = text[:-1] + "，"
        parts.append(text + pieces[k])
    return parts
