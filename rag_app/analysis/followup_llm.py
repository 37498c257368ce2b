"""Follow-up questions rewritten by an LLM (``RAG_LLM_BASE_URL``), the rules as the fallback.

With an OpenAI-compatible endpoint, a follow-up is rewritten from the conversation's last turns
(their questions as resolved) into a question that stands alone. The reply is checked (one line,
not empty, not much longer than the questions, no refusal or explanation, quotes and ``问题：``
removed); any failure (endpoint down, timeout, a reply that fails the checks) gives None, and the
rule-based resolution (rag_app/analysis/followup.py) stands. A first turn is never sent.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from llama_index.core.llms import LLM, ChatMessage, MessageRole

from rag_app.llm import build_llm, describe
from rag_app.llm_budget import DEFAULT_BUDGET, call_llm, llm_budget

if TYPE_CHECKING:
    from rag_app.config import Settings

logger = logging.getLogger(__name__)

HISTORY_TURNS = 3  # previous turns shown to the LLM
REWRITE_TIMEOUT = 20.0  # seconds at most per call (RAG_LLM_TIMEOUT when lower): a turn waits on it

SYSTEM = (
    "你是对话问题改写助手。根据对话历史，把用户的最后一个问题改写成不依赖上下文、可以单独理解的"
    "完整问题：补全省略的对象，把代词换成它所指的内容。如果最后一个问题本身已经完整，原样输出。"
    "只输出改写后的问题本身，不要回答问题，不要解释。"
)
USER = "对话历史（较早的在前）：\n{history}\n\n最后一个问题：{question}\n\n改写后的问题："

_PREFIX = re.compile(
    r"^(?:改写后的问题|改写后|改写结果|独立问题|完整问题|最后一个问题|问题|question)\s*[:：]\s*",
    re.IGNORECASE,
)
_QUOTES = {'"': '"', "'": "'", "“": "”", "‘": "’", "「": "」", "『": "』", "`": "`"}
# a reply that talks about the task or refuses it instead of being the question (a marker the
# questions contain themselves, 我无法登录怎么办？, does not count)
_NOT_A_QUESTION = (
    "抱歉", "对不起", "作为ai", "作为一个ai", "作为人工智能", "语言模型", "我无法", "我不能",
    "无法改写", "无需改写", "不需要改写", "改写后", "已经完整", "已完整", "对话历史", "原问题",
    "sorry", "as an ai", "i can't", "i cannot",
)  # fmt: skip


def clean_rewrite(reply: str, question: str, history: Sequence[str]) -> str | None:
    """The rewritten question in ``reply``, or None when the reply isn't one."""
    previous = history[-1] if history else ""
    text = _PREFIX.sub("", reply.strip()).strip()
    if len(text) > 1 and _QUOTES.get(text[0]) == text[-1]:  # 问题："…" and "问题：…" both
        text = _PREFIX.sub("", text[1:-1].strip()).strip()
    if not text or "\n" in text or "\r" in text:
        return None
    if len(text) > 3 * max(len(question.strip()), len(previous.strip())) + 50:
        return None
    lowered, asked = text.lower(), "\n".join([question, *history]).lower()
    if any(m in lowered and m not in asked for m in _NOT_A_QUESTION):
        return None
    # an answer rather than a question: a statement ending in 。 for a question that did not
    if text.endswith(("。", ".")) and not question.strip().endswith(("。", ".")):
        return None
    return text


@dataclass
class LLMFollowUpRewriter:
    """Rewrites a follow-up from the resolved questions of the previous turns (oldest first)."""

    llm: LLM
    history_turns: int = HISTORY_TURNS
    budget: float = DEFAULT_BUDGET  # RAG_LLM_BUDGET: a chat turn's, shared with its answer

    @classmethod
    def from_settings(cls, settings: Settings) -> LLMFollowUpRewriter | None:
        """The rewriter on the configured endpoint; None without ``RAG_LLM_BASE_URL``."""
        if not settings.llm_base_url:
            return None
        key = settings.llm_api_key.get_secret_value() if settings.llm_api_key else None
        timeout = min(settings.llm_timeout, REWRITE_TIMEOUT, settings.llm_budget)
        llm = build_llm(settings.llm_base_url, settings.llm_model, key, timeout=timeout)
        return cls(llm, budget=settings.llm_budget)

    def messages(self, question: str, history: Sequence[str]) -> list[ChatMessage]:
        shown = list(history)[-self.history_turns :]
        lines = "\n".join(f"{i}. {q.strip()}" for i, q in enumerate(shown, start=1))
        return [
            ChatMessage(role=MessageRole.SYSTEM, content=SYSTEM),
            ChatMessage(
                role=MessageRole.USER, content=USER.format(history=lines, question=question.strip())
            ),
        ]

    def rewrite(self, question: str, history: Sequence[str]) -> str | None:
        """The standalone question, or None (no previous turn, the call failed, or its reply
        was not a question): then the rule-based resolution stands."""
        if not history or not question.strip():
            return None
        try:
            with llm_budget(self.budget) as budget:  # the chat turn's, shared with the answer
                reply = call_llm(self.llm, self.messages(question, history), budget)
        except Exception as exc:  # down, slow, or not OpenAI-compatible
            logger.warning("follow-up rewrite failed, rules used: %s", describe(exc))
            return None
        text = clean_rewrite(reply, question, history)
        if text is None:
            # the reply's length, not its text: it may quote the user's conversation
            logger.warning("follow-up rewrite rejected (%d characters), rules used", len(reply))
        return text
