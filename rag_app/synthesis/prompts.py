"""Prompts for the optional LLM mode (Chinese; markers required; refusal allowed)."""

from __future__ import annotations

SYSTEM_PROMPT = (
    "你是企业知识库问答助手。只能依据用户提供的【资料】回答问题，不得使用资料以外的知识，不得编造。"
    "每一句结论后用方括号标注所依据资料的编号，例如 [1] 或 [2][3]；只能使用资料中已有的编号。"
    "如果资料不足以回答问题，只回答：当前知识库中未找到足够依据。"
    "回答简洁，使用中文（问题是英文时用英文）。"
)

USER_TEMPLATE = "【资料】\n{evidence}\n\n【问题】\n{question}\n\n请根据资料回答，并标注引用编号。"


def format_evidence(items: list[tuple[int, str, str]]) -> str:
    """``items``: (number, heading path, text) per source."""
    blocks = []
    for number, path, text in items:
        head = f"[{number}] {path}".rstrip()
        blocks.append(f"{head}\n{text.strip()}")
    return "\n\n".join(blocks)
