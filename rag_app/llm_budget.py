"""One time budget per answer for the LLM (``RAG_LLM_BUDGET``), streaming included.

An answer (a chat turn: its follow-up rewrite too) has one :class:`Budget` of seconds from its
start, opened by the engine's answer (or the chat turn) around retrieval, reading and the LLM:
every LLM call of the answer (the rewrite, the answer itself, or the reading of a refusal)
runs in a thread of its own and the caller waits on it at most for what is left of the budget;
a streamed reply is handed on piece by piece only while the budget lasts. So an answer takes
about the budget at most, plus the extractive answer's composition. Past it, or after any call that timed out, the budget is spent:
no further call is made within it (no second try) and the caller falls back (the extractive
answer, the rules' follow-up resolution). An abandoned call ends by itself at the client's own
timeout (never above the budget: the rewriter and the synthesizer build it so) and its
streamed reply is closed at its next piece.

The budget in force is kept in a context variable, so that a chat turn's rewrite and answer
share one (:func:`llm_budget` opened around both) without the budget being passed through the
knowledge base's ask.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from llama_index.core.llms import LLM, ChatMessage

DEFAULT_BUDGET = 30.0  # seconds an answer may wait on the LLM (RAG_LLM_BUDGET's default)


class LLMBudgetSpent(TimeoutError):
    """The answer's LLM time budget ran out (or a call within it timed out)."""


@dataclass
class Budget:
    """An answer's time budget: ``seconds`` from ``started`` (the answer's start), and
    whether a call timed out (``spent``: no further call)."""

    seconds: float
    started: float = field(default_factory=time.monotonic)
    spent: bool = False

    def remaining(self) -> float:
        left = self.started + self.seconds - time.monotonic()
        return 0.0 if self.spent else max(0.0, left)


_CURRENT: ContextVar[Budget | None] = ContextVar("rag_llm_budget", default=None)


@contextmanager
def llm_budget(seconds: float) -> Iterator[Budget]:
    """The budget in force: an enclosing one's (a chat turn's rewrite and answer share it),
    else a new one of ``seconds`` for the duration of the block."""
    current = _CURRENT.get()
    if current is not None:
        yield current
        return
    budget = Budget(seconds)
    token = _CURRENT.set(budget)
    try:
        yield budget
    finally:
        _CURRENT.reset(token)


def _timed_out(exc: BaseException) -> bool:
    """A client-side timeout (httpx's, openai's APITimeoutError, the builtin's)."""
    return isinstance(exc, TimeoutError) or "timeout" in type(exc).__name__.lower()


# what the call's thread hands back: ("delta", text), ("done", text) or ("error", exception)
_Item = tuple[str, Any]


def _work(
    llm: LLM, messages: Sequence[ChatMessage], stream: bool, out: queue.Queue[_Item],
    stop: threading.Event,
) -> None:  # fmt: skip
    try:
        if not stream:
            out.put(("done", llm.chat(messages).message.content or ""))
            return
        replies = llm.stream_chat(messages)
        try:
            for chunk in replies:
                if stop.is_set():  # abandoned: the caller has fallen back
                    return
                if chunk.delta:
                    out.put(("delta", chunk.delta))
        finally:
            close = getattr(replies, "close", None)
            if close is not None:
                close()
        out.put(("done", None))
    except BaseException as exc:  # handed to the caller, which decides
        out.put(("error", exc))


def call_llm(
    llm: LLM,
    messages: Sequence[ChatMessage],
    budget: Budget,
    on_text: Callable[[str], None] | None = None,
) -> str:
    """The LLM's reply to ``messages`` (streamed to ``on_text`` when given, in the caller's
    thread, and only while the budget lasts). Raises :class:`LLMBudgetSpent` when the budget
    is (or becomes) spent, or whatever the call raised; a timeout spends the budget."""
    deadline = time.monotonic() + budget.remaining()
    if budget.remaining() <= 0:
        budget.spent = True
        raise LLMBudgetSpent(f"the LLM time budget ({budget.seconds:g} s) is spent")
    out: queue.Queue[_Item] = queue.Queue()
    stop = threading.Event()
    threading.Thread(
        target=_work, args=(llm, messages, on_text is not None, out, stop), name="llm-call",
        daemon=True,
    ).start()  # fmt: skip
    parts: list[str] = []
    while True:
        left = deadline - time.monotonic()
        try:
            if left <= 0:  # a reply still streaming past the deadline is cut there too
                raise queue.Empty
            kind, value = out.get(timeout=left)
        except queue.Empty:
            stop.set()
            budget.spent = True
            raise LLMBudgetSpent(
                f"no answer within the LLM time budget ({budget.seconds:g} s)"
            ) from None
        if kind == "delta":
            parts.append(value)
            assert on_text is not None
            on_text(value)
        elif kind == "done":
            return "".join(parts) if value is None else str(value)
        else:
            if _timed_out(value):
                budget.spent = True
            raise value
