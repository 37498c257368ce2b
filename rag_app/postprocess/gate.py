"""EvidenceGate: refuse before generation when the evidence does not support the question.

A score threshold can't tell "the entity is there but the asked detail is not" from a real answer
(measured on the dev data: see ``benchmarks/gate.py``). The gate therefore reads the question
(:func:`analyze_question`) and checks the reranked evidence passage by passage:

1. ``no_evidence``          nothing was retrieved in scope;
2. ``entity_missing``       a specific entity of the question (某某-style names, companies, hospitals,
                            courts, 《titles》, quoted terms, codes, numbers, article labels, capitalised
                            English names) is in no evidence passage;
3. ``attribute_missing``    no passage that belongs to the entity covers the asked attribute: the
                            *head* (what is asked: "X的血型是什么" → 血型, "是什么颜色" → 颜色) and the
                            rest of the predicate, with fuzzy matching (chars in order within a short
                            window, char bigrams, English stems) weighted by IDF; in a comparison
                            ("A和B的Y谁更高", "A和B分别…") every entity needs its own passage;
4. ``answer_type_missing``  the passage holding the attribute has no value of the type asked: a
                            number for 多少/几/多久/how many, a date for 何时/哪一年/哪一天/when;
5. ``low_coverage``         the best passage covers too little of the question overall.

A passage belongs to an entity when it names it, or when its document names it in a retrieved
passage or in its opening chunk (a record names its patient once, in the header). With a ledger the
gate can also look up, inside the scope, the chunks of the entity's documents that hold the
attribute when retrieval missed them (``lookup``); found chunks are appended to the evidence.

Every threshold is a field, calibrated on development data (``benchmarks/gate.py``).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from pydantic import Field, PrivateAttr

from rag_app.postprocess.rerank import idf_weights
from rag_app.retrieval.tokenizer import STOPWORDS, _jieba, label_tokens, query_tokens
from rag_app.store.ledger import Ledger

# ----- question words ------------------------------------------------------------------------
# Longest first; each group maps to the answer type it asks for.
_QW_DATE = (
    r"什么时候|什么时间|何时|哪一年|哪年|哪一天|哪天|哪个月|哪一月|哪月|几月份|几月|几号|几点|哪一日"
)
_QW_NUMBER = r"多少|多长时间|多长|多久|多大|多高|多重|多远|多宽|多深|多快|几[个次年天岁月位项条名只家台种倍级层期]?"
_QW_PERSON = r"哪一位|哪位|是谁|谁"
_QW_PLACE = r"哪里|哪儿|何处|何地|在哪(?![些个种类一家位年天月])"
_QW_LIST = r"哪些"
_QW_YESNO = r"是否|是不是|能否|可否|能不能|可不可以|有没有|会不会"
_QW_REASON = r"为什么|为何|何故"
_QW_HOW = r"如何|怎么样|怎样|怎么|怎么办"
_QW_WHAT = r"是什么|什么|哪一个|哪一种|哪个|哪种|哪类|哪家|哪支|哪条|哪项|何种|有何|啥|哪"
_QW_ZH = re.compile(
    "|".join(
        f"(?P<{name}>{pattern})"
        for name, pattern in (
            ("date", _QW_DATE),
            ("person", _QW_PERSON),
            ("list", _QW_LIST),
            ("yesno", _QW_YESNO),
            ("reason", _QW_REASON),
            ("number", _QW_NUMBER),
            ("place", _QW_PLACE),
            ("how", _QW_HOW),
            ("what", _QW_WHAT),
        )
    )
)
_QW_EN = re.compile(
    r"\b(?:(?P<number>how\s+(?:many|much|long|old|often|far|big|large|high)|what\s+percentage)"
    r"|(?P<date>when|what\s+(?:date|day|year|time|month))|(?P<person>who|whom|whose)"
    r"|(?P<place>where)|(?P<reason>why)|(?P<how>how)|(?P<what>what|which))\b",
    re.IGNORECASE,
)
_EN_YESNO = re.compile(r"^(?:is|are|was|were|do|does|did|can|could|should|will|would|has|have)\b", re.I)

# Head nouns that name the *type* of the answer rather than what is asked ("判决时间" → 判决 + a
# date, "什么意思" → the entity's description); they are not required literally.
GENERIC = frozenset(
    """
    时间 日期 时候 时刻 年份 月份 期限 多久 金额 数额 数量 数目 数值 总额 多少 比例 比率 意思 含义 意义 定义
    情况 内容 信息 资料 方面 方式 方法 办法 做法 步骤 流程 名称 名字 类型 种类 结果 原因 理由 问题 事情 东西
    地方 地点 位置 人 人员 钱 费用 价格 哪些 分别 各自 具体 主要 相关 一下 什么 哪 谁 几 多 更 最 比 较 高 低 早 晚 长 短
    大 小 快 慢 多 少 强 弱 好 差 差异 区别 不同 相同 一样 比较 对比 如何 怎样 影响 作用 特点 要求 规定 标准
    the a an of for to in on at by with from and or is are was were be been do does did what which
    who whom whose when where why how many much long old often far big large high kind type name
    """.split()
)
_COMPARATIVE = re.compile(r"(?:更|较|最|比较)[\u4e00-\u9fff]{0,3}$|(?:er|est)$")

# ----- entities --------------------------------------------------------------------------------
_NOT_NAME = "的把在是了和与及或、，,。；;：:想要去到从向对给让被将我你他她它这那该本其各每某哪什么吗呢就都也还又有为以于比较根据按照依据关于如果"
_ORG_SUFFIX = (
    "股份有限公司|有限责任公司|有限公司|集团公司|集团|公司|医院|保健院|卫生院|法院|检察院|银行|大学|学院|学校|"
    "委员会|研究院|研究所|事务所|协会|基金会|中心|工作室|商店|酒店|超市|工厂|厂|局|厅"
)
_ORG = re.compile(rf"(?:[^\s{_NOT_NAME}]){{2,24}}?(?:{_ORG_SUFFIX})")
_ORG_CORE = re.compile(rf"(?:{_ORG_SUFFIX})$")
_PERSON = re.compile(r"(?<![的是在有对与及等为某一个])([\u4e00-\u9fff]某某?)(?![个些种天日年位项次人])")
_TITLE = re.compile(r"[《“\"「『]([^》”\"」』]{2,40})[》”\"」』]")
_CODE = re.compile(r"(?<![A-Za-z0-9_.])[A-Za-z][A-Za-z0-9_.\-]*[A-Za-z0-9](?![A-Za-z0-9_])|\d+(?:\.\d+)?")
_EN_NAME = re.compile(r"(?<!^)(?<![.?!]\s)\b([A-Z][a-zA-Z0-9]+(?:\s+[A-Z][a-zA-Z0-9]+)*)")
_YEAR = re.compile(r"(?<!\d)((?:19|20)\d{2})\s*年")
_SCOPE = re.compile(
    r"^(?:根据|按照|依据|参照|依照|在|从)(?P<scope>[^，,。？?]{2,60}?)"
    r"(?:的)?(?:判决书|裁定书|病历|住院病历|报告|年报|文件|条款|制度|规定|规范|办法|指南|手册|文档|合同|说明书|记录)"
    r"(?:中|里|上|内)?(?:[，,：:]|\s+)"
)
_SCOPE_IN = re.compile(r"^(?P<scope>[^，,。？?\s]{2,30})(?:中|里)[，,]")

# ----- answer types ------------------------------------------------------------------------------
_CN_NUM = "〇零一二三四五六七八九十百千万亿两半"
_UNIT = (
    r"(?:个|次|年|天|日|岁|周岁|月|周|小时|分钟|秒|元|万|亿|项|条|人|名|倍|%|％|位|只|家|台|例|种|级|期|层|米|公里|"
    r"千米|厘米|毫米|克|千克|公斤|吨|升|毫升|度|℃|°|mb|gb|kb|tb|ms|mmhg|次/分|分)"
)
_NUMBER_VALUE = re.compile(rf"\d|[{_CN_NUM}]+{_UNIT}|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|twelve|hundred|thousand)\b", re.I)
_DATE_VALUE = re.compile(
    r"\d{4}\s*年|\d{1,2}\s*月\s*\d{0,2}|\d{4}[-/.]\d{1,2}|[〇零一二三四五六七八九]{4}年|"
    r"[一二三四五六七八九十]{1,3}月[一二三四五六七八九十]{0,3}|\d{1,2}:\d{2}|"
    r"\b(?:january|february|march|april|may|june|july|august|september|october|november|december|"
    r"jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec|monday|tuesday|wednesday|thursday|friday|"
    r"saturday|sunday|(?:19|20)\d{2})\b|[ap]\.m\.|上午|下午|晚上|凌晨|中午|每[天日周月年]|工作日|周[一二三四五六日末]",
    re.I,
)
# Head nouns that ask for a number or a date although no 多少/何时 is present ("入院时间是什么").
_DATE_HEAD = re.compile(r"(?:时间|日期|时候|时刻|年份|月份|哪年|哪天)$")
_NUMBER_HEAD = re.compile(
    r"(?:金额|数额|数量|数目|总额|比例|比率|费用|价格|年龄|次数|人数|面积|温度|余额|收入|利润|"
    r"[率额量数价费])$"
)
_DURATION_BEFORE = re.compile(r"多长|多久|多少")


def _nfkc(text: str) -> str:
    return unicodedata.normalize("NFKC", text)


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", _nfkc(text)).lower()


def _is_ascii_word(term: str) -> bool:
    return bool(re.fullmatch(r"[a-z0-9_.\-]+", term))


def _stem(word: str) -> str:
    w = word.lower()
    for suffix, keep in (("ies", "y"), ("sses", "ss"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3 and not w.endswith("ss"):
            return w[: len(w) - len(suffix)] + keep
    return w


def _en_stems(text: str) -> set[str]:
    return {_stem(w) for w in re.findall(r"[a-z][a-z0-9]*", text.lower())}


def _words(text: str) -> list[str]:
    """Precise-mode jieba words (lower-cased), without punctuation, stopwords or question words."""
    out = []
    for tok in _jieba().lcut(_nfkc(text).lower()):
        tok = tok.strip()
        if not tok or not re.search(r"\w", tok) or tok in STOPWORDS:
            continue
        out.append(tok)
    return out


@dataclass
class Entity:
    text: str
    kind: str  # person | org | title | code | number | year | label | name
    scope: bool = False  # named in the "根据…的判决书" prefix: identifies the document

    def forms(self) -> list[str]:
        """Squashed strings any of which counts as a mention."""
        base = _squash(self.text)
        forms = [base]
        if self.kind == "org":
            core = _ORG_CORE.sub("", base)
            if len(core) >= 2:
                forms.append(core)
        return forms


@dataclass
class SubQuestion:
    """One asked thing: ``head`` is what is asked, ``attribute`` the whole predicate."""

    text: str
    answer_type: str  # date | number | person | place | list | yesno | reason | how | what
    head: list[str] = field(default_factory=list)
    attribute: list[str] = field(default_factory=list)


@dataclass
class QuestionAnalysis:
    question: str
    language: str = "zh"
    entities: list[Entity] = field(default_factory=list)
    subquestions: list[SubQuestion] = field(default_factory=list)
    compare: bool = False

    @property
    def main_entities(self) -> list[Entity]:
        return [e for e in self.entities if not e.scope and e.kind in ("person", "org", "title", "name")]

    @property
    def attribute_terms(self) -> list[str]:
        return list(dict.fromkeys(t for s in self.subquestions for t in s.attribute))

    @property
    def head_terms(self) -> list[str]:
        return list(dict.fromkeys(t for s in self.subquestions for t in s.head))


def _strip_entities(text: str, entities: Sequence[Entity]) -> str:
    for e in sorted(entities, key=lambda e: -len(e.text)):
        text = text.replace(e.text, " ")
    return text


def _content_terms(text: str) -> list[str]:
    terms = []
    for w in _words(text):
        if w in GENERIC or _QW_ZH.fullmatch(w) or re.fullmatch(r"\d+", w):
            continue
        if _COMPARATIVE.search(w) and len(w) <= 3 and not _is_ascii_word(w):
            continue
        terms.append(w)
    return list(dict.fromkeys(terms))


def _entities_zh(q: str) -> list[Entity]:
    entities: list[Entity] = []
    scope_end = 0
    m = _SCOPE.match(q) or _SCOPE_IN.match(q)
    if m:
        scope_end = m.end()
    for m_t in _TITLE.finditer(q):
        entities.append(Entity(m_t.group(1), "title", m_t.start() < scope_end))
    for m_o in _ORG.finditer(q):
        org = re.sub(r"^(?:\d{4}年|\d+)", "", m_o.group(0))
        if len(org) >= 4 and not re.search(r"哪|什么|该|本|这|那|某", org):
            entities.append(Entity(org, "org", m_o.start() < scope_end))
    for m_p in _PERSON.finditer(q):
        entities.append(Entity(m_p.group(1), "person", m_p.start() < scope_end))
    for m_y in _YEAR.finditer(q):
        entities.append(Entity(m_y.group(1), "year", m_y.start() < scope_end))
    for label in label_tokens(_nfkc(q)):
        entities.append(Entity(label, "label"))
    taken = " ".join(e.text for e in entities)
    for m_c in _CODE.finditer(_nfkc(q)):
        code = m_c.group(0)
        if code in taken or (code.isdigit() and len(code) == 4 and code + "年" in q):
            continue
        kind = "number" if re.fullmatch(r"[\d.]+", code) else "code"
        entities.append(Entity(code, kind, m_c.start() < scope_end))
    seen: dict[str, Entity] = {}
    for e in entities:
        key = _squash(e.text)
        if key and key not in seen:
            seen[key] = e
    # drop an entity contained in a longer one of the same kind ("文化集团" in "百和文化集团")
    out = [
        e
        for e in seen.values()
        if not any(o is not e and o.kind == e.kind and e.text in o.text for o in seen.values())
    ]
    return out


def _subquestions_zh(q: str, entities: Sequence[Entity]) -> list[SubQuestion]:
    m_scope = _SCOPE.match(q) or _SCOPE_IN.match(q)
    body = q[m_scope.end() :] if m_scope else q
    clauses = [c for c in re.split(r"[，,；;？?。！!]", body) if c.strip()]
    subs: list[SubQuestion] = []
    context = ""
    for clause in clauses:
        matches = list(_QW_ZH.finditer(clause))
        if not matches:
            context += clause + " "
            continue
        # the asked thing is at the last question word ("几个月的宝宝…保费是多少" asks 保费)
        m = matches[-1]
        qtype = m.lastgroup or "what"
        before, after = clause[: m.start()], clause[m.end() :]
        after = re.sub(r"(?:更|较|最)[\u4e00-\u9fff]{0,2}$", "", after)  # "谁更高" → ""
        after = re.split(r"的?(?:呢|吗|啊)$", after)[0]
        before_clean = _strip_entities(before, entities)
        head_before = re.split(r"[的之]", before_clean)[-1]
        head_before = re.sub(r"^(?:是|有|为|在|的)+|(?:是|有|为|要|会|能|可以|应该|需要)+$", "", head_before)
        head_after = _strip_entities(after, entities)
        head_after = re.sub(r"(?:的)$", "", head_after)
        head_text = head_before + " " + head_after
        head = _content_terms(head_text)
        # "…的Y是什么" asks Y; "是什么颜色" asks 颜色: both parts when present
        attribute = _content_terms(_strip_entities(context + clause[: m.start()], entities) + " " + head_after)
        attribute = list(dict.fromkeys(attribute + head))
        raw_head = (head_before + head_after).strip()
        if qtype in ("what", "list", "how", "yesno") and _DATE_HEAD.search(raw_head) and not _DURATION_BEFORE.search(clause):
            qtype = "date"
        elif qtype in ("what", "how") and _NUMBER_HEAD.search(raw_head.rstrip("的")):
            qtype = "number"
        if not head and attribute and qtype not in ("yesno",):
            head = attribute[-1:]
        subs.append(SubQuestion(clause, qtype, head, attribute))
        context = ""
    if not subs and body.strip():
        terms = _content_terms(_strip_entities(body, entities))
        subs.append(SubQuestion(body, "what", terms[-1:], terms))
    return subs


_EN_AUX = r"(?:is|are|was|were|do|does|did|should|can|could|will|would|must|has|have|had|may|might)"
_EN_PREP = r"(?:of|for|in|on|at|to|from|with|by|about|during|after|before|into|per|under|over)"


def _analyze_en(q: str) -> QuestionAnalysis:
    entities: list[Entity] = []
    for m in _EN_NAME.finditer(q):
        name = m.group(1)
        if name.lower() in STOPWORDS or name.lower() in {"i"}:
            continue
        entities.append(Entity(name, "name"))
    for m in _CODE.finditer(q):
        if re.search(r"\d", m.group(0)):
            entities.append(Entity(m.group(0), "number" if m.group(0)[0].isdigit() else "code"))
    for m in _TITLE.finditer(q):
        entities.append(Entity(m.group(1), "title"))
    low = q.lower()
    m_qw = _QW_EN.search(low)
    qtype = (m_qw.lastgroup or "what") if m_qw else ("yesno" if _EN_YESNO.match(low) else "what")
    rest = low[m_qw.end() :] if m_qw else low
    stripped = _strip_entities(rest, [Entity(e.text.lower(), e.kind) for e in entities])
    words = re.findall(r"[a-z][a-z0-9\-]*", stripped)
    head_words: list[str] = []
    if m_qw and words:
        if re.match(rf"^{_EN_AUX}$", words[0]):
            # "what is the dress code for …" → the noun phrase after the auxiliary
            for w in words[1:]:
                if re.fullmatch(_EN_PREP, w) or re.fullmatch(_EN_AUX, w):
                    break
                head_words.append(w)
        else:
            # "what laptop do …" / "which phone extension should …" → the words before the verb
            for w in words:
                if re.fullmatch(_EN_AUX, w) or re.fullmatch(_EN_PREP, w):
                    break
                head_words.append(w)
    attr = [w for w in dict.fromkeys(words) if w not in STOPWORDS and w not in GENERIC and len(w) > 1]
    head = [w for w in dict.fromkeys(head_words) if w not in STOPWORDS and w not in GENERIC]
    if not head and attr:
        head = attr[:1]
    sub = SubQuestion(q, qtype, head, attr)
    return QuestionAnalysis(q, "en", entities, [sub], compare=False)


def analyze_question(question: str) -> QuestionAnalysis:
    """Entities, asked heads/attributes and answer types of a Chinese or English question."""
    q = _nfkc(question).strip().rstrip("？?。.！! ")
    if not re.search(r"[\u4e00-\u9fff]", q):
        return _analyze_en(q)
    entities = _entities_zh(q)
    subs = _subquestions_zh(q, entities)
    main = [e for e in entities if not e.scope and e.kind in ("person", "org", "title", "name")]
    compare = len(main) >= 2
    return QuestionAnalysis(q, "zh", entities, subs, compare)


# ----- matching ----------------------------------------------------------------------------------
@lru_cache(maxsize=4096)
def _window_pattern(term: str) -> re.Pattern[str]:
    gap = ".{0,%d}" % max(2, len(term))
    return re.compile(gap.join(re.escape(c) for c in term))


class Passage:
    """One evidence passage, normalised once."""

    __slots__ = ("doc_id", "index", "node", "stems", "text")

    def __init__(self, node: NodeWithScore | None, text: str, doc_id: str, index: int) -> None:
        self.node = node
        self.text = _squash(text)
        self.doc_id = doc_id
        self.index = index
        self.stems: set[str] | None = None

    def match(self, term: str) -> float:
        """1 for an exact match, partial credit for a fuzzy one, 0 when absent."""
        if term in self.text:
            return 1.0
        if _is_ascii_word(term):
            if self.stems is None:
                self.stems = _en_stems(self.text_spaced)
            return 1.0 if _stem(term) in self.stems else 0.0
        if len(term) < 2:
            return 0.0
        score = 0.0
        if len(term) <= 4 and _window_pattern(term).search(self.text):
            score = 0.75
        if len(term) >= 3:
            grams = [term[i : i + 2] for i in range(len(term) - 1)]
            score = max(score, 0.9 * sum(g in self.text for g in grams) / len(grams))
        return score

    @property
    def text_spaced(self) -> str:
        node = self.node
        if node is None:
            return self.text
        return _nfkc(node.node.get_content()).lower()


def _coverage(passage: Passage, terms: Sequence[str], weights: dict[str, float]) -> float:
    total = sum(weights.get(t, 1.0) for t in terms)
    if total <= 0:
        return 1.0
    return sum(weights.get(t, 1.0) * passage.match(t) for t in terms) / total


def _mentions(passage: Passage, entity: Entity) -> bool:
    if entity.kind == "label":
        return entity.text in set(label_tokens(passage.text))
    if entity.kind in ("number", "year"):
        return re.search(rf"(?<![\d.]){re.escape(entity.text)}(?![\d])", passage.text) is not None
    if entity.kind in ("code", "name") and _is_ascii_word(_squash(entity.text)):
        return _squash(entity.text) in passage.text or _squash(entity.text) in passage.text_spaced
    return any(f in passage.text for f in entity.forms())


@dataclass
class GateDecision:
    refused: bool
    reason: str | None
    details: dict[str, Any] = field(default_factory=dict)


class EvidenceGate(BaseNodePostprocessor):
    """Passes the evidence through, or refuses (returns no nodes) and records why."""

    min_head_coverage: float = Field(
        0.6, ge=0, le=1, description="IDF-weighted fuzzy share of the asked head in one passage."
    )
    min_attribute_coverage: float = Field(
        0.5, ge=0, le=1, description="Share of the whole predicate in that same passage."
    )
    min_question_coverage: float = Field(
        0.3, ge=0, le=1, description="Share of all question terms in the best passage."
    )
    check_entities: bool = True
    check_answer_type: bool = True
    per_entity: bool = Field(True, description="Comparisons: every entity needs its own passage.")
    lookup: bool = Field(
        True, description="With a ledger: look for the attribute in the entity's documents."
    )
    tenant: str | None = None
    doc_ids: list[str] | None = None
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

    # ----- helpers -----------------------------------------------------------------------------
    def _weights(self, terms: Sequence[str]) -> dict[str, float]:
        if self._ledger is None or not terms:
            return dict.fromkeys(terms, 1.0)
        freqs, total = self._ledger.term_document_frequencies(list(terms))
        return idf_weights(list(terms), freqs, total)

    def _doc_heads(self, doc_ids: Sequence[str]) -> dict[str, Passage]:
        """The opening chunk of each document (where a record names its subject)."""
        out: dict[str, Passage] = {}
        if self._ledger is None:
            return out
        for doc_id in dict.fromkeys(doc_ids):
            first = self._ledger.active_chunks_at(doc_id, [0]).get(0)
            if first is not None:
                out[doc_id] = Passage(None, first.title_path + "\n" + first.text, doc_id, -1)
        return out

    # ----- decision ----------------------------------------------------------------------------
    def decide(self, question: str, nodes: Sequence[NodeWithScore]) -> GateDecision:
        passages = [
            Passage(
                n,
                str(n.node.metadata.get("title_path", "")) + "\n" + n.node.get_content(),
                str(n.node.metadata.get("doc_id", "") or n.node.ref_doc_id or f"_{i}"),
                i,
            )
            for i, n in enumerate(nodes)
        ]
        passages = [p for p in passages if p.text]
        if not passages:
            return GateDecision(True, "no_evidence")
        analysis = analyze_question(question)
        details: dict[str, Any] = {
            "entities": [e.text for e in analysis.entities],
            "head": analysis.head_terms,
            "attribute": analysis.attribute_terms,
            "answer_types": [s.answer_type for s in analysis.subquestions],
        }
        # 2. every specific entity must be in the evidence
        if self.check_entities:
            missing = [
                e.text
                for e in analysis.entities
                if not e.scope and not any(_mentions(p, e) for p in passages)
            ]
            if missing:
                details["missing_entities"] = missing
                return GateDecision(True, "entity_missing", details)
        # which passages belong to which entity (by mention, or by their document)
        main = analysis.main_entities
        groups: list[tuple[str, list[Passage]]] = []
        if main:
            heads = self._doc_heads([p.doc_id for p in passages])
            for e in main if (self.per_entity and analysis.compare) else main[:1]:
                docs = {p.doc_id for p in passages if _mentions(p, e)}
                docs |= {d for d, h in heads.items() if _mentions(h, e)}
                group = [p for p in passages if p.doc_id in docs]
                groups.append((e.text, group))
            if not (self.per_entity and analysis.compare) and len(main) > 1:
                # several entities but no comparison: any passage of any of them
                docs = {p.doc_id for p in passages if any(_mentions(p, e) for e in main)}
                groups = [("|".join(e.text for e in main), [p for p in passages if p.doc_id in docs])]
        else:
            groups.append(("", passages))
        all_terms = list(
            dict.fromkeys(analysis.attribute_terms + analysis.head_terms + [_squash(e.text) for e in analysis.entities])
        )
        weights = self._weights(all_terms)
        # 3. + 4. per entity group and sub-question: a passage with the head, the predicate and a
        # value of the asked type
        checks = []
        for name, group in groups:
            for sub in analysis.subquestions:
                best, best_h, best_a, typed = None, 0.0, 0.0, False
                for p in group:
                    h = _coverage(p, sub.head, weights) if sub.head else 1.0
                    a = _coverage(p, sub.attribute, weights) if sub.attribute else 1.0
                    ok = h >= self.min_head_coverage and a >= self.min_attribute_coverage
                    t = self._typed(sub, p)
                    key = (ok, t, h + a)
                    if best is None or key > best:
                        best, best_h, best_a, typed = key, h, a, t
                checks.append(
                    {
                        "entity": name,
                        "sub": sub.text,
                        "head_coverage": round(best_h, 3),
                        "attribute_coverage": round(best_a, 3),
                        "typed": typed,
                        "ok": bool(best and best[0]),
                    }
                )
        details["checks"] = checks
        failed = [c for c in checks if not c["ok"]]
        if failed:
            return GateDecision(True, "attribute_missing", details)
        if self.check_answer_type and any(not c["typed"] for c in checks):
            return GateDecision(True, "answer_type_missing", details)
        # 5. overall coverage of the question by the best passage
        q_terms = list(query_tokens(question))
        q_weights = self._weights(q_terms)
        best_q = max(_coverage(p, q_terms, q_weights) for p in passages) if q_terms else 1.0
        details["question_coverage"] = round(best_q, 3)
        if best_q < self.min_question_coverage:
            return GateDecision(True, "low_coverage", details)
        return GateDecision(False, None, details)

    @staticmethod
    def _typed(sub: SubQuestion, passage: Passage) -> bool:
        if sub.answer_type == "number":
            return _NUMBER_VALUE.search(passage.text_spaced) is not None
        if sub.answer_type == "date":
            return _DATE_VALUE.search(passage.text_spaced) is not None
        return True

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        question = query_bundle.query_str if query_bundle is not None else ""
        self._last = self.decide(question, nodes)
        return [] if self._last.refused else nodes


__all__ = ["EvidenceGate", "GateDecision", "QuestionAnalysis", "TextNode", "analyze_question"]
