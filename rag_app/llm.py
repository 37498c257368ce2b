"""The OpenAI-compatible chat endpoint (``RAG_LLM_BASE_URL``) that both the answer's LLM mode
(rag_app/synthesis/citations.py) and the follow-up rewriter (rag_app/analysis/followup_llm.py)
call: its client, and an error from it in one safe line. A leaf: it imports nothing of rag_app,
so neither of those layers has to import the other for it.
"""

from __future__ import annotations

from llama_index.core.llms import LLM


def describe(exc: BaseException) -> str:
    """An exception in one line without secrets or a traceback: its type and first line."""
    first = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def build_llm(base_url: str, model: str, api_key: str | None, timeout: float = 60.0) -> LLM:
    """The endpoint's chat model: one try per call (an answer waits on it within one time
    budget, rag_app/llm_budget.py: no second try), ``timeout`` seconds per request phase."""
    from llama_index.llms.openai_like import OpenAILike

    return OpenAILike(
        model=model,
        api_base=base_url,
        api_key=api_key or "not-needed",
        is_chat_model=True,
        temperature=0.0,
        timeout=timeout,
        max_retries=0,
        context_window=16000,
    )
