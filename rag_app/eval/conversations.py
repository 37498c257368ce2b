"""Conversations for evaluating follow-up questions: each turn's question, what its resolved
form must and must not contain (or that it stands alone), and the answer it should get.

``data/eval/followup_conversations.jsonl``: one conversation a line, ``{"id", "split",
"turns": [{"question", "answers", "resolved_has", "resolved_lacks", "standalone"}]}``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, Field

from rag_app.analysis.followup import FollowUpResolver


class ConversationTurn(BaseModel):
    question: str
    answers: list[str] = Field(default_factory=list, description="Any one in the answer.")
    resolved_has: list[str] = Field(default_factory=list)
    resolved_lacks: list[str] = Field(default_factory=list)
    standalone: bool = Field(False, description="Must be asked as written (nothing inherited).")


class ConversationCase(BaseModel):
    id: str
    split: str = "dev"
    turns: list[ConversationTurn]


class TurnResult(BaseModel):
    conversation: str
    turn: int
    question: str
    resolved: str
    resolved_ok: bool
    answer_ok: bool | None = None  # None: not asked, or no expected answer


def load_conversations(path: Path) -> list[ConversationCase]:
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    return [ConversationCase.model_validate(json.loads(line)) for line in lines if line.strip()]


def resolution_ok(turn: ConversationTurn, resolved: str) -> bool:
    """Whether ``resolved`` is what the turn expects (see the module docstring)."""
    if turn.standalone:
        return resolved.strip() == turn.question.strip()
    return all(s in resolved for s in turn.resolved_has) and not any(
        s in resolved for s in turn.resolved_lacks
    )


def run_conversations(
    cases: list[ConversationCase],
    ask: Callable[[str], str] | None = None,
    resolver: FollowUpResolver | None = None,
) -> list[TurnResult]:
    """Every turn of every conversation resolved (and answered by ``ask``, which returns the
    answer text, when given)."""
    resolver = resolver or FollowUpResolver()
    results: list[TurnResult] = []
    for case in cases:
        previous: str | None = None
        for index, turn in enumerate(case.turns):
            resolved = resolver.resolve(turn.question, previous).resolved
            result = TurnResult(
                conversation=case.id,
                turn=index,
                question=turn.question,
                resolved=resolved,
                resolved_ok=index == 0 or resolution_ok(turn, resolved),
            )
            if ask is not None and turn.answers:
                answer = ask(resolved)
                result.answer_ok = any(a in answer for a in turn.answers)
            results.append(result)
            previous = resolved
    return results


def summarize(results: list[TurnResult]) -> dict[str, float | int]:
    """Resolution accuracy over the follow-up turns (the first turns have nothing to resolve),
    and answer accuracy over the turns with an expected answer."""
    follow = [r for r in results if r.turn > 0]
    answered = [r for r in results if r.answer_ok is not None]
    return {
        "follow_up_turns": len(follow),
        "resolution_accuracy": round(sum(r.resolved_ok for r in follow) / max(1, len(follow)), 3),
        "answered_turns": len(answered),
        "answer_accuracy": round(
            sum(bool(r.answer_ok) for r in answered) / max(1, len(answered)), 3
        ),
    }
