"""The extractive answer: the best answer unit first, then at most two supporting units, cited.

For a table row the first line is the asked cell with its column name and the row's label
("男性年缴保费（元）：5000（年龄：63）"), then the whole row; for a list item its lead-in comes
with it (a question asking for a list gets the lead-in and all its items); a lead-in ending in
"：" brings the items that follow it; a question about what a named article says (第十二条规定了
什么) gets that article's units in order; a list question that states a range (哪些小区的房价位于
20000至30000元之间) gets the rows whose values lie in it.
"""

from __future__ import annotations

from rag_app.analysis.asked import QuestionAnalysis, numeric_range
from rag_app.analysis.lexicon import Lexicon
from rag_app.answer.decision import AnswerDecision, AnswerUnit, ScoredUnit
from rag_app.text.matching import DIGITS, in_range, term_credit
from rag_app.text.tokenizer import leading_label
from rag_app.types import Citation

MAX_SUPPORT = 2
SUPPORT_SHARE = 0.5  # a supporting unit scores at least this share of the best
SUPPORT_FLOOR = 0.3  # and at least this probability
MAX_ITEMS = 12
# answer types of a question that asks what a named article says, not for one value in it
_CONTENT_TYPES = ("what", "definition", "other")


def citation_of(scored: ScoredUnit) -> Citation:
    """The citation of a scored unit: its node number, kind, text, span and probability."""
    u = scored.unit
    return Citation(source=u.source, kind=u.kind, text=u.text, start=u.start, end=u.end,
                    probability=scored.probability)  # fmt: skip


def asked_column(unit: AnswerUnit, analysis: QuestionAnalysis, lexicon: Lexicon) -> int | None:
    """The column of a row the question asks for: the best match of the question's terms and
    head with a column name, and of the asked type with its value, among the columns whose
    value the question does not already give."""
    if unit.kind != "row" or not unit.header:
        return None
    question = lexicon.normalize(analysis.text.lower())
    terms = [lexicon.normalize(t.lower()) for t in analysis.terms]
    head = lexicon.normalize(analysis.head.lower()) if analysis.head else None
    value_form = lexicon.value_pattern(analysis.answer_type) if analysis.expects_value else None
    best, best_score = None, 0.0
    for i, name in enumerate(unit.header):
        value = unit.cells[i] if i < len(unit.cells) else ""
        if not value or (value and lexicon.normalize(value.lower()) in question):
            continue
        col = lexicon.normalize(name.lower())
        score = sum(term_credit(t, col) for t in terms) + (
            2.0 * term_credit(head, col) if head else 0
        )
        if value_form is not None and value_form.search(value):
            score += 3.5  # the cell holds a value of the asked type (多久 -> 每4小时): beats
            # a column that only repeats the head (备份方式 for 多久备份)
        if score > best_score:
            best, best_score = i, score
    return best


def _row_lead(unit: AnswerUnit, column: int) -> str:
    label = next((f"{h}：{c}" for h, c in zip(unit.header, unit.cells, strict=False) if c), "")
    cell = f"{unit.header[column]}：{unit.cells[column]}"
    return cell if column == 0 or not label else f"{cell}（{label}）"


def _items_under(decision: AnswerDecision, source: int, lead: str) -> list[ScoredUnit]:
    """The list items of node ``source`` carried with the lead-in ``lead``, in document order."""
    lead = lead.rstrip()
    return sorted(
        (s for s in decision.units if s.unit.source == source and s.unit.kind == "item"
         and s.unit.context and lead in s.unit.context),
        key=lambda s: s.unit.index,
    )[:MAX_ITEMS]  # fmt: skip


def _named_article(decision: AnswerDecision) -> list[ScoredUnit]:
    """For a question about what a named article says ("第十二条规定了什么"): the unit that opens
    with that label and the units after it in its node up to the next label, in order; empty
    when the question names no article, asks for a value, or the evidence lacks the opener."""
    analysis = decision.analysis
    if analysis is None or not analysis.labels or analysis.answer_type not in _CONTENT_TYPES:
        return []
    opener = next(
        (s for s in decision.units if leading_label(s.unit.text) in analysis.labels), None
    )
    if opener is None:
        return []
    same = sorted(
        (s for s in decision.units
         if s.unit.source == opener.unit.source and s.unit.index >= opener.unit.index),
        key=lambda s: s.unit.index,
    )  # fmt: skip
    out = [opener]
    for s in same[1:]:
        if leading_label(s.unit.text) is not None:
            break
        out.append(s)
    return out[:MAX_ITEMS]


def _in_the_range(decision: AnswerDecision, lexicon: Lexicon) -> list[ScoredUnit]:
    """For a list question that states a range ("哪些小区的房价位于20000至30000元之间"): the rows
    whose asked cell (:func:`asked_column`; any cell when none is asked) lies in it, best
    first, or without such rows the sentences and items holding a value in it; [] for any
    other question."""
    analysis = decision.analysis
    if analysis is None or analysis.answer_type != "list":
        return []
    rng = numeric_range(analysis)
    if rng is None:
        return []
    low, high, _ = rng

    def values(unit: AnswerUnit) -> str:
        column = asked_column(unit, analysis, lexicon)
        return unit.cells[column] if column is not None else " ".join(unit.cells)

    rows = [
        s for s in decision.units if s.unit.kind == "row" and in_range(values(s.unit), low, high)
    ]
    if rows:
        return rows[:MAX_ITEMS]
    others = [s for s in decision.units if s.unit.kind != "row"]
    return [s for s in others if in_range(s.unit.text, low, high)][:MAX_ITEMS]


def _other_row(best: ScoredUnit, s: ScoredUnit, decision: AnswerDecision) -> bool:
    """A row of the best row's table lacking a question word or value that the best row's
    cells hold is another row's answer (普通员工 beside 部门负责人), not support."""
    a, b = best.unit, s.unit
    if a.kind != "row" or b.kind != "row" or a.source != b.source or a.header != b.header:
        return False
    analysis = decision.analysis
    assert analysis is not None
    keys = [*analysis.terms, *analysis.entities]
    keys += [n for c in analysis.constraints for n in DIGITS.findall(c)]
    return any(any(k in c for c in a.cells) and not any(k in c for c in b.cells) for k in keys if k)


def _is_question(scored: ScoredUnit) -> bool:
    return scored.unit.kind == "sentence" and scored.unit.text.rstrip("*").rstrip().endswith(
        ("？", "?")
    )


def _answer_after_question(decision: AnswerDecision) -> ScoredUnit:
    """The best unit, unless it is itself a question (an FAQ's "问：…？" matches the question
    best, and answers nothing): then the unit right after it in its passage, its answer."""
    best = decision.units[0]
    if not _is_question(best):
        return best
    return next(
        (s for s in decision.units
         if s.unit.source == best.unit.source and s.unit.index == best.unit.index + 1),
        best,
    )  # fmt: skip


def compose(decision: AnswerDecision, lexicon: Lexicon) -> tuple[str, list[Citation]]:
    """Answer text with ``[n]`` markers and the cited units, best first."""
    if not decision.units or decision.analysis is None:
        return "", []
    listed = _named_article(decision) or _in_the_range(decision, lexicon)
    if listed:
        text = "\n".join(f"{s.unit.text} [{s.unit.source}]" for s in listed)
        return (decision.caveat or "") + text, [citation_of(s) for s in listed]
    best = _answer_after_question(decision)
    lines: list[str] = []
    cited: list[ScoredUnit] = [best]
    unit = best.unit
    column = asked_column(unit, decision.analysis, lexicon)
    if column is not None:
        lines.append(f"{_row_lead(unit, column)} [{unit.source}]")
        lines.append(f"{unit.text} [{unit.source}]")
    elif unit.kind == "item" and unit.context and decision.analysis.answer_type == "list":
        # a question asking for a list, answered by one item: the lead-in, then every item
        lines.append(f"{unit.context} [{unit.source}]")
        cited.extend(
            s for s in decision.units
            if s.unit.source == unit.source and s.unit.kind != "item"
            and s.unit.text.strip() == unit.context.strip()
        )  # fmt: skip
        for s in _items_under(decision, unit.source, unit.context):
            lines.append(f"{s.unit.text} [{s.unit.source}]")
            if s is not best:
                cited.append(s)
    elif unit.kind == "item" and unit.context and unit.context not in unit.text:
        lines.append(f"{unit.text} [{unit.source}]（{unit.context}）")
    elif best is not decision.units[0]:  # the answer, with the question it answers
        asked = decision.units[0].unit.text.strip().strip("*").strip()
        lines.append(f"{unit.text} [{unit.source}]（{asked}）")
    else:
        lines.append(f"{unit.text} [{unit.source}]")
    if unit.text.rstrip("*").rstrip().endswith(("：", ":")):
        for s in _items_under(decision, unit.source, unit.text):
            lines.append(f"{s.unit.text} [{s.unit.source}]")
            cited.append(s)
    for part in decision.parts:  # a compound question: each of its questions' answers next
        if not any(part.unit.text == c.unit.text for c in cited):
            lines.append(f"{part.unit.text} [{part.unit.source}]")
            cited.append(part)
    support = 0
    for s in decision.units:
        if s is best or _is_question(s):  # a question supports no answer
            continue
        if support >= MAX_SUPPORT or s.probability < SUPPORT_SHARE * best.probability:
            break
        if s in cited or s.probability < SUPPORT_FLOOR:
            continue
        if any(s.unit.text == c.unit.text for c in cited) or _other_row(best, s, decision):
            continue
        lines.append(f"{s.unit.text} [{s.unit.source}]")
        cited.append(s)
        support += 1
    if decision.caveat:  # the closest the evidence has, not the asked: the first line says so
        lines[0] = decision.caveat + lines[0]
    citations = [citation_of(s) for s in cited]
    return "\n".join(lines), citations
