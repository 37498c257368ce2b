"""Whether one evaluated case passed, and if not, why (``QuestionRecord.fail_reason``).

A case passes when none of its expectations is broken, checked in this order:

1. the question raised an error → ``error``;
2. a rejected answer came back (``not_answer``, from a 👎): the new answer's first line contains
   one of the rejected first lines, compared without citation marks and whitespace
   (:func:`rag_app.store.feedback.repeats`) → ``rejected answer came back``;
3. unanswerable (``answerable: false`` or ``refuse: true``): it must be refused → ``answered``;
4. answerable with something to hold (``answers``/``answer_groups``/``gold_docs``): a refusal
   fails (``refused``), and the answer must hold the references (``any``/``all``/groups) →
   ``lacks the expected answer``, or, with free-text references, cite a gold document →
   ``cites no gold document``;
5. answerable with only ``not_answer`` (a 👎 whose reviewer gave no right answer): passes once
   the rejected answer is gone, a refusal included;
6. answerable with nothing to check → ``nothing to check``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from rag_app.store.feedback import repeats


class Judged(Protocol):
    """The parts of a ``QuestionRecord`` a verdict reads."""

    error: str | None
    answerable: bool
    refused: bool
    answers: list[str]
    answer_groups: list[list[str]]
    gold_docs: list[str]
    not_answer: list[str]
    keyword_hit: bool | None
    source_hit: bool | None
    rejected_back: bool | None


def rejected_back(answer: str, rejected: Sequence[str]) -> bool | None:
    """The answer's first line holds one of the rejected first lines; None without any."""
    if not rejected:
        return None
    return any(repeats(answer, line) for line in rejected)


def fail_reason(rec: Judged) -> str | None:
    """Why the case failed (see the module doc); None when it passed."""
    if rec.error is not None:
        return "error"
    if rec.rejected_back:
        return "rejected answer came back"
    if not rec.answerable:
        return None if rec.refused else "answered (expected a refusal)"
    positive = bool(rec.answers or rec.answer_groups or rec.gold_docs)
    if not positive:
        return None if rec.not_answer else "nothing to check"
    if rec.refused:
        return "refused"
    if rec.keyword_hit is not None:
        return None if rec.keyword_hit else "lacks the expected answer"
    return None if rec.source_hit else "cites no gold document"
