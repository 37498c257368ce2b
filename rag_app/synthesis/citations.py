"""CitationSynthesizer: answers whose ``[n]`` markers point at backend sources.

Extractive mode (default, no model): pick the sentences, list items or table rows (rendered with
their column names) that best cover the question, and cite each. LLM mode: an OpenAI-compatible
chat endpoint answers from numbered evidence; markers it invents (numbers without a source) are
removed. Either way the sources come from the retrieval backend, never from model text.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from llama_index.core.base.response.schema import Response
from llama_index.core.llms import LLM, ChatMessage, MessageRole
from llama_index.core.llms.mock import MockLLM
from llama_index.core.prompts.mixin import PromptDictType
from llama_index.core.response_synthesizers.base import BaseSynthesizer
from llama_index.core.schema import NodeWithScore, QueryBundle

from rag_app.postprocess.rerank import QuestionWeights, coverage
from rag_app.store.ledger import Ledger
from rag_app.synthesis.prompts import SYSTEM_PROMPT, USER_TEMPLATE, format_evidence
from rag_app.types import REFUSAL

logger = logging.getLogger(__name__)

_SENTENCE = re.compile(r"[^。！？；!?\n]+[。！？；!?]?")
_MARKER = re.compile(r"\[(\d{1,3})\]")
_SEPARATOR = re.compile(r"^\|?\s*:?-{2,}")


@dataclass
class Unit:
    source: int  # 1-based source number
    position: int
    text: str  # what is shown
    scoring_text: str
    score: float = 0.0
    table_row: bool = False


def _cells(line: str) -> list[str]:
    inner = line.strip()
    inner = inner[1:] if inner.startswith("|") else inner
    inner = inner[:-1] if inner.endswith("|") else inner
    return [c.strip() for c in re.split(r"(?<!\\)\|", inner)]


def split_units(text: str, source: int) -> list[Unit]:
    """Sentences and list items of prose; table rows rendered as 'column：value' pairs."""
    units: list[Unit] = []
    header: list[str] | None = None
    lines = text.splitlines()
    for i, raw in enumerate(lines):
        line = raw.strip()
        if not line or line.startswith("```"):
            continue
        if line.startswith("|"):
            if _SEPARATOR.match(line):
                continue
            nxt = lines[i + 1].strip() if i + 1 < len(lines) else ""
            if header is None or _SEPARATOR.match(nxt):
                header = _cells(line)
                continue
            cells = _cells(line)
            pairs = [f"{h}：{c}" for h, c in zip(header, cells, strict=False) if c]
            shown = "，".join(pairs)
            units.append(Unit(source, i, shown, " ".join(header) + "\n" + line, table_row=True))
            continue
        header = None
        if line.startswith("#"):
            continue
        for match in _SENTENCE.finditer(line):
            sentence = match.group(0).strip()
            if len(sentence) >= 4:
                units.append(Unit(source, i * 1000 + match.start(), sentence, sentence))
    return units


_CN_DIGITS = "零〇一二两三四五六七八九十百千万半"
_NUMBER = rf"(?:\d+(?:\.\d+)?|[{_CN_DIGITS}]+)"
# (question form, value form): a question asking "how long" is answered by a sentence holding a
# duration, "how much money" by an amount, "when" by a date or time, "what share" by a ratio
_ANSWER_TYPES: tuple[tuple[re.Pattern[str], re.Pattern[str]], ...] = (
    (
        re.compile(
            r"多久|多长时间|多长的?(?:时间|期限|期间)|(?:期限|周期|时限|有效期)是?多|"
            r"几(?:个)?(?:天|日|周|月|年|小时|分钟)|多少(?:个)?(?:天|日|周|月|年|小时|分钟)"
        ),
        re.compile(
            rf"{_NUMBER}\s*(?:个)?(?:工作日|自然日|天|日|周|星期|个月|月|年|小时|分钟|秒)|"
            r"每(?:天|日|周|月|季度?|年|半年)|半年|季度"
        ),
    ),
    (
        re.compile(r"多少钱|(?:费用|金额|价格|保费|价钱|罚款|赔偿金?)是?多少|多少元|收费"),
        re.compile(rf"{_NUMBER}\s*(?:万|亿)?\s*(?:元|美元|块)|[¥￥$]\s*\d|人民币"),
    ),
    (
        re.compile(r"什么时候|何时|哪一?年|哪一?天|几号|几点|(?:日期|时间)是(?:什么|哪)"),
        re.compile(
            rf"{_NUMBER}\s*(?:年|月|日|号)|\d{{1,2}}\s*[:：]\s*\d{{2}}|\d{{4}}[-/.]\d{{1,2}}|"
            r"每(?:天|日|周|月|年)|[上下]午|凌晨|当天|次日"
        ),
    ),
    (
        re.compile(r"比例|占比|百分之多少|比率|[率比]是?多少"),
        re.compile(r"\d\s*[%％‰]|百分之|[一二三四五六七八九十]成"),
    ),
)
ANSWER_TYPE_BONUS = 0.5


def answer_value_pattern(question: str) -> re.Pattern[str] | None:
    """The form of the value the question asks for (a duration, an amount, a date, a ratio),
    when its question word says so; None for other questions."""
    for asked, value in _ANSWER_TYPES:
        if asked.search(question):
            return value
    return None


def _has_value(unit: Unit, value: re.Pattern[str]) -> bool:
    """The unit holds a value of the asked kind; a table row's bare number counts (the unit is
    in its column name: "年交保费（元）")."""
    return bool(value.search(unit.text)) or (unit.table_row and any(c.isdigit() for c in unit.text))


def extract_answer(
    question: str,
    nodes: Sequence[NodeWithScore],
    weights: dict[str, float],
    *,
    max_units: int = 3,
    max_chars: int = 500,
) -> str:
    units = [
        u for n, node in enumerate(nodes, start=1) for u in split_units(node.node.get_content(), n)
    ]
    headings = {
        part.strip().lstrip("#").strip()
        for node in nodes
        for part in str(node.node.metadata.get("title_path", "")).split(" > ")
    }
    units = [u for u in units if u.text.strip().strip("*").strip() not in headings]
    if not units:
        return ""
    value = answer_value_pattern(question)
    typed: set[int] = set()  # ids of units holding a value of the asked kind
    for u in units:
        # prefer earlier (better ranked) sources a little
        u.score = coverage(u.scoring_text, weights) - 0.01 * (u.source - 1)
        if value is not None and u.score > 0 and _has_value(u, value):
            # "密码多久修改一次" is answered by the item with "每90天", not by the sentence that
            # repeats the question's words without a duration
            u.score *= 1 + ANSWER_TYPE_BONUS
            typed.add(id(u))
    ranked = sorted(units, key=lambda u: -u.score)
    if typed:  # units without a value of the asked kind can't be the answer
        ranked = [u for u in ranked if id(u) in typed]
    best = ranked[0].score
    chosen: list[Unit] = []
    used = 0
    for u in ranked:
        if len(chosen) >= max_units or u.score < 0.5 * best or u.score <= 0:
            break
        if used + len(u.text) > max_chars and chosen:
            continue
        if any(u.text == c.text for c in chosen):
            continue
        chosen.append(u)
        used += len(u.text)
    if not chosen:
        chosen = [ranked[0]]
    chosen = _with_list_items(chosen, units, max_chars=max_chars * 2)
    chosen.sort(key=lambda u: (u.source, u.position))
    return "\n".join(f"{u.text.rstrip()} [{u.source}]" for u in chosen)


_ITEM = re.compile(
    r"^[*\s]*(?:[（(][一二三四五六七八九十\d]+[)）]|[一二三四五六七八九十]+、|\d+[.、)）]|[-*•])"
)


def _with_list_items(chosen: list[Unit], units: list[Unit], *, max_chars: int) -> list[Unit]:
    """A chosen lead-in ("有下列情形之一的，…：") brings the list items that follow it."""
    out = list(chosen)
    used = sum(len(u.text) for u in out)
    for lead in chosen:
        if not lead.text.rstrip("*").rstrip().endswith(("：", ":")):
            continue
        following = sorted(
            (u for u in units if u.source == lead.source and u.position > lead.position),
            key=lambda u: u.position,
        )
        for item in following:
            if not _ITEM.match(item.text) or item in out:
                break
            if used + len(item.text) > max_chars:
                break
            out.append(item)
            used += len(item.text)
    return out


def clean_markers(text: str, n_sources: int) -> tuple[str, list[int]]:
    """Drop ``[k]`` markers that point at no source; return the text and the markers kept."""
    kept: list[int] = []

    def keep(match: re.Match[str]) -> str:
        k = int(match.group(1))
        if 1 <= k <= n_sources:
            kept.append(k)
            return match.group(0)
        return ""

    return _MARKER.sub(keep, text).strip(), kept


def build_llm(base_url: str, model: str, api_key: str | None, timeout: float = 60.0) -> LLM:
    from llama_index.llms.openai_like import OpenAILike

    return OpenAILike(
        model=model,
        api_base=base_url,
        api_key=api_key or "not-needed",
        is_chat_model=True,
        temperature=0.0,
        timeout=timeout,
        max_retries=1,
        context_window=16000,
    )


class CitationSynthesizer(BaseSynthesizer):
    """Builds an answer with ``[n]`` markers from evidence nodes (n = position, 1-based)."""

    def __init__(
        self,
        *,
        ledger: Ledger | None = None,
        llm: LLM | None = None,
        weights: QuestionWeights | None = None,
    ) -> None:
        """``weights``: a per-answer IDF memo shared with the reranker (default: its own)."""
        super().__init__(llm=llm or MockLLM())
        self._ledger = ledger
        self._weights = weights if weights is not None else QuestionWeights(ledger)
        self.use_llm = llm is not None

    def _get_prompts(self) -> PromptDictType:
        return {}

    def _update_prompts(self, prompts: PromptDictType) -> None:
        return None

    def get_response(self, query_str: str, text_chunks: Sequence[str], **kwargs: Any) -> str:
        raise NotImplementedError("CitationSynthesizer works on nodes: call synthesize()")

    async def aget_response(self, query_str: str, text_chunks: Sequence[str], **kwargs: Any) -> str:
        raise NotImplementedError("CitationSynthesizer works on nodes: call synthesize()")

    def synthesize(  # type: ignore[override]
        self,
        query: QueryBundle | str,
        nodes: list[NodeWithScore],
        additional_source_nodes: Sequence[NodeWithScore] | None = None,
        **kwargs: Any,
    ) -> Response:
        question = query.query_str if isinstance(query, QueryBundle) else query
        if not nodes:
            return Response(
                REFUSAL, source_nodes=[], metadata={"refused": True, "reason": "no_evidence"}
            )
        if self.use_llm:
            return self._llm_answer(question, nodes)
        answer = extract_answer(question, nodes, self._weights(question))
        if not answer:
            return Response(
                REFUSAL,
                source_nodes=list(nodes),
                metadata={"refused": True, "reason": "no_answer_sentence"},
            )
        return Response(
            answer, source_nodes=list(nodes), metadata={"refused": False, "mode": "extractive"}
        )

    def _llm_answer(self, question: str, nodes: list[NodeWithScore]) -> Response:
        evidence = format_evidence(
            [
                (i, str(n.node.metadata.get("title_path", "")), n.node.get_content())
                for i, n in enumerate(nodes, start=1)
            ]
        )
        messages = [
            ChatMessage(role=MessageRole.SYSTEM, content=SYSTEM_PROMPT),
            ChatMessage(
                role=MessageRole.USER,
                content=USER_TEMPLATE.format(evidence=evidence, question=question),
            ),
        ]
        reply = self._llm.chat(messages)
        text = (reply.message.content or "").strip()
        cleaned, kept = clean_markers(text, len(nodes))
        refused = not cleaned or REFUSAL.rstrip("。") in cleaned
        meta = {"refused": refused, "mode": "llm", "markers": kept}
        if refused:
            meta["reason"] = "llm_refused"
            return Response(REFUSAL, source_nodes=list(nodes), metadata=meta)
        return Response(cleaned, source_nodes=list(nodes), metadata=meta)
