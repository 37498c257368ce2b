"""EvidenceGate: refuse before generation when the evidence does not support the question.

A score threshold can't tell "the entity is there but the asked detail is not" from a real answer
(measured on the dev data: see the README). The gate therefore checks, on the reranked evidence:

1. ``no_evidence``        nothing was retrieved in scope;
2. ``entity_missing``     a specific entity of the question (某某-style names, 《titles》, companies,
                          hospitals, courts, quoted terms, codes and numbers) is in no evidence passage;
3. ``attribute_missing``  the asked attribute ("X的Y是什么" → Y) is not covered by the passages that
                          mention the entity (IDF-weighted share of its terms below a threshold);
4. ``answer_type_missing`` the answer type asked for is absent near the entity: a number for
                          多少/几, a date for 何时/什么时候/哪一年/哪一天;
5. ``low_coverage``       the best passage covers too little of the question overall.

Every threshold is a setting, calibrated on development data (``benchmarks/gate.py``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle
from pydantic import Field, PrivateAttr

from rag_app.postprocess.rerank import question_weights
from rag_app.retrieval.tokenizer import STOPWORDS, tokenize
from rag_app.store.ledger import Ledger

_QW = (
    r"(?:是什么|是多少|是谁|是哪[一个些家位天年种]?|有哪些|有什么|有何|是否|能否|可否|如何|怎样|怎么样|怎么"
    r"|什么时候|何时|哪一天|哪一年|哪天|哪年|多少|多久|多长|几[个次年天岁月项条]?|哪[些个家位种里]|谁|什么|何种"
    r"|what|which|who|when|how|where|why)"
)
_QW_RE = re.compile(_QW, re.IGNORECASE)
_PERSON = re.compile(r"[\u4e00-\u9fff]某某?")
_ORG = re.compile(
    r"[\u4e00-\u9fffA-Za-z0-9（）()]{2,30}?(?:有限责任公司|股份有限公司|有限公司|集团|公司|医院|法院|检察院|银行|大学|学院|委员会|研究院|保健院)"
)
_TITLE = re.compile(r"[《“\"「]([^》”\"」]{2,40})[》”\"」]")
_CODE = re.compile(r"[A-Za-z][A-Za-z0-9_.-]*\d[A-Za-z0-9_.-]*|\d{3,}")
_NUMBER = re.compile(r"\d|[一二三四五六七八九十百千万两]+[个次年天岁月日元项条%％倍]")
_DATE = re.compile(
    r"\d{4}\s*年|\d{1,2}\s*月\s*\d{1,2}\s*[日号]|\d{4}[-/.]\d{1,2}|[一二三四五六七八九十]+月|\d{1,2}\s*月"
)
_ASKS_NUMBER = re.compile(
    r"多少|几[个次年天岁月项条]?|多久|多长|多大|多高|多重|比例|金额|数量|how (many|much|long)"
)
_ASKS_DATE = re.compile(r"何时|什么时候|哪一天|哪一年|哪天|哪年|日期|when")
# generic attribute words: their presence proves nothing, the answer type does
GENERIC = frozenset(
    "时间 日期 情况 分别 具体 主要 哪些 内容 信息 结果 方面 相关 一下 更 谁 更早 更晚 更高 更长 更多".split()
)
_LEADING = re.compile(r"^(?:比较|对比|根据|按照|在|和|与|及|以及|、|，)+")
_SCOPE_PREFIX = re.compile(
    r"^(?:根据|按照|依据|在)[^，,。？?]{0,60}?(?:的)?(?:判决书|病历|住院病历|报告|年报|文件|条款|制度|规定|规范|指南|手册)[，,]"
)


@dataclass
class QuestionAnalysis:
    entities: list[str] = field(default_factory=list)
    attribute: str = ""
    attribute_terms: list[str] = field(default_factory=list)
    asks_number: bool = False
    asks_date: bool = False


def analyze_question(question: str) -> QuestionAnalysis:
    q = question.strip().rstrip("？?。.！! ")
    body = _SCOPE_PREFIX.sub("", q)
    entities: list[str] = []
    for pattern in (_TITLE,):
        entities += [m.group(1) for m in pattern.finditer(q)]
    for m in _ORG.finditer(body):
        org = _LEADING.sub("", m.group(0))
        if len(org) >= 4 and not re.search(r"哪|什么|该|本", org):
            entities.append(org)
    entities += [m.group(0) for m in _PERSON.finditer(body)]
    entities += [m.group(0) for m in _CODE.finditer(body)]
    entities = list(dict.fromkeys(e.strip() for e in entities if e.strip()))
    # the asked attribute: between the last 的 before the question word and the question word,
    # plus what follows the question word ("是什么颜色" → 颜色)
    attribute = ""
    match = _QW_RE.search(body)
    if match:
        before, after = body[: match.start()], body[match.end() :]
        head = before.rsplit("的", 1)[-1] if "的" in before else ""
        tail = re.split(r"[，,；;。]", after, maxsplit=1)[0]
        attribute = (head + tail).strip()
    for entity in entities:
        attribute = attribute.replace(entity, "")
    terms = [
        t
        for t in dict.fromkeys(tokenize(attribute))
        if t not in GENERIC and t not in STOPWORDS and not _QW_RE.fullmatch(t)
    ]
    return QuestionAnalysis(
        entities=entities,
        attribute=attribute,
        attribute_terms=terms,
        asks_number=bool(_ASKS_NUMBER.search(q)),
        asks_date=bool(_ASKS_DATE.search(q)),
    )


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text).lower()


@dataclass
class GateDecision:
    refused: bool
    reason: str | None
    details: dict[str, Any] = field(default_factory=dict)


class EvidenceGate(BaseNodePostprocessor):
    """Passes the evidence through, or refuses (returns no nodes) and records why."""

    min_attribute_coverage: float = Field(0.5, ge=0, le=1)
    min_question_coverage: float = Field(0.35, ge=0, le=1)
    check_entities: bool = True
    check_answer_type: bool = True
    _ledger: Ledger | None = PrivateAttr(default=None)
    _last: GateDecision | None = PrivateAttr(default=None)

    def __init__(self, ledger: Ledger | None = None, **data: Any) -> None:
        super().__init__(**data)
        self._ledger = ledger

    @classmethod
    def class_name(cls) -> str:
        return "EvidenceGate"

    @property
    def last_decision(self) -> GateDecision | None:
        return self._last

    def decide(self, question: str, nodes: Sequence[NodeWithScore]) -> GateDecision:
        if not nodes:
            return GateDecision(True, "no_evidence")
        texts = [
            str(n.node.metadata.get("title_path", "")) + "\n" + n.node.get_content() for n in nodes
        ]
        squashed = [_squash(t) for t in texts]
        analysis = analyze_question(question)
        details: dict[str, Any] = {
            "entities": analysis.entities,
            "attribute": analysis.attribute,
            "attribute_terms": analysis.attribute_terms,
        }
        # 2. every specific entity must be somewhere in the evidence
        near = list(range(len(texts)))
        if self.check_entities and analysis.entities:
            missing = [e for e in analysis.entities if not any(_squash(e) in s for s in squashed)]
            if missing:
                details["missing_entities"] = missing
                return GateDecision(True, "entity_missing", details)
            near = [
                i for i, s in enumerate(squashed) if any(_squash(e) in s for e in analysis.entities)
            ]
        near_text = "\n".join(texts[i] for i in near)
        # 3. the asked attribute must be covered near the entity
        weights = question_weights(self._ledger, question)
        if analysis.attribute_terms:
            attr_weights = {t: weights.get(t, 1.0) for t in analysis.attribute_terms}
            total = sum(attr_weights.values())
            low = near_text.lower()
            found = sum(w for t, w in attr_weights.items() if t in low)
            share = found / total if total else 1.0
            details["attribute_coverage"] = round(share, 3)
            if share < self.min_attribute_coverage:
                return GateDecision(True, "attribute_missing", details)
        # 4. the answer type must be present near the entity
        if self.check_answer_type:
            if analysis.asks_date and not _DATE.search(near_text):
                return GateDecision(True, "answer_type_missing", {**details, "expected": "date"})
            if analysis.asks_number and not _NUMBER.search(near_text):
                return GateDecision(True, "answer_type_missing", {**details, "expected": "number"})
        # 5. overall coverage of the best passage
        total = sum(weights.values())
        if total > 0:
            best = max(
                sum(w for t, w in weights.items() if t in text.lower()) / total for text in texts
            )
            details["question_coverage"] = round(best, 3)
            if best < self.min_question_coverage:
                return GateDecision(True, "low_coverage", details)
        return GateDecision(False, None, details)

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        question = query_bundle.query_str if query_bundle is not None else ""
        self._last = self.decide(question, nodes)
        return [] if self._last.refused else nodes
