"""EvidenceGate: refuse before generation when the evidence does not support the question.

A score threshold can't tell "the entity is there but the asked detail is not" from a real answer
(measured on the dev data: ``benchmarks/gate.py``). The gate reads the question
(:func:`analyze_question`: entities, the asked *head* and predicate, the answer type) and checks
the reranked evidence passage by passage. Reasons, in the order they are checked:

``no_evidence``          nothing was retrieved in scope;
``entity_missing``       a specific entity of the question (某某-style names, companies, hospitals,
                         courts, 《titles》, codes, numbers and dates, 第X条 labels, capitalised English
                         names) is neither in the evidence nor, looked up, anywhere in scope;
``scope_missing``        "根据X的判决书，…" but the entity's documents are no 判决书;
``attribute_missing``    no passage of the entity's documents holds what is asked: the head
                         ("X的血型是什么" → 血型, "是什么颜色" → 颜色, nouns weighted over verbs), the
                         rest of the predicate and the subject ("财务报销系统的…"), by IDF-weighted
                         fuzzy coverage (chars in order nearby, char bigrams, English stems and
                         abbreviations); a comparison ("A和B谁更早") needs every entity, "A和B分别…"
                         half of them; in "比较A和B的海外收入占比" every word after 的 but the
                         adjectives is asked (a noun phrase, whatever the tagger says);
                         a word the question presupposes ("通过数据泄露事件减少了多少
                         负债": 泄露) that no chunk of the knowledge base holds must occur, at least
                         loosely, in the entity's (prose) documents, all read, and so must the
                         verb of a noun-verb compound however common it is ("受到了环保处罚",
                         "员工持股计划"), and so must a noun compound that few chunks hold,
                         its chars in order ("首席财务官" is not "首席执行官…财务总监") -- a verb
                         used as the predicate ("被判定犯了什么罪") is the text's to word and is
                         not checked;
                         a predicate of verbs only is checked like any other ("是否获得了减刑",
                         "住院期间由谁陪护": 住院期间 only says when) unless it links the entity
                         to an individual of a class ("在哪个法院受审") or a lay question lays out
                         its situation, and a noun with it must be there ("被羁押在哪个看守所");
                         what a named entity owns and is asked about ("X的兄弟姐妹的职业", "X的
                         配偶在哪里工作", "X的汽车是什么颜色") needs one sentence or record line
                         naming both (X's own 职业 is on another line); a question about the
                         scope's organisation itself ("根据X医院的住院病历，X医院的院长是谁")
                         presupposes from that organisation's documents; "在入院前一周" only says
                         when; a presupposed two-char noun is matched as written (院长 is not in
                         "法院审判长");
                         a question naming no entity that asks several things ("什么是X？X的
                         形式是什么？") needs half of them, one at least found in a passage;
``answer_type_missing``  the passages with the attribute hold no value of the type asked near it: a
                         number (not a date) for 多少/几/多久/更高/更显著/how many, in the sentence of
                         the asked noun, an amount of money for 金额/收入/资产; a date for
                         何时/哪一年/…时间/更早/when (not a case number's year; a judgment's own
                         date where it signs off); a sentence calling the value unknown (未知,
                         未披露) gives none; an entity whose documents name the attribute without a
                         value is the classic near miss ("提高了员工满意度"). "A和B的X分别是多少"
                         needs the value for each entity whose (prose) documents were all read;
                         a time of day for 营业时间/开放时间/几点; a country for "去过哪些国家";
                         a number of people ("1200名") for "员工人数", "研发人员数量";
                         for "销售哪些电子产品" a passage naming the class as more than a
                         modifier ("电子产品出口公司" names no member); a prison term may be
                         无期徒刑 or 死刑; the value may sit by a fuzzy mention of the head
                         ("判刑" ~ "判处有期徒刑五年"); about a named entity, "A对B有何影响"
                         needs a sentence with B that states an effect (影响, 导致, 无法, 提高…),
                         and "为什么…", "…的理由是什么" a sentence with the head that gives a cause
                         (因, 由于, 认为…; "如不服本判决…提出上诉" gives none); naming no
                         entity, "仓储合同什么时候成立" asks when a rule applies, and an event
                         ("自…时成立", "之日起", "随时") answers it;
``low_coverage``         the best document covers too little of the question's content (for a lay
                         question naming no entity, its words weighted by part of speech: the
                         nouns of what is asked over the asker's verbs and scene).

Table chunks (a GFM header line and its ``|---|`` separator) are read by their columns: the asked
phrase matches a column name loosely (:func:`_column_similarity`: one contains the other, the same
head morpheme with most chars shared, or the column's cells saying it; plus a few generic
paraphrases such as 价格/价, 是不是/是否, 平均/均, 数量/数, and the measure word of "多少套" for
a column "…套数"), and a fuzzy match counts only in the title and the column names, never in chars
scattered over the cells. So "是不是属于国有企业" is answered by 是否国有 and "房价" by 成交均价,
while a table that names the entity but lacks the asked column is still refused. Question analysis
keeps entity spans clean ("请问2021年X公司" → X公司 and 2021), takes names joined by 和/与 before
"这两个小区"/"各自" as entities, and treats the numbers of a filter ("1万至2万元之间") as bounds.

Some values name their attribute without its word: an occupation after the person's name
("倪某某，女，…，某物流公司司机") answers 职业, "住X市Y街" answers 住址 (``_VALUE_CUES``, for the person
the attribute is asked of: 钱某 in "宋某的辩护人钱某的住址").

A passage belongs to an entity when it names it, or when its document names it in a retrieved
passage or in its opening chunk (a record names its patient once, in the header). An entity
looked up in "根据X法院的判决书，A的…" is taken from the documents that name X when there are
such (the same 吕某某 may be a judge in another court's judgment). With a ledger
the gate looks, inside the scope (tenant and documents), for what retrieval missed: the entity, or
the chunk of the entity's document that holds the attribute; such chunks are appended to the
evidence (``GateDecision.supplements``), so that a two-document comparison is answered from both.

Every threshold is a field, calibrated on the calibration half of the dev data
(``benchmarks/gate.py --sweep``).
"""

from __future__ import annotations

import math
import re
import time
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle
from pydantic import Field, PrivateAttr

from rag_app.postprocess.rerank import idf_weights
from rag_app.retrieval.hybrid import chunk_to_node
from rag_app.retrieval.tokenizer import (
    STOPWORDS,
    _jieba,
    chinese_number,
    label_tokens,
    query_tokens,
    tokenize,
)
from rag_app.store.ledger import Ledger
from rag_app.types import ChunkInfo

# ----- question words ------------------------------------------------------------------------
# Longest first; each group maps to the answer type it asks for.
_QW_DATE = r"什么时候|什么时间|何时|哪一年|哪年|哪一天|哪天|哪个月|哪一月|哪月|几月份|几月|几号|几点|哪一日"
_QW_NUMBER = r"多少|多长时间|多长|多久|多大|多高|多重|多远|多宽|多深|多快|几[个次年天岁月位项条名只家台种倍级层期]?"
_QW_PERSON = r"哪一位|哪位|是谁|谁"
_QW_PLACE = r"哪里|哪儿|何处|何地|在哪(?![些个种类一家位年天月])"
_QW_LIST = r"哪些"
_QW_YESNO = r"是否|是不是|能否|可否|能不能|可不可以|有没有|会不会"
_QW_REASON = r"为什么|为何|何故"
_QW_HOW = r"如何|怎么样|怎么办|怎样|怎么"
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
# a clause that ends in the polar particle 吗 without a question word ("可以要求赔偿吗") is a
# yes/no question about the clause's predicate
_POLAR = re.compile(r"(?P<yesno>吗)(?:呢)?\s*$")
_QW_EN = re.compile(
    r"\b(?:(?P<number>how\s+(?:many|much|long|old|often|far|big|large|high)|what\s+percentage)"
    r"|(?P<date>when|what\s+(?:date|day|year|time|month))|(?P<person>who|whom|whose)"
    r"|(?P<place>where)|(?P<reason>why)|(?P<how>how)|(?P<what>what|which))\b",
    re.IGNORECASE,
)
_EN_YESNO = re.compile(
    r"^(?:is|are|was|were|do|does|did|can|could|should|will|would|has|have)\b", re.I
)

# Head nouns that name the *type* of the answer rather than what is asked ("判决时间" → 判决 + a
# date, "什么意思" → the entity's description); they are not required literally.
GENERIC = frozenset(
    """
    时间 日期 时候 时刻 年份 月份 期限 多久 金额 数额 数量 数目 数值 总额 多少 比例 比率 意思 含义 意义 定义
    次数 总数 人数 个数 状况 情形 详情 记录 程度 之间 区间 以上 以下 以内 至
    情况 内容 信息 资料 方面 方式 方法 办法 做法 步骤 流程 名称 名字 类型 种类 结果 原因 理由 问题 事情 东西
    地方 地点 位置 城市 国家 地区 人 人员 钱 费用 价格 哪些 分别 各自 具体 主要 相关 一下 什么 哪 谁 几 多 更 最 比 较 高 低 早 晚 长 短
    大 小 快 慢 多 少 强 弱 好 差 差异 区别 不同 相同 一样 比较 对比 如何 怎样 影响 作用 特点 要求 规定 标准
    the a an of for to in on at by with from and or is are was were be been do does did what which
    who whom whose when where why how many much long old often far big large high kind type name
    """.split()
)
# words that are not asked when they stand alone, but not generic affixes either (数据中心, 经营范围)
_FILLER = frozenset(
    "类别 数据 范围 各 它们 他们 她们 两者 二者 这些 那些 年度 列出 告诉 告知 说明 描述 提供".split()
)
# relational verbs that only link the subject to what is asked ("属于国有企业", "所在地块")
_LIGHT = frozenset(
    "属于 属 位于 处于 对应 所属 所处 所在 所在地 所 达到 达 评定 被评 定为 成为 算是".split()
)
LIGHT_WEIGHT = 0.1
# what follows a verb used as the predicate (not as an event noun): an aspect particle, a
# second verb, the question word, or the end of the clause
_PREDICATE_AFTER = r"(?:了|过|着|犯|于|在|到|为|给|成|多少|几|什么|哪|谁|何|怎|如何|$)"
# support verbs: they carry the event named by another word ("进行了资产重组", "作出决议")
_SUPPORT_VERBS = frozenset(
    "进行 加以 给予 予以 作出 做出 开展 从事 实施 实行 发生 完成 采取 采用 参与 参加 举行 开始 推出 "
    "出现 存在 经历 遭遇 获得 取得".split()
)
# reporting verbs: "报告中提到的X" presupposes a report about X, not another fact
_REPORTING_VERBS = frozenset(
    "提到 提及 谈到 披露 记载 记录 载明 写明 列明 列出 显示 表明 指出 说明 描述 介绍 涉及 报告 "
    "公布 公告 发布".split()
)
_GENERIC_AFFIXES = sorted(
    (w for w in GENERIC if len(w) >= 2 and re.fullmatch(r"[\u4e00-\u9fff]+", w)),
    key=len,
    reverse=True,
)
_AFFIX_END = re.compile("(?:" + "|".join(_GENERIC_AFFIXES) + ")$")
_AFFIX_START = re.compile("(?:" + "|".join(_GENERIC_AFFIXES) + ")")
_COMPARISON = re.compile(
    r"(?:谁|哪个|哪家|哪位|哪一个|哪一家|哪方)[^，,。？?]*?(?:更|较|最)|比较|对比|相同|一样|差异|区别|不同|"
    r"高于|低于|早于|晚于|多于|少于|\b(?:more|less|earlier|later|higher|lower|compare)\b"
)
_COMPARATIVE = re.compile(r"^(?:更|较|最|比较)[\u4e00-\u9fff]{0,2}$")

# ----- entities --------------------------------------------------------------------------------
# (sentence marks and quotes too: "…吗？（医院应…" is no name "？（医院", "“非终局" none ending in
# 局; "供电/供热公司" lists classes)
_NOT_NAME = (
    "个的把在是了和与及或、，,。；;：:?？!！/／“”「」『』想要去到从向对给让被将我你他她它这那该本其各每某哪"
    "什么吗呢就都也还又有为以于"
)
_ORG_SUFFIX = (
    "股份有限公司|有限责任公司|有限公司|集团公司|集团|公司|医院|保健院|卫生院|法院|检察院|银行|大学|学院|学校|"
    "委员会|研究院|研究所|事务所|协会|基金会|看守所|监狱|派出所|中心|工作室|商店|酒店|超市|工厂|厂|局|厅"
)
# a name char; 有 and 本 end a name except in 国有 and 资本 ("菏建国有资本投资有限公司")
_NAME_CHAR = rf"(?:[^\s{_NOT_NAME}]|(?<=国)有|(?<=资)本)"
_ORG = re.compile(rf"{_NAME_CHAR}{{2,24}}?(?:{_ORG_SUFFIX})")
_ORG_MORE = re.compile(rf"(?:[^\s{_NOT_NAME}]){{0,4}}?(?:{_ORG_SUFFIX})")
_ORG_CORE = re.compile(rf"(?:{_ORG_SUFFIX})$")
# what a name span swallows at its start: question openers ("请问", "能否确认"), framing verbs
# ("比较", "根据") and dates ("2021年", "2022年5月", "2019年度") -- the date is its own entity
_LEAD = re.compile(
    r"^(?:请问|请|问|那么|麻烦|能否|可否|能不能|告诉我|我想知道|想知道|想了解|了解|确认|确定|说明|描述|"
    r"告知|提供|给出|介绍|阐述|一下|"
    r"列出|查询|查一下|帮我|分别|比较|对比|根据|按照|依据|关于|如果|位于|"
    r"\d{4}\s*年度?(?:\d{1,2}\s*月份?)?(?:\d{1,2}\s*[日号])?|\d{1,2}\s*月份?(?:\d{1,2}\s*[日号])?|\d+)+"
)
_PERSON = re.compile(
    r"(?<!某)([^\W\d_的是在有对与及等为某一个这那该本其各每])(某某?)(?![个些种天日年位项次人])"
)
# a question word (and its measure word) right before an organisation span: the span names the
# class of the answer ("哪家律师事务所", "哪个医院", "什么公司"), no organisation to look for
_ASKED_CLASS = re.compile(r"(?:哪|什么|何)[一]?[个家所位种类间座]?$")
_TITLE = re.compile(r"[《“\"「『]([^》”\"」』]{2,40})[》”\"」』]")
# in Chinese a title is marked 《…》; quotation marks set off a word used in a sense of its own
# ("“三期”", "“借新还旧”", "“热词”"), which the statute words otherwise: no name to look up
_TITLE_ZH = re.compile(r"《([^》]{2,40})》")
_CODE = re.compile(
    r"(?<![A-Za-z0-9_.])[A-Za-z][A-Za-z0-9_.\-]*[A-Za-z0-9](?![A-Za-z0-9_])|\d+(?:\.\d+)?"
)
_EN_NAME = re.compile(r"(?<!^)(?<![.?!]\s)\b([A-Z][a-zA-Z0-9]+(?:\s+[A-Z][a-zA-Z0-9]+)*)")
_YEAR = re.compile(r"(?<!\d)((?:19|20)\d{2})\s*年")
_DATE_Q = re.compile(r"(?:(\d{4})\s*年\s*)?(\d{1,2})\s*月(?:\s*(\d{1,2})\s*[日号])?")
_CN_QUALIFIER = re.compile(
    r"(?<![第\d每久几])(?!一次)[一二三四五六七八九十两]{1,3}[次类级期档等](?![数量性])"
)
# "A和B，这两个小区…", "A与B各自…", "A小区和B小区所处的地块…"
# the second name ends at a boundary, and the sentence then treats the names as several
_COORD_END = (
    r"(?=[，,\s]|这|那|两|各|分别|它们|他们|她们|所|的)"
    r"(?=[^？?。；;]{0,30}?(?:这两|那两|两个|两家|两座|两处|两所|两位|两者|二者|各自|各(?=[是为达有])|分别|"
    r"它们|他们|她们))"
)
_COUNTED = re.compile(r"[，,\s]*(?:这|那)?[两二三四][个家座处所位栋]")
# split at 与/以及/及/、 when there is one (a name may hold 和: "长安和玺与禧悦学府"), else at 和
_COORD = (
    re.compile(
        r"(?P<a>[^\s，,。？?；;：:的之与及、]{2,20}?)(?:与|以及|及|、)"
        rf"(?P<b>[^\s，,。？?；;：:的之与及、]{{2,20}}?){_COORD_END}"
    ),
    re.compile(
        rf"(?P<a>[^\s，,。？?；;：:的之和与及、]{{2,20}}?)和(?P<b>[^\s，,。？?；;：:的之与及、]{{2,20}}?){_COORD_END}"
    ),
)
# a leading place ("北京市平谷区…", "广东省…") and a trailing class noun ("…小区") of a name
_PLACE_PREFIX = re.compile(
    r"^(?:[\u4e00-\u9fff]{1,4}省)?[\u4e00-\u9fff]{1,4}市(?:[\u4e00-\u9fff]{1,4}?(?<!小)[区县])?(?=..)"
)
_CLASS_SUFFIX = re.compile(r"(?:小区|楼盘|项目|地块)$")
# numbers that bound a filter ("10000至20000元之间", "超过500套", "30%以上") rather than name a case
_NUM = r"\d+(?:\.\d+)?\s*(?:[万亿]?元|%|万|平方米|平米|套|个|人|岁|倍)?(?:每平方米|/平方米|/平米)?"
_BOUND = re.compile(
    rf"{_NUM}\s*(?:至|到|~|-|—)\s*{_NUM}|"
    rf"(?:大于|小于|高于|低于|超过|不足|不低于|不高于|不少于|不超过|少于|多于|至少|最多|达到)了?\s*{_NUM}|"
    rf"{_NUM}\s*(?:以上|以下|以内|之间|区间)"
)
_MEASURE = "个套家位人次户间栋座项条名件份只台辆"
# "这两个小区", "这家公司", "两个小区": the counted noun refers back to the entities
_DEIXIS = re.compile(r"(?:(?:这|那)[两二三四几]?|[两二三四])[个家所座处栋位项块件起名份]")
_TIME_UNITS = frozenset("年 月 天 日 周 星期 小时 分钟 季度 月份 年度 工作日".split())


def _drop_deixis(text: str) -> str:
    """Drop "这两个小区" (a deictic count and the noun it counts): not what is asked."""
    if not _DEIXIS.search(text):
        return text
    _jieba()  # initialised once, thread-safe
    import jieba.posseg

    out, i = [], 0
    for m in _DEIXIS.finditer(text):
        if m.start() < i:
            continue
        first = jieba.posseg.lcut(text[m.end() : m.end() + 8])[:1]
        if not first or not first[0].flag.startswith("n") or first[0].word in _TIME_UNITS:
            continue  # "两个月", "这个" alone
        out.append(text[i : m.start()] + " ")
        i = m.end() + len(first[0].word)
    return "".join(out) + text[i:]


_LABEL_TEXT = re.compile(r"第[零〇一二两三四五六七八九十百千\d]+[编章节条款项]")
_UNIT_CHARS = frozenset("年月日号个次岁天周元位项条名只家台种倍级层期分秒")
_SCOPE = re.compile(
    r"^(?:根据|按照|依据|参照|依照|在|从)(?P<scope>[^，,。？?]{2,60}?)"
    r"(?:的)?(?P<doctype>判决书|裁定书|起诉书|住院病历|病历|报告|年报|文件|条款|制度|规定|规范|办法|指南|手册|文档|合同|说明书|记录)"
    r"(?:中|里|上|内)?(?:[，,：:]|\s+)"
)
# legal instruments state their kind in their heading; other kinds (病历, 报告…) often don't
_CHECKED_DOC_TYPES = {"判决书": "判决书", "裁定书": "裁定书", "起诉书": "起诉书"}
_SCOPE_IN = re.compile(r"^(?P<scope>[^，,。？?\s]{2,30})(?:中|里)[，,]")

# ----- answer types ------------------------------------------------------------------------------
_CN_NUM = "〇零一二三四五六七八九十百千万亿两半"
_UNIT = (
    r"(?:个|次|年|天|日|岁|周岁|月|周|小时|分钟|秒|元|万|亿|项|条|人|名|倍|%|％|位|只|家|台|例|种|级|期|层|米|公里|"
    r"千米|厘米|毫米|克|千克|公斤|吨|升|毫升|度|℃|°|mb|gb|kb|tb|ms|mmhg|次/分|分)"
)
# a quantity: digits that are not part of a date (2017年, 3月, 15日), or a Chinese numeral with a unit
_NUMBER_VALUE = re.compile(
    rf"(?<![\d.])\d+(?:[.,]\d+)*(?!\d|[.,]\d|\s*(?:月|日|号)|(?<=\d{{4}})\s*年)|[{_CN_NUM}]+{_UNIT}|"
    r"\b(?:one|two|three|four|five|six|seven|eight|nine|ten|twelve|hundred|thousand)\b",
    re.I,
)
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
_DISTRIBUTIVE_END = re.compile(r"(?:分别|各自|各|都|均|也|还|又|具体)+$")
# the kind of value a number/date question asks for, by its head noun or question word:
# "负债比率" a ratio, "收购金额" an amount of money, "多少人" a count, "判决日期"/"哪一天" a day
_RATIO_HEAD = re.compile(r"(?:率|比例|占比|百分比|比重)$")
_MONEY_HEAD = re.compile(
    r"(?:金额|数额|总额|费用|价格|价钱|售价|单价|总价|收入|营收|利润|成本|资产|负债|资金|薪酬|工资|"
    r"罚款|罚金|赔偿金?|款项|投资额|市值|股本)$"
)
_DAY_QW = re.compile(r"哪一天|哪天|几号|几月份?|哪个月|哪一月|哪月|哪一日")
_DAY_HEAD = re.compile(r"(?:日期|月份|哪天)$")
_VALUE_KIND: dict[str, re.Pattern[str]] = {
    "ratio": re.compile(r"\d\s*[%％‰]|百分之|个百分点|\d+(?:\.\d+)?\s*[:：]\s*\d|(?<![\d.])0\.\d+"),
    "money": re.compile(
        rf"[¥￥$]\s*\d|\d[\d.,]*\s*(?:[万亿千百]|万亿)?\s*(?:元|美元|港元|欧元|英镑|日元|块)|"
        rf"\d[\d.,]*\s*[万亿]|[{_CN_NUM}]+\s*(?:[万亿千百]|万亿)?\s*(?:元|美元|港元)|人民币\s*\d"
    ),
    "count": re.compile(
        rf"(?:\d+|[{_CN_NUM}]+)\s*(?:多|余)?\s*(?:[{_MEASURE}例口]|倍)|(?<![\d.])\d+(?![\d.]|\s*[年月日号岁%％元万亿])"
    ),
    # "员工人数": a number of people ("1200名员工", "约3万人"), not a share or an amount
    "people": re.compile(
        rf"(?:\d+|[{_CN_NUM}]+)\s*(?:多|余)?\s*(?:[万千百]\s*)?(?:人(?![民工士才类])|名|位(?![于置]))"
    ),
    # "营业时间", "几点": a time of day or opening hours, not a year or a month
    "hours": re.compile(
        r"\d{1,2}\s*[:：]\s*\d{2}|(?<![\d.])\d{1,2}\s*[点时](?![间期代段候])|[一二三四五六七八九十两]{1,3}点|"
        r"上午|下午|早上|早晨|晚上|夜间|中午|凌晨|全天|24小时|二十四小时|昼夜|[ap]\.?m\b"
    ),
    # "去过哪些国家": a country (or going abroad), not the word 国家 ("按国家计划接种")
    "country": re.compile(
        r"中国|美国|英国|法国|德国|日本|韩国|朝鲜|俄罗斯|意大利|西班牙|葡萄牙|荷兰|瑞士|瑞典|挪威|丹麦|"
        r"芬兰|比利时|奥地利|希腊|波兰|土耳其|以色列|伊朗|沙特|阿联酋|埃及|南非|加拿大|墨西哥|巴西|阿根廷|"
        r"澳大利亚|澳洲|新西兰|印度|泰国|越南|老挝|柬埔寨|缅甸|新加坡|马来西亚|印尼|菲律宾|蒙古|"
        r"欧洲|非洲|美洲|东南亚|中东|海外|国外|境外|出国|出境|"
        r"\b(?:usa|uk|japan|france|germany|america|europe|abroad)\b",
        re.I,
    ),
    "day": re.compile(
        r"\d{1,2}\s*月|\d{4}[-/.]\d{1,2}|[一二三四五六七八九十]{1,3}月|\d{1,2}\s*[日号]|"
        r"\b(?:january|february|march|april|may|june|july|august|september|october|november|"
        r"december)\b|周[一二三四五六日末]|星期[一二三四五六日天]"
    ),
}


# a time of day is asked ("营业时间是什么", "几点开门"), not a date; 参加工作时间 is a date
_HOURS_HEAD = re.compile(
    r"(?<!参加)(?:营业|开放|办公|上班|下班|门诊|接待|探视|探望|开馆|闭馆|开园|营运|运营|就餐|用餐)"
    r"(?:时间|时段|时候)$"
)
# "A对B有何影响", "A是否会影响B", "A如何影响B": the effect on B is asked; the answer states it
_EFFECT_Q = re.compile(
    r"对(?P<obj>[^，,。？?；;对]{1,20}?)(?:会|将|可能)?(?:有|产生|带来|造成)了?"
    r"(?:何种|何|什么样?的?|哪些|怎样的?|多大的?)影响|"
    r"(?:是否|会不会|能否|可能)(?:会|将)?影响(?:到)?(?P<obj2>[^，,。？?；;]{1,20})|"
    r"如何影响(?:到)?(?P<obj3>[^，,。？?；;]{1,20})"
)
# words that state an effect or a change
_EFFECT_WORDS = re.compile(
    r"影响|导致|造成|致使|使得|使其|促使|引起|引发|妨碍|阻碍|无法|不能|难以|受限|加重|加剧|缓解|"
    r"改善|好转|恶化|提高|提升|降低|减少|增加|增长|下降|上升|促进|推动|增强|减弱|优化|带来|"
    r"有利于|不利于|有助于"
)
# a reason is asked ("为什么", "…的理由/原因是什么"); the answer gives it with a causal word
_CAUSE_HEAD = re.compile(r"(?:理由|原因|缘由|缘故|动机)$")
_CAUSE_WORDS = re.compile(
    r"因|由于|鉴于|理由|原因|所以|导致|致使|造成|引起|引发|为了|所致|诱因|缘于|源于|出于|基于|系|"
    r"认为|辩称|诉称|声称|主张"
)
_COUNTRY_ASKED = re.compile(r"(?:哪些|哪几个|哪个|哪一个|哪|什么|何)国家|哪国")


# "员工人数", "研发人员数量", "员工的总数": a number of people is asked
_PEOPLE_HEAD = re.compile(
    r"(?:人数|(?:人员|员工|职工|雇员|工人|医生|护士|教师|律师)的?(?:数量|总数|数目|人数|总人数))$"
)


def _value_kind(qtype: str, qword: str, raw_head: str, unit: str, clause: str = "") -> str:
    """What a number or date answer must look like, beyond being a number or a date (and, for
    "哪些国家", a country whatever the answer type)."""
    if _COUNTRY_ASKED.search(clause):
        return "country"
    raw_head = re.sub(r"(?<=..)时候$", "", raw_head)  # "判决日期是什么时候"
    if qtype == "date" and (qword == "几点" or _HOURS_HEAD.search(raw_head)):
        return "hours"
    if qtype == "number":
        if _RATIO_HEAD.search(raw_head):
            return "ratio"
        if _MONEY_HEAD.search(raw_head):
            return "money"
        if _PEOPLE_HEAD.search(raw_head):
            return "people"
        return "count" if unit else ""
    if qtype == "date" and (_DAY_QW.fullmatch(qword) or _DAY_HEAD.search(raw_head)):
        return "day"
    return ""


# ----- weights and caches ------------------------------------------------------------------------
VERB_WEIGHT = 0.4  # verbs and modifiers vs nouns (1.0): the text often paraphrases them
CONTEXT_WEIGHT = 0.5  # words of a scene-setting clause before the asked one ("去香港出差，…")
_MAIN = ("person", "org", "title", "name")  # entities a passage "belongs" to
# the group name of a question about the scope's organisation (nobody else named)
_SCOPE_GROUP = "@scope"
_QUALIFIERS = ("number", "ordinal", "date")  # must sit in the passage with the asked attribute
_HEADS: dict[tuple[str, str, int | None], Passage] = {}  # opening chunks by (ledger, doc, version)
_HEADS_MAX = 4096
_DOCS: dict[tuple[str, str, int | None], list[Passage]] = {}  # scanned documents, same key
_DOCS_MAX = 128
_CHUNKS: dict[tuple[str, str, int, int], Passage] = {}  # looked-up chunks
_CHUNKS_MAX = 8192
# document frequencies per ledger: (since, indexed chunks, term -> df); IDF drifts slowly, so a
# short-lived cache is enough and saves a vocabulary query per question
_DF: dict[str, tuple[float, int, dict[str, int]]] = {}
_DF_TTL = 60.0
_DF_MAX = 20000


def _nfkc(text: str) -> str:
    return unicodedata.normalize("NFKC", text)


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", _nfkc(text)).lower()


def _is_ascii_word(term: str) -> bool:
    return bool(re.fullmatch(r"[a-z0-9_.\-]+", term))


def _stem(word: str) -> str:
    w = word.lower()
    for suffix, keep in (
        ("ies", "y"),
        ("sses", "ss"),
        ("ing", ""),
        ("ed", ""),
        ("es", ""),
        ("s", ""),
    ):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3 and not w.endswith("ss"):
            return w[: len(w) - len(suffix)] + keep
    return w


def _en_stems(text: str) -> set[str]:
    return {_stem(w) for w in re.findall(r"[a-z][a-z0-9]*", text.lower())}


@lru_cache(maxsize=4096)
def _words(text: str) -> tuple[tuple[str, str], ...]:
    """Precise-mode jieba words with their part of speech (lower-cased), without punctuation
    or stopwords."""
    _jieba()  # initialised once, thread-safe
    import jieba.posseg

    out = []
    for pair in jieba.posseg.lcut(_nfkc(text).lower()):
        tok = pair.word.strip()
        if not tok or not re.search(r"\w", tok) or tok in STOPWORDS:
            continue
        out.append((tok, pair.flag))
    return tuple(out)


def _pos_weight(flag: str) -> float:
    """Nouns name what is asked; verbs and modifiers are often paraphrased in the text."""
    if flag.startswith("n") or flag in ("an", "j", "eng", "l", "i", "nz", "x"):
        return 1.0
    if flag == "vn":
        return 0.7
    return VERB_WEIGHT


@dataclass
class Entity:
    text: str
    kind: str  # person | org | title | name | code | number | ordinal | date | year | label
    scope: bool = False  # named in the "根据…的判决书" prefix: identifies the document

    def forms(self) -> list[str]:
        """Squashed strings any of which counts as a mention."""
        base = _squash(self.text)
        forms = [base]
        if self.kind == "org":
            core = _ORG_CORE.sub("", base)
            if len(core) >= 2:
                forms.append(core)
        elif self.kind == "name":
            # "北京市平谷区北京城建京能樾园" is listed as 北京城建京能樾园, "芳原小区" as 芳原
            bare = _PLACE_PREFIX.sub("", base)
            for form in (bare, _CLASS_SUFFIX.sub("", bare)):
                if len(form) >= (3 if form == bare else 2) and form not in forms:
                    forms.append(form)
        elif self.kind == "date":
            # looked up in any notation ("2020年1月" → 2020-01, 2020年01月)
            forms += [f for f in _date_forms(self.text) if f not in forms]
        return forms


@dataclass
class SubQuestion:
    """One asked thing: ``head`` is what is asked, ``attribute`` the whole predicate."""

    text: str
    answer_type: str  # date | number | person | place | list | yesno | reason | how | what
    head: list[str] = field(default_factory=list)
    attribute: list[str] = field(default_factory=list)
    pos: dict[str, float] = field(default_factory=dict)  # part-of-speech weight per term
    subject: list[str] = field(default_factory=list)  # "X的Y是什么": the X part, beyond entities
    phrase: str = ""  # the asked noun phrase as written ("房屋成交均价"), for table column names
    unit: str = ""  # the measure word of "多少套", "几家": a column "…套数" counts it
    # what kind of value: ratio | money | count | day | hours | country (see _value_kind)
    value: str = ""
    document_date: bool = False  # "根据…的判决书，判决日期": the document's own date
    general: bool = False  # the question names no entity: a rule is asked, not a fact of one
    members_of: str = ""  # "销售哪些电子产品": the class whose members are asked
    effect_on: list[str] = field(default_factory=list)  # "A对B有何影响": the words of B
    cause: bool = False  # "为什么…", "上诉的理由是什么": a reason is asked
    category: bool = False  # "哪个法院", "哪种麻醉": an individual of a named class is asked
    situated: bool = False  # clauses before the asked one lay out a situation ("包裹丢了，…吗")
    worded: bool = True  # False: no question word ("请描述X的债务违约情况"), the terms as they come

    @property
    def head_has_noun(self) -> bool:
        return any(self.pos.get(t, 1.0) >= 1.0 for t in self.head)


@dataclass
class QuestionAnalysis:
    question: str
    language: str = "zh"
    entities: list[Entity] = field(default_factory=list)
    subquestions: list[SubQuestion] = field(default_factory=list)
    compare: bool = False
    doc_type: str = ""  # "根据…的判决书" → 判决书: the evidence must come from such a document
    comparative: bool = False  # "谁更早", "相同吗": needs the value of every entity

    @property
    def main_entities(self) -> list[Entity]:
        return [e for e in self.entities if not e.scope and e.kind in _MAIN]

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


def _core(word: str) -> str:
    """A compound without its generic affixes: 营业时间 → 营业, 主要症状 → 症状."""
    for _ in range(2):
        m = _AFFIX_END.search(word)
        if m and m.start() >= 2:
            word = word[: m.start()]
        m = _AFFIX_START.match(word)
        if m and len(word) - m.end() >= 2:
            word = word[m.end() :]
    return word


# words that make the word before them a time frame ("住院期间由谁陪护": 陪护 is asked)
_TIME_FRAME = frozenset("期间 期内 之后 以后 之前 以前 过程中 当天 当日".split())
# "在入院前一周", "在案发后": an event before 前/后 after 在 is a time frame too
_TIME_PHRASE = re.compile(r"在(?P<event>[\u4e00-\u9fff]{2,6}?)(?:前|后)")


def _content_terms(text: str, pos: dict[str, float] | None = None) -> list[str]:
    """Content words of ``text`` (generic type words, question words and numbers dropped);
    their part-of-speech weights go into ``pos``."""
    terms = []
    words = _words(text)
    for i, (w, flag) in enumerate(words):
        if w in GENERIC or w in _FILLER or _QW_ZH.fullmatch(w) or re.fullmatch(r"[\d.]+", w):
            continue
        if _COMPARATIVE.search(w) and not _is_ascii_word(w):
            continue
        if len(w) == 1 and w in _UNIT_CHARS:
            continue
        if re.fullmatch(r"[一二两三四五六七八九十几每各][个名起家位件份]", w):
            continue  # "两起案件" counts the documents, it is not asked
        if not _is_ascii_word(w):
            w = _core(w)
        terms.append(w)
        if pos is not None:
            weight = LIGHT_WEIGHT if w in _LIGHT else _pos_weight(flag)
            if re.fullmatch(r"[\u4e00-\u9fff]{2,}时", w) or (
                i + 1 < len(words) and words[i + 1][0] in _TIME_FRAME
            ):
                weight *= CONTEXT_WEIGHT  # "拍卖时", "住院期间": when, not what
            pos[w] = max(pos.get(w, 0.0), weight)
    return list(dict.fromkeys(terms))


def _has_noun(text: str) -> bool:
    pos: dict[str, float] = {}
    return any(pos[t] >= 1.0 for t in _content_terms(text, pos))


def _drop_single_chars(terms: list[str]) -> list[str]:
    longer = [t for t in terms if len(t) > 1]
    return longer or terms


def _name_like(name: str) -> int:
    """Can a coordinated span be a proper name? 0: no (a common word, a question word, a pronoun,
    a place/time phrase "…方面", "…中", an attribute "…满意度"); 2: yes, jieba knows a proper noun
    in it or has to cut it into pieces ("保利珑誉", "禧悦学府"); 1: maybe (several common words,
    "乐府花园")."""
    if len(name) < 2 or _QW_ZH.search(name) or re.search(r"[这那该哪某]", name):
        return 0
    if re.match(r"(?:在|于|从|自|对|向|将|把)", name) or re.search(r"\d\s*年|了|过", name):
        return 0  # "分别在2019年和2021年进行了大规模融资": times and verb phrases, not names
    if name in GENERIC or name in _FILLER or re.search(r"(?:方面|中|上|里|内|时|后|前|间)$", name):
        return 0
    if re.search(r"[率度额量费价数]$", name):
        return 0
    words = _words(name)
    if any(
        flag.startswith(("nr", "ns", "nt", "nz", "eng", "x", "m", "g", "ng", "zg")) or len(w) == 1
        for w, flag in words
    ):
        return 2
    return 1 if len(words) > 1 else 0


# verbs that take an organisation as their object, and what comes before them
_ORG_LEAD_VERB = re.compile(
    r"^.*?(?:要求|请求|求|追究|认定|委托|前往|骗取|起诉|投诉|联系|找|隔壁|同时|不同)(?=..)"
)
# a preposition or conjunction inside the span: the name is after it ("房屋由法院", "且运输公司")
_ORG_CUT = re.compile(r"^.*(?:由|且|被|并|而|或)(?=..)")


def _name_tail(org: str) -> str:
    """The organisation without the clause words the span swallowed before it ("要求快递公司",
    "同时请求运输公司", "房屋由法院", "隔壁电力公司"), and no name at all when what is left is a class
    of organisations: one common noun and a weak suffix ("快递公司", "出租车公司", "保险公司")."""
    for _ in range(3):  # "同时请求运输公司": one clause word after another
        cut = _ORG_LEAD_VERB.sub("", org)
        if cut == org:
            break
        org = cut
    org = org.lstrip("(（")  # "（医院应对…": a bracket opens a clause, not a name
    m = _ORG_CUT.search(org)
    if m:
        org = org[m.end() :]
    weak = re.search(r"(?:公司|中心|局|厅|厂|学校|商店|超市|酒店)$", org)
    if weak:
        core = _words_raw(org[: weak.start()])
        if len(core) == 1 and len(core[0][0]) >= 2 and core[0][1] in ("n", "vn"):
            return ""
    return org


def _is_word(text: str) -> bool:
    """A word of jieba's dictionary."""
    _jieba()
    import jieba

    return jieba.dt.FREQ.get(text, 0) > 0


def _not_surname(q: str, start: int, end: int) -> bool:
    """ "公开某犯罪份子", "路过某栋楼": the char before 某 ends a word, it is no surname. Still a
    name: "X某某" (the anonymised-name pattern: "对白某某", "和田某某"), after a preposition or
    conjunction ("原告和田某"), and when the char before it belongs to the word before ("经过梁某")."""
    if re.match(r"[栋座辆件条只台张本所间处些]", q[end : end + 1]):
        return True
    if start == 0 or q[start + 1 : end] == "某某" or q[start - 1] in _NAME_LEAD:
        return False
    if start >= 2 and _is_word(q[start - 2 : start]):
        return False
    return _is_word(q[start - 1 : start + 1])


# chars that typically stand right before a name ("和田某", "向李某", "称王某")
_NAME_LEAD = frozenset("和与及或对向给同跟由被将把让称告诉经")


@lru_cache(maxsize=4096)
def _words_raw(text: str) -> tuple[tuple[str, str], ...]:
    _jieba()
    import jieba.posseg

    return tuple((p.word, p.flag) for p in jieba.posseg.lcut(text) if p.word.strip())


def _entities_zh(q: str) -> list[Entity]:
    entities: list[Entity] = []
    scope_end = 0
    m = _SCOPE.match(q) or _SCOPE_IN.match(q)
    if m:
        scope_end = m.end()
    for m_t in _TITLE_ZH.finditer(q):
        entities.append(Entity(m_t.group(1), "title", m_t.start() < scope_end))
    for m_o in _ORG.finditer(q):
        org = m_o.group(0)
        end = m_o.end()
        for _ in range(3):  # "…中心" + "医院", "中铁十一局" + "集团" + "有限公司"
            more = _ORG_MORE.match(q, end)
            if not more:
                break
            org, end = org + more.group(0), more.end()
        org = _LEAD.sub("", org)
        org = _name_tail(org)
        weak = re.search(r"(?:公司|中心|局|厅|厂|学校|商店|超市|酒店)$", org) is not None
        at = q.find(org, m_o.start())
        if _ASKED_CLASS.search(q[: max(at, 0)]):
            continue  # "是哪家律师事务所的律师": the class of the answer, not a name
        if len(org) >= (5 if weak else 4) and not re.search(r"哪|什么|^[该本这那]|某", org):
            entities.append(Entity(org, "org", m_o.start() < scope_end))
    for m_p in _PERSON.finditer(q):
        if _not_surname(q, m_p.start(1), m_p.end()):
            continue
        if re.match(r"[\u4e00-\u9fff]", m_p.group(1)):
            entities.append(Entity(m_p.group(0), "person", m_p.start() < scope_end))
    dated: set[int] = set()
    for m_d in _DATE_Q.finditer(q):
        # "2023年3月10日", "2022年6月": a dated qualifier, matched in any common notation
        entities.append(Entity(m_d.group(0), "date", m_d.start() < scope_end))
        dated.update(range(m_d.start(), m_d.end()))
    for m_y in _YEAR.finditer(q):
        if m_y.start() not in dated:
            entities.append(Entity(m_y.group(1), "year", m_y.start() < scope_end))
    for label in label_tokens(_nfkc(q)):
        entities.append(Entity(label, "label"))
    for m_n in _CN_QUALIFIER.finditer(q):
        # "二次赔付", "一类城市", "三级": a counted qualifier names a specific case
        entities.append(Entity(m_n.group(0), "ordinal", m_n.start() < scope_end))
    # "信达百货和喜乐娱乐集团…": a name coordinated with a recognised organisation is one too
    orgs = [e.text for e in entities if e.kind == "org"]
    for org in orgs:
        for m_c in re.finditer(
            rf"(?:^|[，,]|比较|对比|\d{{4}}年)([\u4e00-\u9fffA-Za-z]{{2,12}}?)(?:和|与|及|、)(?:\d{{4}}年)?{re.escape(org)}",
            q,
        ):
            name = re.sub(r"^(?:比较|对比|根据|按照|依据|关于)", "", m_c.group(1))
            known = any(name in o or o in name for o in orgs)
            if len(name) >= 2 and not _QW_ZH.search(name) and not known:
                entities.append(Entity(name, "name", m_c.start(1) < scope_end))
    # "位于X区的A和B，这两个小区的…", "A与B，各自的…": names joined by 和/与/及 before a phrase that
    # counts or distributes them are entities too, suffix or not
    spans = [e.text for e in entities if e.kind in ("org", "title", "person", "name")]
    for m_k in [m for pattern in _COORD for m in pattern.finditer(q)][:2]:
        pair = [(_LEAD.sub("", m_k.group(g)), m_k.start(g)) for g in ("a", "b")]
        likely = [_name_like(name) for name, _ in pair]
        counted = _COUNTED.match(q, m_k.end()) is not None  # "A和B这两个小区"
        if 0 in likely or not (counted or 2 in likely):
            continue  # "原告和被告分别…", "产品质量和服务水平分别…": not names
        for name, start in pair:
            if not any(name in x or x in name for x in spans):
                entities.append(Entity(name, "name", start < scope_end))
                spans.append(name)
    taken = " ".join(e.text for e in entities)
    bounds = {i for m_b in _BOUND.finditer(_nfkc(q)) for i in range(m_b.start(), m_b.end())}
    for m_c in _CODE.finditer(_nfkc(q)):
        code = m_c.group(0)
        if code in taken or (code.isdigit() and len(code) == 4 and code + "年" in q):
            continue
        if m_c.start() in dated:
            continue
        if re.fullmatch(r"[A-Z]{2,5}", code):
            continue  # an acronym (IP地址, RTO) is a word of the question, not a name
        kind = "number" if re.fullmatch(r"[\d.]+", code) else "code"
        if kind == "number" and m_c.start() in bounds:
            continue  # "位于10000至20000元之间": a filter's bound, not a value to find
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


# "X的Y", "X之Y": the possessive, not the 之 of 之间/之后/之前/之内/之一…
_OF = re.compile(r"的|之(?![间后前内外上下中一])")


def _head_before(before: str) -> str:
    """What "…的Y" asks: the last 的-segment before the question word."""
    segments = _OF.split(before)
    if len(segments) == 1:
        return ""
    last = segments[-1].strip()
    if not last:
        # "A是B的多少" asks A (B is the base it is measured against)
        m = re.search(r"([^的是]*)是([^的是]*)的\s*$", before)
        if m:
            return m.group(1)
        last = next((s for s in reversed(segments) if s.strip()), "")
    return last


def _possessor(predicate: str, pos: dict[str, float]) -> list[str]:
    """ "财务报销系统的备份期限" → 财务报销系统: the noun phrase that owns the asked attribute.

    Not a place or time ("在报告期内的…") and not a relative clause ("报告中提到的…").
    """
    segments = [s.strip() for s in _OF.split(predicate)]
    owner = "".join(segments[:-1])
    if len(segments) < 2 or not segments[-2] or re.match(r"^(?:在|于|从|自|当|对)", owner):
        return []
    words = _words(segments[-2])
    if not words or words[-1][1].startswith(("f", "t", "p")):
        return []
    return _content_terms(segments[-2], pos)


def _owner_before(before: str, qword: str, after: str, pos: dict[str, float]) -> list[str]:
    """ "X的汽车是什么颜色" → 汽车, "X的配偶在哪里工作" → 配偶: a noun written between 的 and the
    question word owns what is asked after it (a noun after 是什么/哪种, a verb after 在哪里)."""
    asked = before + qword
    after = after.strip()
    m = re.search(r"的([^的]+?)是(?:什么|哪种|哪一种|哪个|哪类)$", asked)
    wanted = "n"
    if m is None:
        m = re.search(r"的([^的]+?)在(?:哪里|哪儿|何处|哪)$", asked)
        wanted, after = "v", re.sub(r"^[里儿]", "", after)
    words = _words(after)
    if m is None or not words or not all(f.startswith(wanted) for _, f in words):
        return []
    owner = _content_terms(m.group(1), pos)
    return [t for t in owner if pos.get(t, 1.0) >= 1.0 and len(t) >= 2]


def _after_entities(text: str, entities: Sequence[Entity]) -> str:
    """The part of ``text`` after the last mention of an entity (or all of it)."""
    end = 0
    for e in entities:
        i = text.rfind(e.text)
        if i >= 0:
            end = max(end, i + len(e.text))
    return text[end:]


def _subquestions_zh(q: str, entities: Sequence[Entity]) -> list[SubQuestion]:
    m_scope = _SCOPE.match(q) or _SCOPE_IN.match(q)
    body = q[m_scope.end() :] if m_scope else q
    body = _LABEL_TEXT.sub(" ", body)
    subs: list[SubQuestion] = []
    for sentence in re.split(r"[？?；;。！!]", body):
        clauses = [c for c in re.split(r"[，,]", sentence) if c.strip()]
        asked = [i for i, c in enumerate(clauses) if _QW_ZH.search(c)]
        polar = None
        if not asked and clauses and _POLAR.search(clauses[-1]):
            asked = [len(clauses) - 1]
            polar = _POLAR.search(_drop_deixis(clauses[-1]))
        if not asked:
            continue
        # "这两个小区的容积率": the counted noun refers back to the entities, it is not asked
        clause = _drop_deixis(clauses[asked[-1]])
        context = _drop_deixis(" ".join(clauses[: asked[-1]]))
        # the asked thing is at the last question word ("几个月的宝宝…保费是多少" asks 保费)
        m = polar or list(_QW_ZH.finditer(clause))[-1]
        qtype = m.lastgroup or "what"
        before, after = clause[: m.start()], clause[m.end() :]
        after = re.sub(r"(?:更|较|最)[\u4e00-\u9fff]{0,2}$", "", after)  # "谁更高" → ""
        after = re.sub(r"的?(?:呢|吗|啊|的)$", "", after)
        # a filter's bounds are not what is asked ("房价位于2万至3万元的区间" asks 房价)
        before = _BOUND.sub(" ", before)
        after = re.sub(r"(?:的|在)?(?:区间|范围)(?:内|之内|中|之间)?$", "", _BOUND.sub(" ", after))
        pos: dict[str, float] = {}
        before_clean = _strip_entities(before, entities)
        # what is asked follows the last entity: "公司的异地灾备中心设在…" asks about 设在, not 公司
        names = [e for e in entities if e.kind not in _QUALIFIERS and e.kind != "year"]
        predicate = _strip_entities(_after_entities(before, names), entities)
        head_before = _head_before(predicate)
        head_before = re.sub(
            r"^(?:是|有|为|在)+|(?:是|有|为|要|会|能|可以|应该|需要)+$", "", head_before
        )
        head_after = _strip_entities(after, entities)
        # "哪家公司的利润" asks 利润; "有没有出现债务违约的情况" asks 债务违约 (情况 is generic)
        category = re.fullmatch(r"哪[一]?[个家位种类支条项]", m.group(0)) is not None
        segments_after = [x for x in _OF.split(head_after) if x.strip()] or [""]
        if category:
            segments_after = segments_after[-1:]  # "哪家公司的开发时间": 公司 is the category
        head_after = next((x for x in reversed(segments_after) if _has_noun(x)), "") or next(
            (x for x in reversed(segments_after) if _content_terms(x)), segments_after[-1]
        )
        if qtype == "list" and not head_after.strip() and _BOUND.search(clauses[asked[-1]]):
            # "房价位于1万至2万元之间的小区有哪些": the answers are 小区, the filter asks 房价
            segments = [x for x in _OF.split(predicate) if x.strip()]
            if len(segments) >= 2:
                head_before = segments[-2]
        after_terms = _content_terms(head_after, pos)
        if (
            after_terms
            and re.fullmatch(r"哪些|什么|哪种|哪一种|何种|哪类", m.group(0))
            and after.strip() == after_terms[-1]
            and len(after_terms[-1]) >= 2
        ):
            # "有哪些兴趣爱好", "从事什么工作": the phrase after the question word is a noun
            # whatever the tagger says (爱好 is tagged as a verb), as in "X的Y"
            pos[after_terms[-1]] = 1.0
        members_of = ""
        if qtype == "list" and m.group(0) == "哪些" and after_terms and "的" not in after:
            last = after_terms[-1]
            # a plain noun phrase after 哪些 ("哪些电子产品"), not a verb phrase ("哪些方式投资于…项目")
            plain = all(f[0] in "nabj" or f == "vn" for _, f in _words(after))
            if (
                plain
                and pos.get(last, 0.0) >= 1.0
                and len(last) >= 2
                and after.rstrip().endswith(last)
            ):
                members_of = last
        class_predicate: list[str] = []
        if category and len(after_terms) > 1:
            org_class = re.match(f"(?:[\u4e00-\u9fff]{{0,6}}?)(?:{_ORG_SUFFIX})", after.strip())
            rest = after.strip()[org_class.end() :] if org_class else ""
            if org_class and len(_words(rest)) == 1 and "的" not in rest:
                # "在哪个律师事务所执业": the class is a kind of organisation (all its words), and
                # what follows it is the predicate, whatever the tagger says (执业 is a noun)
                class_words = set(_content_terms(org_class.group(0)))
                after_terms = [t for t in after_terms if t not in class_words]
                class_predicate = after_terms
            else:  # "哪家公司倡议时间更早": 公司 only names the category
                after_terms = after_terms[1:]
        if head_before.strip():
            head = _content_terms(head_before, pos)
            # "X的Y": Y is a noun phrase whatever the tagger says (爱好 is tagged as a verb)
            if head and not any(pos.get(t, 0) >= 1.0 for t in head):
                pos[head[-1]] = 1.0
        else:
            # no "的": the nouns before the question word ("住宿费每晚最多能报销多少元")
            own = _content_terms(predicate, pos)
            words = own or _content_terms(before_clean, pos)
            head = [w for w in words if pos.get(w, 0) >= 1.0][-3:] or words[-2:]
            if (qtype == "list" or not own) and any(pos.get(t, 0) >= 1.0 for t in after_terms):
                # "上海市有哪些小区的房价…", "A和B各自有多少个车位": the words before the question
                # word scope it, the noun after it is asked
                head = []
        head = _drop_single_chars(head)
        if category and head and len(after_terms) == 1 and "的" not in after:
            head_extra: list[str] = []  # "默认监听哪个端口": 端口 names the kind of answer
        else:
            head_extra = after_terms
        head = list(dict.fromkeys(head + head_extra))
        if context and re.match(r"^\s*(?:比较|对比)", context):
            # "比较A和B防止污染设施的建设时间，哪家公司的建设时间更早": the topic is in the first
            # clause, after the compared entities
            compared = _after_entities(context, entities)
            topic = _content_terms(compared, pos)
            if (
                re.match(r"\s*的", compared)
                and topic
                and not any(pos.get(t, 0) >= 1.0 for t in topic)
            ):
                # "比较A和B的海外收入占比": what follows 的 is a noun phrase whatever the tagger
                # says (收入, 占 are tagged as verbs), every word of it compared but the
                # adjectives, which the text paraphrases ("重大投资时间" ~ "投资了…")
                flags = dict(_words(compared))
                pos.update(
                    {
                        t: 1.0
                        for t in topic
                        if len(t) >= 2 and not flags.get(t, "v").startswith(("a", "b", "d", "m"))
                    }
                )
            if topic and category and "的" not in after and head == after_terms[:1]:
                head = []  # "哪家公司更早": 公司 only names the category
            head = list(dict.fromkeys(topic + head))
        attribute = _content_terms(_strip_entities(before, entities) + " " + head_after, pos)
        # clauses before the asked one ("去香港出差，…") set the scene: they count half
        scene = [
            t for t in _content_terms(_strip_entities(context, entities), pos) if t not in attribute
        ]
        for t in scene:
            pos[t] = pos.get(t, 1.0) * CONTEXT_WEIGHT
        attribute = list(dict.fromkeys(scene + attribute + head))
        for t in class_predicate:
            pos[t] = VERB_WEIGHT
        frame = _TIME_PHRASE.search(clause)
        if frame:
            # "在入院前一周去过哪些城市": the event says when, it is not asked (as "住院期间")
            for t in _content_terms(frame.group("event")):
                if t in pos and t in attribute:
                    pos[t] = min(pos[t], CONTEXT_WEIGHT)
        # "出院时间分别是什么": the distributive adverb is not part of the asked noun
        raw_head = _DISTRIBUTIVE_END.sub("", head_before.strip()) + head_after.strip()
        raw_head = _DISTRIBUTIVE_END.sub("", raw_head.rstrip("的"))
        if (
            qtype in ("what", "list", "how", "yesno")
            and _DATE_HEAD.search(raw_head)
            and not _DURATION_BEFORE.search(clause)
        ):
            qtype = "date"
        elif qtype in ("what", "how") and _NUMBER_HEAD.search(raw_head):
            qtype = "number"
        more = re.search(r"(?:更|较|最)(显著|明显|[高低大小多少长短早晚快慢重轻远近])", clause)
        if more and qtype in ("what", "person", "list"):
            # "哪家公司的排放量更高", "哪家的效率提升更显著" compare quantities; "谁更早" dates
            qtype = "date" if more.group(1) in ("早", "晚") else "number"
        if not head and attribute and qtype != "yesno":
            head = attribute[-1:]
        subject = [t for t in _possessor(predicate, pos) if t not in head]
        # "罗某案件的判决日期", "施某的印刷厂…" no: a class noun written right after a name
        # ("X案件", "X一案") names the entity, it is not asked
        named = [
            t
            for t in subject
            if any(
                re.search(re.escape(e.text) + r"(?:一)?" + re.escape(t) + "的", q) for e in names
            )
        ]
        if named:
            subject = [t for t in subject if t not in named]
            attribute = [t for t in attribute if t not in named]
        if not subject:
            subject = _owner_before(before, m.group(0), after, pos)
        if subs and not any(pos.get(t, 1.0) >= 1.0 for t in head):
            # "…按多少给付？最多赔几次？": a follow-up without a subject asks about the same thing
            prev = subs[-1]
            carried = [t for t in prev.head if prev.pos.get(t, 1.0) >= 1.0]
            pos.update({t: 1.0 for t in carried})
            head = list(dict.fromkeys(carried + head))
            attribute = list(dict.fromkeys(carried + attribute))
        phrase = head_before if head_before.strip() else _strip_entities(predicate, entities)
        if not _content_terms(phrase):
            phrase = ""
        phrase = f"{phrase} {head_after}".strip()
        m_unit = re.match(rf"\s*([{_MEASURE}])", m.group(0)[1:] if m.group(0)[0] == "几" else after)
        unit = m_unit.group(1) if m_unit and qtype == "number" else ""
        value = _value_kind(qtype, m.group(0), raw_head, unit, clause)
        sub = SubQuestion(
            clause, qtype, head, attribute, pos, subject, _squash(phrase), unit, value
        )
        sub.members_of = members_of
        # "被评定为什么": 为 goes with the verb before it (定为), no reason is asked
        before_qw = _words_raw(clause[: m.start()])
        verb_wei = (
            m.group(0) == "为什么"
            and bool(before_qw)
            and before_qw[-1][1].startswith("v")
            and _is_word(before_qw[-1][0][-1] + "为")
        )
        sub.cause = (qtype == "reason" and not verb_wei) or _CAUSE_HEAD.search(raw_head) is not None
        sub.category = category
        sub.situated = bool(context.strip())
        m_effect = _EFFECT_Q.search(clause)
        if m_effect:
            obj = next(g for g in m_effect.groups() if g is not None)
            sub.effect_on = _drop_single_chars(_content_terms(_strip_entities(obj, entities)))
        subs.append(sub)
    if not subs and body.strip():
        pos = {}
        terms = _content_terms(_strip_entities(body, entities), pos)
        subs.append(SubQuestion(body, "what", terms[-1:], terms, pos, worded=False))
    return subs


_EN_FUNCTION = frozenset(
    """
    their they them there our your you my his her its we us me most more some any all each every
    such other should would could can may might must shall will need get gets got also just only
    very so than then into onto about over under out up down off not no yes here
    """.split()
)
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

    def content(w: str) -> bool:
        return w not in STOPWORDS and w not in GENERIC and w not in _EN_FUNCTION and len(w) > 1

    attr = [w for w in dict.fromkeys(words) if content(w)]
    head = [w for w in dict.fromkeys(head_words) if content(w)]
    if not head and attr:
        head = attr[:1]
    # in an English noun phrase the last word is the head; earlier ones modify it
    pos = {w: (1.0 if i == len(head) - 1 else 0.5) for i, w in enumerate(head)}
    sub = SubQuestion(q, qtype, head, attr, pos)
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
    m_scope = _SCOPE.match(q)
    doc_type = m_scope.group("doctype") if m_scope else ""
    for sub in subs:
        sub.general = not entities
        # "根据…的判决书，判决日期是…": the date of the document itself, written where it signs off
        sub.document_date = bool(
            doc_type and sub.answer_type == "date" and any(t in doc_type for t in sub.head)
        )
    doc_type = _CHECKED_DOC_TYPES.get(doc_type, "")
    comparative = compare and _COMPARISON.search(q) is not None
    return QuestionAnalysis(q, "zh", entities, subs, compare, doc_type, comparative)


# ----- matching ----------------------------------------------------------------------------------
_CLAUSE_CHAR = r"[^、，,。；;：:！!？?\s]"  # a char within one list item or clause


@lru_cache(maxsize=4096)
def _window_pattern(term: str, clause: bool = False, tight: bool = False) -> re.Pattern[str]:
    """The term's chars in order, a few chars apart (``clause``: not across a list or clause
    separator: "高血压、糖尿病" holds no 血糖; ``tight``: a two-char word as written, "院长" is
    not in "法院审判长", "市花" not in "烟波市棉花街")."""
    width = 0 if tight and len(term) == 2 else max(4, len(term))
    gap = f"{_CLAUSE_CHAR if clause else '.'}{{0,{width}}}"
    return re.compile(gap.join(re.escape(c) for c in term))


# ----- table columns ------------------------------------------------------------------------------
_TABLE_SEP = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)+\|?\s*$")
_LEADING_TOTAL = re.compile(r"^总(?=..)")  # 总负债 ~ 负债合计
# generic paraphrases of column names, applied to both sides ("是不是国有" ~ "是否国有",
# "成交价格" ~ "成交总价", "平均房价" ~ "成交均价", "成交量" ~ "成交套数")
_CANON = (
    (re.compile(r"[(（][^)）]*[)）]"), ""),
    (re.compile(r"[^\w]|_"), ""),
    (re.compile(r"是不是|是否为|是否属于"), "是否"),
    (re.compile(r"价格|价钱"), "价"),
    (re.compile(r"平均"), "均"),
    (re.compile(r"数量|数目|量$"), "数"),
    (re.compile(r"(?<=.{2})(?:总计|合计|总额|总和)$"), ""),
    (_LEADING_TOTAL, ""),
)
# the asked phrase without the words around the attribute ("都属于国有企业类别" → 国有企业)
_PHRASE_TRIM = (
    re.compile(
        r"^(?:都|均(?=[为是属])|也|是|为|属于|一家|一个|各自|分别|具体|这个|该|出现了?|发生了?|存在|有)+(?=..)"
    ),
    re.compile(
        r"(?<=..)(?:情况|状况|信息|数据|类别|性质|类型|名称|具体|位于|之间|以上|以下|如何|怎样|"
        r"达到了?|是|为|各|各自|分别|了)+$"
    ),
)
# a date column: what happened + 日期 ("成交日期" for "哪一年成交")
_DATE_COLUMN = re.compile(r"(.{2,}?)(?:日期|时间|年份|年月|月份|日)")
# the measure word a noun is counted in ("多少套房子"), for count columns ("成交套数")
_MEASURE_OF = {
    "房子": "套",
    "房屋": "套",
    "房产": "套",
    "住房": "套",
    "住宅": "套",
    "公司": "家",
    "企业": "家",
    "医院": "家",
    "员工": "人",
    "人员": "人",
    "车辆": "辆",
}


@lru_cache(maxsize=4096)
def _canon(text: str, phrase: bool = False) -> str:
    """A column name or the asked phrase in a canonical form (see ``_CANON``)."""
    text = _squash(text)
    for pattern, repl in _CANON:
        text = pattern.sub(repl, text)
    if phrase:
        for trim in _PHRASE_TRIM:
            text = trim.sub("", text)
        text = _LEADING_TOTAL.sub("", text)  # "总负债达到了" → 负债
    return text


def _cells(line: str) -> list[str]:
    return [_squash(c) for c in line.strip().strip("|").split("|")]


def _table_columns(text: str) -> tuple[tuple[str, str, tuple[str, ...]], ...]:
    """The columns of the GFM tables in a chunk: (header cell, its canonical form, the cells
    below it); empty for prose."""
    if "|" not in text or "---" not in text:
        return ()
    lines = text.splitlines()
    out: list[tuple[str, str, tuple[str, ...]]] = []
    for i, line in enumerate(lines):
        if not (i and "|" in lines[i - 1] and _TABLE_SEP.match(line)):
            continue
        rows = []
        for row in lines[i + 1 :]:
            if "|" not in row:
                break
            rows.append(_cells(row))
        for j, head in enumerate(_cells(lines[i - 1])):
            if head:
                core = re.sub(r"^是否(?=..)", "", _canon(head))  # 是否国有: asks 国有
                out.append((head, core, tuple(r[j] for r in rows if j < len(r))))
    return tuple(out)


def _column_similarity(phrase: str, core: str, values: Sequence[str]) -> float:
    """How well a column name (canonical ``core``, with its cells) names the asked phrase.

    1.0: one contains the other ("国有企业" ⊃ 国有 of 是否国有, "利润" ⊂ 营业利润); 0.9: the same
    head morpheme (last char) and most chars shared ("成交价" ~ 成交总价, "房价" ~ 成交均价,
    "绿化覆盖率" ~ 绿化率); 0.75: the column's cells say what the phrase asks ("债务违约" ~
    信用债情况 whose cells read "信用债已违约或展期": the name shares a char, the cells a word).
    """
    if not phrase or not core:
        return 0.0
    if (len(core) >= 2 and core in phrase) or (len(phrase) >= 2 and phrase in core):
        return 1.0
    short = min(len(phrase), len(core))
    common = len(set(phrase) & set(core))
    if (
        phrase[-1] == core[-1]
        and common >= min(2, short)
        and 3 * common >= short * (1.5 if short <= 2 else 2)
    ):
        return 0.9
    if len(phrase) >= 3 and values and set(phrase) & set(core):
        cells = "".join(dict.fromkeys(values))
        described = core + cells
        shared_word = any(phrase[i : i + 2] in cells for i in range(len(phrase) - 1))
        if shared_word and sum(ch in described for ch in phrase) / len(phrase) >= 0.75:
            return 0.75
    return 0.0


class Passage:
    """One evidence passage, normalised once."""

    __slots__ = (
        "abbrevs",
        "columns",
        "doc_id",
        "header",
        "index",
        "key",
        "lines",
        "node",
        "stems",
        "text",
        "version",
    )

    def __init__(self, node: NodeWithScore | None, text: str, doc_id: str, index: int) -> None:
        self.node = node
        self.text = _squash(text)
        # the same text with its line breaks (sentence and field boundaries for the value check)
        self.lines = re.sub(r"\n+", "\n", re.sub(r"[^\S\n]+", "", _nfkc(text))).lower().strip()
        # a table chunk: its column names (identifier columns "…名称" left out) and cells, and
        # the text above the table with the column names (where fuzzy matches count)
        columns = _table_columns(text)
        self.columns = tuple(c for c in columns if not c[0].endswith(("名称", "名字")))
        self.header: str | None = None
        if columns:
            above = text.split("|", 1)[0]
            self.header = _squash(above) + "|" + "|".join(c[0] for c in columns)
        self.doc_id = doc_id
        self.index = index
        self.stems: set[str] | None = None
        self.abbrevs: set[str] = set()
        self.key = node.node.node_id if node is not None else f"{doc_id}#head"
        version = node.node.metadata.get("version") if node is not None else None
        self.version: int | None = int(version) if version is not None else None

    def match(
        self, term: str, window_credit: float = 0.75, clause: bool = False, tight: bool = False
    ) -> float:
        """1 for an exact match, partial credit for a fuzzy one, 0 when absent (``clause``: a
        fuzzy match of the chars in order within one list item or clause only; ``tight``: see
        ``_window_pattern``)."""
        if term in self.text:
            return 1.0
        if _is_ascii_word(term):
            if self.stems is None:
                spaced = self.text_spaced
                self.stems = _en_stems(spaced)
                self.abbrevs = {a for a in re.findall(r"\b([a-z]{3,5})\.", spaced)}
            if _stem(term) in self.stems:
                return 1.0
            # "ext." for "extension"
            return window_credit if any(term.startswith(a) for a in self.abbrevs) else 0.0
        if len(term) < 2:
            return 0.0
        score = 0.0
        # in a table the words of an attribute are paraphrased in the title and the column names;
        # chars scattered over the cells (company and place names) say nothing
        text = self.header if self.header is not None else self.text
        if len(term) <= 4 and _window_pattern(term, clause, tight).search(text):
            score = window_credit
        if len(term) >= 3:
            grams = [term[i : i + 2] for i in range(len(term) - 1)]
            score = max(score, 0.9 * sum(g in text for g in grams) / len(grams))
        return score

    @property
    def text_spaced(self) -> str:
        node = self.node
        if node is None:
            return self.text
        path = str(node.node.metadata.get("title_path", ""))
        return _nfkc(path + "\n" + node.node.get_content()).lower()


def _coverage(
    passage: Passage,
    terms: Sequence[str],
    weights: dict[str, float],
    credit: float = 0.75,
    given: dict[str, float] | None = None,
) -> float:
    """IDF-weighted share of ``terms`` in the passage; ``given``: credit already established
    for some terms (a table column that names the asked phrase)."""
    total = sum(weights.get(t, 1.0) for t in terms)
    if total <= 0:
        return 1.0
    given = given or {}
    return (
        sum(weights.get(t, 1.0) * max(given.get(t, 0.0), passage.match(t, credit)) for t in terms)
        / total
    )


def _column_match(sub: SubQuestion, passage: Passage) -> float:
    """Credit for a table column that names what ``sub`` asks (0 for prose)."""
    if not passage.columns or not (sub.phrase or sub.unit):
        return 0.0
    phrase = _canon(sub.phrase, phrase=True)
    unit = sub.unit
    counting = phrase.endswith("数") or re.search(r"数量|数目|多大量|多少量", sub.text)
    if not unit and sub.answer_type == "number" and counting:
        # "房子数量是多少" counts 套: the measure word of the counted noun
        unit = next((u for noun, u in _MEASURE_OF.items() if noun in phrase), "")
    best = 0.0
    for _, core, values in passage.columns:
        if unit and core.endswith(unit + "数"):
            return 1.0  # "成交了多少套" → 成交套数
        if sub.answer_type == "date":
            m = _DATE_COLUMN.fullmatch(core)
            if m and m.group(1) in phrase:
                return 1.0  # "哪一年成交" → 成交日期
        best = max(best, _column_similarity(phrase, core, values))
    return best


# the year of a case or file number ("(2023)蘋刑初字第1号", "2023年刑初第001号", "〔2023〕23号") is
# no date of an event
_CASE_NUMBER = re.compile(
    r"[(（〔\[【]\s*(?:19|20)\d{2}\s*年?\s*[)）〕\]】]|"
    r"(?:19|20)\d{2}\s*[年\-]?\s*[\u4e00-\u9fff]{0,2}?[刑民行执][初终字再]"
)
# a document's own date where it signs off: a full date closing a line ("此致XX人民法院\n2023年9月1日",
# "二〇二三年九月十五日"), after at most a short name
_SIGN_OFF = re.compile(
    r"(?:^|\n)(?:[^\n,，。;；:：]{0,30}?|[*_#]*(?:日期|落款|签发日期)[*_]*[:：])[*_]*"
    r"(?:\d{4}年\d{1,2}月\d{1,2}日|[〇零一二三四五六七八九]{4}年[一二三四五六七八九十]{1,3}月"
    r"[一二三四五六七八九十]{1,3}日)[*_]*(?:[(（][^\n]*)?(?:\n|$)"
)
# when a rule applies, as a statute words it: by an event ("自保管人和存货人意思表示一致时成立",
# "自下列情形之一发生时", "自知道之日起"), not a calendar date
_EVENT_TIME = re.compile(r"自[^。；;\n]{1,40}?(?:时|之日|日)|之日起|时起|随时|届满(?:时|之日|后)")
_DATE_OR_EVENT = re.compile(f"{_DATE_VALUE.pattern}|{_EVENT_TIME.pattern}", re.I)
_UNKNOWN = re.compile(
    r"未知|不详|不明确|未披露|未公开|未公布|未提供|未记录|暂无|尚无|无法确定|尚不清楚|待定"
)
# where a class noun is followed or preceded by its members ("电子产品包括…", "A、B等电子产品")
_MEMBER_AFTER = re.compile(
    r"(?![\u4e00-\u9fff])|包括|包含|有|如|为|是|等|及|和|与|或|主要|涉及|方面|领域|的|类|中|上"
)
_MEMBER_BEFORE = re.compile(r"[、等类和与及]|包括|例如|比如")
# a prison term is a number of years and months, or life or death ("判处无期徒刑")
_TERM_HEAD = re.compile(r"刑期|判刑|徒刑|刑罚|服刑|量刑")
_TERM_VALUE = re.compile(_NUMBER_VALUE.pattern + r"|无期徒刑|死刑|终身监禁", re.I)
# attributes whose value is written without their name: an occupation ("…，汉族，某物流公司司机"),
# a residence ("住紫霞市玉门街86号"); the value must follow a mention of the person asked about
_OCCUPATION = (
    r"司机|工人|职员|员工|职工|经理|老板|店主|业主|商户|个体户|个体经营|经营者|商人|教师|老师|医生|"
    r"护士|农民|务农|工程师|技术员|会计|出纳|律师|学生|退休|无业|无固定职业|自由职业|务工|厨师|"
    r"保安|销售员|业务员|营业员|收银员|快递员|外卖员|公务员|干部|程序员|设计师|记者|演员|作家|"
    r"主管|总监|董事长|总经理|法定代表人|负责人|厂长|店员|服务员|保姆|家政|军人|警察|个体"
)
_VALUE_CUES: dict[str, re.Pattern[str]] = {
    "职业": re.compile(_OCCUPATION),
    "工作": re.compile(_OCCUPATION),
    "居住地": re.compile(
        r"住(?:址|所|所地|在|于)?[:：]?[\u4e00-\u9fff]{2,12}?(?:市|省|县|区|镇|村|街|路|号)"
    ),
    "住址": re.compile(
        r"住(?:址|所|所地|在|于)?[:：]?[\u4e00-\u9fff]{2,12}?(?:市|省|县|区|镇|村|街|路|号)"
    ),
    "住所": re.compile(
        r"住(?:址|所|所地|在|于)?[:：]?[\u4e00-\u9fff]{2,12}?(?:市|省|县|区|镇|村|街|路|号)"
    ),
}
_CUE_REACH = 60  # chars after the person's name where the cue may be


def _owners(clause: str, anchors: Sequence[Entity]) -> list[Entity]:
    """The people an attribute is asked of: the last person named in the clause and those
    coordinated with it ("A和B的职业"), not an earlier owner ("宋某的辩护人钱某的住址": 钱某)."""
    placed = sorted(
        ((clause.find(e.text), e) for e in anchors if e.kind == "person" and e.text in clause),
        key=lambda x: x[0],
    )
    if not placed or clause[placed[-1][0] + len(placed[-1][1].text) :].count("的") > 1:
        return []  # none, or "葛某某的父母的职业": the attribute is someone else's
    owners = [placed[-1]]
    for pos, e in reversed(placed[:-1]):
        gap = clause[pos + len(e.text) : owners[-1][0]]
        if not re.fullmatch(r"\s*(?:和|与|及|以及|、|，|,)\s*", gap):
            break
        owners.append((pos, e))
    return [e for _, e in owners]


def _cued(passage: Passage, term: str, people: Sequence[Entity]) -> bool:
    cue = _VALUE_CUES[term]
    text = passage.text
    for e in people:
        for form in e.forms():
            for m in re.finditer(re.escape(form), text):
                if cue.search(text, m.end(), m.end() + _CUE_REACH):
                    return True
    return False


_SENTENCE_SEPS = "。！？!?；;\n"
_CLAUSE_SEPS = _SENTENCE_SEPS + ",，"


def _scope_bounds(text: str, start: int, end: int, scope: str) -> tuple[int, int]:
    """The sentence or comma clause of ``text`` around ``text[start:end]``.

    A label line ("出院记录：", "## 入院时间") takes in the next line, where its value is;
    ``clause2`` takes in the clause after the head's too ("于3月2日入院，住院14天").
    """
    seps = _SENTENCE_SEPS if scope == "sentence" else _CLAUSE_SEPS
    lo = max(text.rfind(c, 0, start) for c in seps) + 1

    def next_sep(i: int) -> int:
        found = [j for c in seps if (j := text.find(c, i)) >= 0]
        return min(found, default=len(text))

    hi = next_sep(end)
    if hi < len(text) and text[hi] == "\n" and not text[end:hi].strip(":：*#-_ "):
        hi = next_sep(hi + 1)
    if scope == "clause2" and hi < len(text) and text[hi] in ",，":
        hi = next_sep(hi + 1)
    return lo, hi


def _date_forms(text: str) -> list[str]:
    m = _DATE_Q.fullmatch(text)
    if m is None:
        return [_squash(text)]
    year, month, day = m.group(1), int(m.group(2)), m.group(3)
    forms: list[str] = [f"{month}月{int(day)}日", f"{month}月{int(day)}号"] if day else []
    if year:
        forms += [f"{year}-{month:02d}", f"{year}.{month}", f"{year}/{month}", f"{year}年{month}月"]
        forms.append(f"{year}年{month:02d}月")  # tables pad the month: 2020年01月
        if day:
            forms = [f"{year}-{month:02d}-{int(day):02d}", f"{year}年{month}月{int(day)}日", *forms]
    return forms


def _mentions(passage: Passage, entity: Entity) -> bool:
    if entity.kind == "date":
        return any(f in passage.text for f in _date_forms(entity.text))
    if entity.kind == "ordinal":
        number = chinese_number(entity.text[:-1])
        return entity.text in passage.text or (
            number is not None and f"{number}{entity.text[-1]}" in passage.text
        )
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
    # chunks the gate found in the entity's documents when retrieval missed them
    supplements: list[NodeWithScore] = field(default_factory=list)


def _is_noun(sub: SubQuestion, term: str) -> bool:
    """A noun of the question (a name for a thing, matched tightly: "院长", "市花"), not a verb
    the text words loosely ("判刑" in "判处有期徒刑")."""
    return sub.pos.get(term, 1.0) >= 1.0 and all(f.startswith("n") for _, f in _words(term))


def _presupposed(sub: SubQuestion) -> list[str]:
    """The words the asked predicate presupposes: nouns and nominalised events of two chars or
    more (dictionary words, not support, light or generic words). A verb used as the predicate
    ("在哪个法院受审", "被判定犯了") is left out: the text words it its own way (审理, 判处), and so
    is a reporting verb ("报告中提到的…")."""
    return [
        t
        for t in dict.fromkeys(sub.head + sub.attribute)
        if len(t) >= 2
        and not _is_ascii_word(t)
        and t not in _SUPPORT_VERBS
        and t not in _REPORTING_VERBS
        and sub.pos.get(t, 1.0) > LIGHT_WEIGHT
        and _is_word(t)
        and not (sub.pos.get(t, 1.0) < 1.0 and re.search(re.escape(t) + _PREDICATE_AFTER, sub.text))
    ]


def _compound_members(sub: SubQuestion) -> list[str]:
    """The verbs of the asked phrase written right after one of its nouns ("员工持股计划": 持股,
    "受到了环保处罚": 处罚, "股票回购"): a noun-verb compound names one thing, so its verb is no
    predicate the text may word its own way, and it must be in the entity's documents (loosely),
    however common it is elsewhere in the knowledge base (处罚 in every judgment). Modifiers
    before a noun ("防止污染设施" ~ "污染防治设施", "绿色产品" ~ "环保型产品") are paraphrased and
    are not checked."""
    raw = _words_raw(sub.text)
    out = [
        b
        for (a, fa), (b, fb) in zip(raw, raw[1:], strict=False)
        if a in sub.head
        and b in sub.head
        and fb == "v"
        and _pos_weight(fa) >= 1.0
        and len(b) >= 2
        and b not in _SUPPORT_VERBS
        and b not in _REPORTING_VERBS
        and _is_word(b)
    ]
    return list(dict.fromkeys(out))


def _compound_noun(sub: SubQuestion) -> str:
    """The asked noun compound as written ("首席财务官", "变更了会计政策" → 会计政策, "涉及诉讼案件" →
    诉讼案件): two or more words ending in a noun, after the predicate's 了/的 or its leading verbs.
    Its words may each be common (财务, 政策) while the thing it names is not."""
    phrase = re.split(r"[了的]", sub.phrase)[-1]
    words = list(_words(phrase))
    if not re.search(r"[了的]", sub.phrase):
        # "涉及诉讼案件", "建设防止污染设施": the leading verbs are the predicate's
        while len(words) > 1 and (
            words[0][1] == "v" or (words[0][1] == "vn" and words[1][1].startswith("v"))
        ):
            words.pop(0)
    if (
        len(words) < 2
        or not words[-1][1].startswith("n")
        or any(f in ("m", "x") or w in GENERIC or w in _FILLER for w, f in words)
    ):
        return ""  # "决议时间", "融资金额": an attribute of an event, worded as the text likes
    compound = "".join(w for w, _ in words)
    return compound if len(compound) >= 4 and compound in sub.text else ""


class EvidenceGate(BaseNodePostprocessor):
    """Passes the evidence through (plus any chunk it looked up), or refuses and records why."""

    min_head_coverage: float = Field(
        0.5, ge=0, le=1, description="IDF-weighted fuzzy share of the asked head in one passage."
    )
    min_attribute_coverage: float = Field(
        0.4, ge=0, le=1, description="Share of the whole predicate in that same passage."
    )
    min_question_coverage: float = Field(
        0.3, ge=0, le=1, description="Share of all question terms in the best passage."
    )
    check_entities: bool = True
    check_answer_type: bool = True
    per_entity: bool = Field(True, description="Comparisons: each entity needs its own passage.")
    entity_quorum: float = Field(
        0.5, ge=0, le=1, description='Share of the entities of "A和B分别…" that must pass.'
    )
    compare_quorum: float = Field(
        1.0, ge=0, le=1, description='Same for a comparison ("A和B谁更早"): both values needed.'
    )
    valued_entity_quorum: float = Field(
        1.0,
        ge=0,
        le=1,
        description='Same for "A和B的X分别是多少/什么时候" (a number or a date of each).',
    )
    typed_quorum: float = Field(
        1.0, ge=0, le=1, description="Share of the entities with the attribute that need a value."
    )
    min_subject_coverage: float = Field(
        0.3, ge=0, le=1, description='"X的Y是什么": share of X (beyond entities) with Y.'
    )
    subject_min_idf: float = Field(
        1.6, ge=0, description="Subject words more common than this IDF are not checked."
    )
    check_compounds: bool = Field(
        True,
        description='A rare asked noun compound ("首席财务官") must be in the entity\'s documents.',
    )
    subject_sentence: bool = Field(
        True,
        description='"X的N1的N2": N1 and N2 must be named in one sentence or record line.',
    )
    min_last_head: float = Field(
        0.0, ge=0, le=1, description="Match credit required for the last head term (0: off)."
    )
    min_column_match: float = Field(
        0.75, ge=0, le=1, description="Table passages: column-name similarity that covers the head."
    )
    lookup: bool = Field(
        True, description="With a ledger: look up the entity / attribute the evidence lacks."
    )
    lookup_limit: int = Field(8, gt=0, description="Chunks fetched per keyword lookup.")
    lookup_scan_chunks: int = Field(
        120, ge=0, description="Scan the entity's documents chunk by chunk up to this many chunks."
    )
    type_window: int = Field(
        30, ge=0, description="A number/date must lie within this many chars of the head term."
    )
    number_scope: str = Field(
        "sentence",
        pattern="^(?:window|sentence|clause|clause2)$",
        description="A number must also lie in the head's sentence / comma clause (clause2: or "
        "the next clause); window: anywhere within type_window.",
    )
    date_scope: str = Field(
        "window",
        pattern="^(?:window|sentence|clause|clause2)$",
        description="Same for a date.",
    )
    scope_lookup: bool = Field(
        True,
        description='"根据X法院的判决书，A的…": an entity looked up is taken from the documents that '
        "name X when there are such.",
    )
    value_cues: bool = Field(
        True, description='"X的职业": an occupation word after X names it (see _VALUE_CUES).'
    )
    fuzzy_spots: bool = Field(
        True, description="A value may also sit by a fuzzy mention of the head (chars in order)."
    )
    check_members: bool = Field(
        True, description='"哪些X": X named only as a modifier ("X出口公司") gives no member.'
    )
    value_kinds: list[str] = Field(
        default_factory=lambda: ["money", "hours", "country", "people"],
        description="Kinds of value checked where the question asks one: ratio, money, count, "
        "day, hours, country, people (see _value_kind).",
    )
    spot_min_weight: float = Field(
        0.6, ge=0, le=1, description="Head words a number is looked for near: this POS weight up."
    )
    skip_case_numbers: bool = Field(
        True, description='The year of a case number ("(2023)刑初字第1号") is no date asked for.'
    )
    unknown_values: bool = Field(
        True, description='A sentence that calls the value unknown ("未知", "不详") gives none.'
    )
    entityless_types: list[str] = Field(
        default_factory=lambda: ["yesno", "how", "reason"],
        description="Answer types that need no passage with the head and predicate when the "
        "question names no entity at all (a legal yes/no or how question has no attribute "
        "slot: its facts are paraphrased by the statute); the overall coverage still applies.",
    )
    check_presupposed: bool = Field(
        True,
        description="A word the question presupposes that no chunk of the knowledge base holds "
        "(or at most presupposed_max_share of them) must occur (loosely) in the entity's "
        "documents, when they were all read (prose).",
    )
    presupposed_max_share: float = Field(
        0.005,
        ge=0,
        le=1,
        description="Presupposed words this rare in the knowledge base (share of its chunks that "
        "hold them; 0: only words no chunk holds) are checked in the entity's documents: a "
        "word the corpus hardly uses is no paraphrase of its own (绿色产品 for 环保产品), so "
        "one held only by other entities' documents (数据泄露) is not there to answer from.",
    )
    lay_types: list[str] = Field(
        default_factory=lambda: ["yesno", "how", "reason"],
        description="Answer types whose question lays out a situation in the asker's own words "
        '("…有牵连，人民法院会怎么处理"): the text words it otherwise, so only the presupposed '
        "words no chunk holds are checked there (not the rare ones).",
    )
    general_subquestion_quorum: float = Field(
        0.5,
        ge=0,
        le=1,
        description="Share of the sub-questions of a question naming no entity that must pass "
        '("什么是X？X合法吗？…如何认定？"); with an entity every sub-question must.',
    )
    event_times: bool = Field(
        True,
        description='A date question that names no entity ("仓储合同什么时候成立") asks when a '
        'rule applies: an event time ("自…时", "之日起", "随时") answers it as a date does.',
    )
    lay_coverage_by_pos: bool = Field(
        True,
        description="An entity-less question of a lay type weighs its words by part of speech (and "
        "its scene-setting clauses by CONTEXT_WEIGHT) in the overall coverage, as the attribute "
        "check does: the asker's verbs (打伤, 弄丢了, 找) are the statute's to word, its nouns "
        "(精神损害赔偿, 违约责任) name what is asked. A document holding every word of the asked "
        "head keeps its plain (IDF-only) coverage as well.",
    )
    check_effects: bool = Field(
        True,
        description='About a named entity, "A对B有何影响" needs a sentence with B stating an '
        'effect, and "为什么…" / "…的理由是什么" a sentence with the head giving a cause.',
    )
    window_credit: float = Field(
        0.75, ge=0, le=1, description="Credit for a term whose chars occur in order nearby."
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

    # ----- ledger helpers ----------------------------------------------------------------------
    def _weights(self, terms: Sequence[str]) -> dict[str, float]:
        """IDF of each term in the keyword index (document frequencies cached for a while)."""
        if self._ledger is None or not terms:
            return dict.fromkeys(terms, 1.0)
        now = time.monotonic()
        url = self._ledger.url
        stamp, total, cached = _DF.get(url, (0.0, 0, {}))
        if now - stamp > _DF_TTL:
            stamp, total, cached = now, 0, {}
        unknown = [t for t in dict.fromkeys(terms) if t not in cached]
        if unknown or not total:
            freqs, total = self._ledger.term_document_frequencies(unknown or list(terms)[:1])
            for t in unknown:
                cached[t] = freqs.get(t, 0)
            if len(cached) > _DF_MAX:
                cached = {t: cached[t] for t in terms}
            _DF[url] = (stamp, total, cached)
        return idf_weights(list(terms), {t: cached[t] for t in terms}, total)

    def _rare(self, terms: Sequence[str], max_share: float = 0.0) -> list[str]:
        """The terms at most ``max_share`` of the chunks in the keyword index hold (0: the terms
        no chunk holds, document frequency 0)."""
        if self._ledger is None or not terms:
            return []
        self._weights(terms)  # fills the document-frequency cache
        _, total, cached = _DF.get(self._ledger.url, (0.0, 0, {}))
        limit = max_share * total
        return [t for t in terms if cached.get(t, total + 1) <= limit]

    def _rare_phrase(self, phrase: str, max_share: float, tenant: str) -> bool:
        """Whether at most ``max_share`` of the keyword index's chunks hold ``phrase`` (its index
        tokens in a row)."""
        if self._ledger is None:
            return False
        self._weights([phrase])  # the total number of chunks
        _, total, _ = _DF.get(self._ledger.url, (0.0, 0, {}))
        limit = int(max_share * total)
        try:
            count = self._ledger.phrase_frequency(
                " ".join(tokenize(phrase)), tenant=tenant, cap=limit + 1
            )
        except NotImplementedError:
            return False
        return count <= limit

    def _allowed(self, doc_ids: Sequence[str]) -> list[str]:
        if self.doc_ids is None:
            return list(doc_ids)
        allowed = set(self.doc_ids)
        return [d for d in doc_ids if d in allowed]

    def _doc_heads(self, passages: Sequence[Passage]) -> dict[str, Passage]:
        """The opening chunk of each passage's document (where a record names its subject).

        Cached per (ledger, document, version): a version's chunks never change.
        """
        out: dict[str, Passage] = {}
        if self._ledger is None:
            return out
        versions = {p.doc_id: p.version for p in passages}
        for doc_id, version in versions.items():
            key = (self._ledger.url, doc_id, version)
            head = _HEADS.get(key) if version is not None else None
            if head is None:
                first = self._ledger.active_chunks_at(doc_id, [0]).get(0)
                if first is None:
                    continue
                head = Passage(None, first.title_path + "\n" + first.text, doc_id, -1)
                if version is not None and first.version == version:
                    _HEADS[key] = head
                    while len(_HEADS) > _HEADS_MAX:
                        _HEADS.pop(next(iter(_HEADS)))
            out[doc_id] = head
        return out

    def _passage(self, chunk: ChunkInfo, tenant: str) -> Passage:
        """A looked-up chunk as a passage (cached: a chunk id names one immutable text)."""
        url = self._ledger.url if self._ledger is not None else ""
        key = (url, chunk.chunk_id, chunk.version, hash(chunk.text))
        cached = _CHUNKS.get(key)
        if cached is not None:
            return cached
        node = chunk_to_node(chunk, "", tenant, {"gate_lookup": True})
        text = chunk.title_path + "\n" + chunk.text
        passage = Passage(NodeWithScore(node=node, score=0.0), text, chunk.doc_id, -1)
        _CHUNKS[key] = passage
        while len(_CHUNKS) > _CHUNKS_MAX:
            _CHUNKS.pop(next(iter(_CHUNKS)))
        return passage

    def _search(
        self,
        terms: Sequence[str],
        tenant: str,
        doc_ids: Sequence[str] | None,
        phrases: Sequence[str] = (),
        limit: int | None = None,
    ) -> list[Passage]:
        """Keyword lookup inside the gate's scope (never outside ``doc_ids`` when given).

        ``phrases`` are matched as consecutive index tokens ("陈某某" → "陈 某某").
        """
        if self._ledger is None or not (terms or phrases):
            return []
        if self.doc_ids is not None:
            doc_ids = self._allowed(doc_ids if doc_ids is not None else self.doc_ids)
        tokens = [" ".join(tokenize(p)) for p in phrases]
        tokens += [t for term in terms for t in query_tokens(term)]
        tokens = list(dict.fromkeys(t for t in tokens if t))
        if not tokens:
            return []
        try:
            # ranked in memory where the ledger can (same hits as keyword_search; scoped
            # searches fall back to keyword_search's SQL filter there)
            hits = self._ledger.keyword_search_ranked(
                tokens, tenant=tenant, doc_ids=doc_ids, limit=limit or self.lookup_limit
            )
        except NotImplementedError:  # keyword search needs a SQLite or PostgreSQL ledger
            return []
        chunks = self._ledger.active_chunks_by_id([c for c, _ in hits], tenant=tenant)
        return [self._passage(chunks[c], tenant) for c, _ in hits if c in chunks]

    def _scan(
        self, doc_ids: Sequence[str], tenant: str, versions: dict[str, int | None]
    ) -> tuple[list[Passage], bool]:
        """Every active chunk of the given (in-scope) documents, within the scan budget, and
        whether that was all of them.

        Cached per (ledger, document, version) like the opening chunks.
        """
        out: list[Passage] = []
        if self._ledger is None:
            return out, False
        for doc_id in self._allowed(doc_ids):
            version = versions.get(doc_id)
            key = (self._ledger.url, doc_id, version)
            doc = _DOCS.get(key) if version is not None else None
            if doc is None:
                chunks = self._ledger.active_chunks(doc_id)
                doc = [self._passage(c, tenant) for c in chunks]
                if version is not None and chunks and chunks[0].version == version:
                    _DOCS[key] = doc
                    while len(_DOCS) > _DOCS_MAX:
                        _DOCS.pop(next(iter(_DOCS)))
            if len(out) + len(doc) > self.lookup_scan_chunks:
                return out, False
            out += doc
        return out, True

    # ----- decision ----------------------------------------------------------------------------
    def _passes(
        self,
        sub: SubQuestion,
        p: Passage,
        weights: dict[str, float],
        anchors: Sequence[Entity] = (),
    ) -> tuple[bool, bool, float, float]:
        c = self.window_credit
        terms = sub.attribute + sub.head + sub.subject
        w = {t: weights.get(t, 1.0) * sub.pos.get(t, 1.0) for t in terms}
        nouns = sub.head_has_noun
        # a table column that names the asked phrase covers the head's words ("房屋成交均价" in a
        # table with 成交均价; "是不是国有企业" with 是否国有)
        col = _column_match(sub, p)
        given = dict.fromkeys(sub.head, col) if col >= self.min_column_match else None
        if self.value_cues:
            # "X的职业是什么" is answered by "X，男，…，某物流公司司机": the value names the attribute
            owners = _owners(sub.text, anchors)
            cued = [t for t in sub.head if t in _VALUE_CUES and _cued(p, t, owners)]
            if cued:
                given = {**(given or {}), **dict.fromkeys(cued, 1.0)}
        # a head of verbs only ("设在哪个城市") is checked through the attribute, and not at all when
        # the passage names the question's entity ("异地灾备中心…位于贵阳")
        h = _coverage(p, sub.head, w, c, given) if sub.head and nouns else 1.0
        qualifiers = [e for e in anchors if e.kind in _QUALIFIERS]
        anchored = not nouns and any(_mentions(p, e) for e in anchors if e.kind not in _QUALIFIERS)
        checked = sub.attribute
        if anchored:
            # ... only when it links the entity to an individual of a class ("在哪个法院受审": the
            # text says 审理) or a lay question lays out its situation (below): otherwise the verb
            # is what is asked ("是否获得了减刑", "由谁陪护", "每周锻炼几次") and is checked as
            # usual. A noun of the predicate is no paraphrase of the verb ("被羁押在哪个看守所",
            # "接受了哪种麻醉" need 看守所 / 麻醉) -- except after a light verb ("属于哪个行业": the
            # class of the answer), in a comparison ("哪家公司更早": the class of the compared
            # entities), and when no question word says what is asked ("请描述X的债务违约情况")
            light = all(sub.pos.get(t, 1.0) <= LIGHT_WEIGHT for t in sub.head)
            # a lay question words its situation itself ("包裹丢了，可以要求X赔偿吗"): its verb
            # is the statute's to word, as for a class
            linking = sub.category or (sub.situated and sub.answer_type in self.lay_types)
            names = [e.text for e in anchors]
            checked = (
                []
                if light or not sub.worded or _COMPARISON.search(sub.text)
                else [
                    t
                    for t in sub.attribute
                    if (sub.pos.get(t, 1.0) >= 1.0 or not linking)
                    and not any(t in n for n in names)
                ]
            )
        a = _coverage(p, checked, w, c, given) if checked else 1.0
        ok = h >= self.min_head_coverage and a >= self.min_attribute_coverage
        if ok and qualifiers:
            # "65周岁…10年交", "二次赔付": the numbers qualify the asked value, in the same passage
            ok = all(_mentions(p, e) for e in qualifiers)
        subject = [t for t in sub.subject if weights.get(t, 1.0) >= self.subject_min_idf]
        named = any(e.kind in _MAIN for e in anchors)  # the question is about a named entity
        if ok and subject:
            # only specific subject words count ("财务报销系统的…"), not 案件/公司
            ok = _coverage(p, subject, w, c) >= self.min_subject_coverage
            # a thing a named entity owns ("X的辩护人的…"), not a lay question's relative clause
            # ("留置物产生的收益", "申请人隐瞒情况的后果")
            owned = [t for t in subject if sub.pos.get(t, 1.0) >= 1.0]
            if ok and owned and named and self.subject_sentence and not p.columns:
                ok = self._owned_in_sentence(sub, p, owned, weights, anchors)
        if ok and self.min_last_head > 0 and nouns:
            last = [t for t in sub.head if sub.pos.get(t, 1.0) >= 1.0][-1]
            ok = max(p.match(last, c), (given or {}).get(last, 0.0)) >= self.min_last_head
        typed = ok and self._typed(sub, p)
        if typed and self.check_effects and named:
            # about a named entity: an effect or a reason must be stated where the head is
            typed = self._affects(sub, p) and self._caused(sub, p)
        return ok, typed, h, a

    def _owned_in_sentence(
        self,
        sub: SubQuestion,
        p: Passage,
        owned: Sequence[str],
        weights: dict[str, float],
        anchors: Sequence[Entity],
    ) -> bool:
        """ "X的辩护人的家庭住址", "X的兄弟姐妹的职业", "X的汽车是什么颜色": the asked attribute
        belongs to the owned thing, so one sentence or record line (under the passage's
        headings) must name both. A record read as one passage has X's own 职业 and 住址 on
        other lines, and "兄弟姐妹体健" on the family line."""
        title = ""
        if p.node is not None:
            title = _squash(str(p.node.node.metadata.get("title_path", "")))
        # what is asked of the owned thing ("汽车是什么颜色": 颜色), beside it in the sentence
        plain = replace(
            sub,
            subject=[],
            head=[t for t in sub.head if t not in owned] or sub.head,
            attribute=[t for t in sub.attribute if t not in owned] or sub.attribute,
        )
        w = {t: weights.get(t, 1.0) for t in owned}
        names = [e for e in anchors if e.kind not in _QUALIFIERS]  # dates qualify the record
        for sentence in re.split(r"[。！？；!?;\n]", p.lines):
            if not sentence.strip():
                continue
            sp = Passage(None, title + "\n" + sentence, p.doc_id, p.index)
            if _coverage(sp, owned, w, self.window_credit) < self.min_subject_coverage:
                continue
            if self._passes(plain, sp, weights, names)[0]:
                return True
        return False

    def _best(
        self,
        sub: SubQuestion,
        group: Sequence[Passage],
        weights: dict[str, float],
        anchors: Sequence[Entity] = (),
    ) -> tuple[tuple[bool, bool, float, float], Passage | None]:
        best: tuple[bool, bool, float, float] = (False, False, 0.0, 0.0)
        where: Passage | None = None
        for p in group:
            r = self._passes(sub, p, weights, anchors)
            if (r[1], r[0], r[2] + r[3]) > (best[1], best[0], best[2] + best[3]):
                best, where = r, p
        return best, where

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
        passages = [p for p in passages if p.text.strip()]
        if not passages:
            return GateDecision(True, "no_evidence")
        tenant = self.tenant or str(nodes[0].node.metadata.get("tenant", "default"))
        use_lookup = self.lookup and self._ledger is not None
        analysis = analyze_question(question)
        details: dict[str, Any] = {
            "entities": [e.text for e in analysis.entities],
            "head": analysis.head_terms,
            "attribute": analysis.attribute_terms,
            "answer_types": [s.answer_type for s in analysis.subquestions],
        }
        # the question's content: its names and the words of what it asks (not 谁更高, 请问…)
        q_terms = list(
            dict.fromkeys(
                [_squash(e.text) for e in analysis.entities if not e.scope]
                + analysis.attribute_terms
                + analysis.head_terms
            )
        )
        all_terms = q_terms + [_squash(e.text) for e in analysis.entities if e.scope]
        weights = self._weights(all_terms)
        supplements: dict[str, Passage] = {}
        heads = self._doc_heads(passages) if analysis.main_entities else {}
        # 2. every specific entity must be in the evidence (or, looked up, in the scope)
        entity_docs: dict[str, set[str]] = {}
        entity_versions: dict[str, int | None] = {}
        # "根据X法院和Y法院的判决书，A和B的…": a looked-up A belongs to the documents of X or Y (the
        # same 吕某某 may be a judge in another court's judgment)
        scope_orgs = (
            [e for e in analysis.entities if e.scope and e.kind == "org"]
            if self.scope_lookup
            else []
        )
        if self.check_entities:
            missing = []
            for e in analysis.entities:
                if e.scope or any(_mentions(p, e) for p in passages):
                    continue
                if e.kind in _MAIN and any(_mentions(h, e) for h in heads.values()):
                    continue
                found: list[Passage] = []
                if use_lookup:
                    context = [x.text for x in analysis.entities if x.scope] + analysis.head_terms
                    # the entity as a phrase of index tokens ("陈某某" → "陈 某某"), with context
                    # (which of several 陈某某) and then alone
                    for terms in (context, []):
                        hits = self._search(terms, tenant, None, e.forms(), 3 * self.lookup_limit)
                        hits = [p for p in hits if _mentions(p, e)]
                        scoped = self._in_scope(hits, scope_orgs) if e.kind in _MAIN else hits
                        found = found or hits
                        if scoped:
                            found = scoped
                            break
                if not found:
                    missing.append(e.text)
                elif e.kind in _MAIN:
                    entity_docs[e.text] = {p.doc_id for p in found}
                    entity_versions.update({p.doc_id: p.version for p in found})
                else:
                    top = max(found, key=lambda p: _coverage(p, analysis.head_terms, weights))
                    supplements.setdefault(top.key, top)
            if missing:
                details["missing_entities"] = missing
                return GateDecision(True, "entity_missing", details)
        # which passages belong to which entity (by mention, or by their document)
        main = analysis.main_entities
        pool = passages + list(supplements.values())
        versions = {p.doc_id: p.version for p in pool}
        versions.update(entity_versions)
        groups: list[tuple[str, set[str]]] = []
        if main:
            for e in main:
                docs = {p.doc_id for p in pool if _mentions(p, e)}
                docs |= {d for d, h in heads.items() if _mentions(h, e)}
                docs |= entity_docs.get(e.text, set())
                groups.append((e.text, docs))
            if analysis.doc_type and self.check_entities:
                # "根据X医院的判决书，…": the entity's documents must be of that kind
                kind = analysis.doc_type
                for _, docs in groups:
                    heads.update(self._doc_heads([p for p in pool if p.doc_id not in heads]))
                    seen = [p for p in pool if p.doc_id in docs] + [
                        heads[d] for d in docs if d in heads
                    ]
                    if docs and not any(kind in p.text for p in seen):
                        scanned_docs = (
                            self._scan(sorted(docs), tenant, versions)[0] if use_lookup else []
                        )
                        if not any(kind in p.text for p in scanned_docs):
                            details["missing_document_type"] = kind
                            return GateDecision(True, "scope_missing", details)
            if not (self.per_entity and analysis.compare):
                groups = [("|".join(e.text for e in main), set().union(*(d for _, d in groups)))]
        else:
            groups.append(("", {p.doc_id for p in pool}))
            if scope_orgs and self.check_presupposed:
                # "根据X医院的住院病历，X医院的院长是谁": nobody named, the question is about the
                # scope's organisation; its documents are the ones to presuppose from
                # (their opening chunks join the coverage below, as a named entity's do)
                heads.update(self._doc_heads([p for p in pool if p.doc_id not in heads]))
                in_scope = {p.doc_id for p in self._in_scope(pool, scope_orgs)}
                if in_scope:
                    groups = [(_SCOPE_GROUP, in_scope)]
        # 3. + 4. per entity and sub-question: one passage with the head, the predicate and a value
        # of the asked type
        checks = []
        scanned: dict[str, tuple[list[Passage], bool]] = {}
        searched: dict[str, bool] = {}  # entity → all of its (prose) documents were read
        anchors = [e for e in analysis.entities if not e.scope and e.kind != "year"]
        for name, docs in groups:
            group = [p for p in pool if p.doc_id in docs]
            for sub in analysis.subquestions:
                best, _ = self._best(sub, group, weights, anchors)
                source = "evidence"
                if not best[1] and use_lookup and docs:
                    terms = sub.head + [t for t in sub.attribute if t not in sub.head]
                    found = self._search(terms, tenant, sorted(docs))
                    r, p = self._best(sub, found, weights, anchors)
                    if not r[1]:
                        key = "|".join(sorted(docs))
                        if key not in scanned:
                            scanned[key] = self._scan(sorted(docs), tenant, versions)
                        r, p = self._best(sub, scanned[key][0], weights, anchors)
                        # conclusive when every chunk was read and none is a table (whose rows
                        # the gate matches to the entity and its qualifiers only loosely)
                        searched[name] = scanned[key][1] and not any(
                            p.columns for p in scanned[key][0]
                        )
                    if r[1] and p is not None:
                        best, source = r, "lookup"
                        supplements.setdefault(p.key, p)
                ok, typed, h, a = best
                found_ok = ok
                if not ok and not analysis.entities and sub.answer_type in self.entityless_types:
                    ok = typed = True  # nothing to be missing from: no entity, no attribute slot
                check: dict[str, Any] = {
                    "entity": name,
                    "sub": sub.text,
                    "head_coverage": round(h, 3),
                    "attribute_coverage": round(a, 3),
                    "typed": typed,
                    "ok": ok,
                    "found": found_ok,
                    "source": source,
                }
                unseen: list[str] = []
                # (a question about the scope's organisation has its documents: _SCOPE_GROUP)
                if ok and self.check_presupposed and use_lookup and docs and name:
                    share = 0.0 if sub.answer_type in self.lay_types else self.presupposed_max_share
                    rare = self._rare(_presupposed(sub), share)
                    unseen = list(dict.fromkeys(rare + _compound_members(sub)))
                    compound = _compound_noun(sub) if self.check_compounds else ""
                    if compound and self._rare_phrase(compound, share, tenant):
                        unseen.append(compound)
                if unseen:
                    # "通过破产重整减少了多少负债": a word the question presupposes that no chunk of
                    # the knowledge base holds (or hardly any: "数据泄露" in another company's
                    # report), and no passage of the entity's (prose) documents mentions even
                    # loosely (its chars in order within one list item or clause), is not there
                    # to answer from
                    key = "|".join(sorted(docs))
                    if key not in scanned:
                        scanned[key] = self._scan(sorted(docs), tenant, versions)
                    doc_passages, complete = scanned[key]
                    absent = [
                        t
                        for t in unseen
                        if not any(
                            (
                                _window_pattern(t, clause=True).search(p.text) is not None
                                if t == compound  # its chars in order, not some of its bigrams
                                else p.match(
                                    t, self.window_credit, clause=True, tight=_is_noun(sub, t)
                                )
                            )
                            for p in group + doc_passages
                        )
                    ]
                    if absent and complete and not any(p.columns for p in doc_passages):
                        check.update(ok=False, typed=False, absent_terms=absent)
                checks.append(check)
        details["checks"] = checks
        names = list(dict.fromkeys(c["entity"] for c in checks))

        def enough(name: str, key: str) -> bool:
            mine = [c for c in checks if c["entity"] == name]
            own = [c[key] for c in mine]
            if analysis.entities or len(own) < 2:
                return all(own)
            # "独生子女可以继承全部遗产吗？/第一顺位继承人有哪些？": a question that names no entity
            # and asks several things (often the same thing twice, in other words) is answered
            # when a share of them is, one at least by a passage (not by entityless_types alone)
            need = math.ceil(self.general_subquestion_quorum * len(own) - 1e-9)
            return sum(own) >= need and any(c[key] and c["found"] for c in mine)

        present = [n for n in names if enough(n, "ok")]
        valued = [n for n in present if enough(n, "typed")]
        quorum = self.compare_quorum if analysis.comparative else self.entity_quorum
        need = max(1, math.ceil(quorum * len(names) - 1e-9))
        if len(present) < need:
            return GateDecision(True, "attribute_missing", details)
        if not analysis.comparative and all(
            s.answer_type in ("date", "number") for s in analysis.subquestions
        ):
            # "A和B的入院日期分别是什么时候": a date or a number is asked of each of them; an entity
            # counts as lacking it only when all of its documents were read, and are prose
            lacking = [n for n in names if n not in present and searched.get(str(n), False)]
            need_all = math.ceil(self.valued_entity_quorum * len(names) - 1e-9)
            if len(names) - len(lacking) < need_all:
                return GateDecision(True, "attribute_missing", details)
        # an entity whose documents name the attribute but give no value of the asked type is the
        # classic near miss ("提高了员工满意度" for "员工满意度是多少")
        need_typed = max(need, math.ceil(self.typed_quorum * len(present) - 1e-9))
        if self.check_answer_type and len(valued) < need_typed:
            return GateDecision(True, "answer_type_missing", details)
        # 5. overall coverage of the question by the best document (its evidence passages and its
        # opening chunk read together)
        plain = {t: weights.get(t, 1.0) for t in q_terms}
        q_weights = plain
        subs = analysis.subquestions
        lay = (
            self.lay_coverage_by_pos
            and not analysis.entities
            and bool(subs)
            and all(s.answer_type in self.lay_types for s in subs)
        )
        if lay:
            # "宠物被人打伤，主人能否要求精神损害赔偿": the lay verbs and the scene count less than
            # the nouns of what is asked (a rare lay verb weighs as much as a legal term by IDF)
            pos = {t: max(s.pos.get(t, 0.0) for s in subs) for t in q_terms}
            q_weights = {t: w * (pos[t] or 1.0) for t, w in plain.items()}
        pool = passages + list(supplements.values())
        by_doc: dict[str, list[str]] = {}
        for p in pool:
            by_doc.setdefault(p.doc_id, [heads[p.doc_id].text] if p.doc_id in heads else [])
            by_doc[p.doc_id].append(p.text)
        joined = [Passage(None, "\n".join(texts), d, -1) for d, texts in by_doc.items()]
        best_q = max(_coverage(p, q_terms, q_weights) for p in joined) if q_terms else 1.0
        asked = analysis.head_terms
        if lay and asked:
            # ... and a document that holds every word of the asked head keeps its plain coverage
            # ("墙砖脱落，把我砸伤了，可以要求赔偿吗": 脱落 and 赔偿 are the statute's words too)
            best_q = max(
                [best_q]
                + [
                    _coverage(p, q_terms, plain)
                    for p in joined
                    if all(p.match(t, self.window_credit) >= 1.0 for t in asked)
                ]
            )
        details["question_coverage"] = round(best_q, 3)
        if best_q < self.min_question_coverage:
            return GateDecision(True, "low_coverage", details)
        have = {p.key for p in passages}
        extra = [p.node for k, p in supplements.items() if p.node is not None and k not in have]
        if extra:
            details["supplemented"] = [n.node.node_id for n in extra]
            if self._ledger is not None:  # citations need the document's path
                sources = self._ledger.document_sources(n.node.metadata["doc_id"] for n in extra)
                for n in extra:
                    path, _ = sources.get(n.node.metadata["doc_id"], ("", tenant))
                    n.node.metadata["source"] = path
        return GateDecision(False, None, details, extra)

    def _typed(self, sub: SubQuestion, passage: Passage) -> bool:
        """A value of the asked type near the head term (anywhere in a table passage).

        With ``number_scope``/``date_scope`` "sentence"/"clause" the value must also lie in the head's sentence
        (or comma clause; a label line "出院记录：" takes in the next line); with ``value_kinds``
        it must be of the asked kind (:func:`_value_kind`: a percentage for "…率", an amount
        of money, a count in the asked measure word, a month or day for "…日期").
        """
        mask: re.Pattern[str] | None = None
        kind = _VALUE_KIND.get(sub.value) if sub.value in self.value_kinds else None
        if sub.value == "country" and kind is not None:
            # "去过哪些国家": whatever the answer type, the passage must name a country
            if not kind.search(passage.text_spaced):
                return False
            kind = None
        if sub.answer_type == "number":
            pattern, scope = _NUMBER_VALUE, self.number_scope
            if any(_TERM_HEAD.search(t) for t in sub.head):
                pattern = _TERM_VALUE  # "判刑时间谁更长": 无期徒刑 is a term too
        elif sub.answer_type == "date":
            # a time of day ("营业时间", "几点") is its own pattern: "9点至21点" is no date
            pattern = kind if sub.value == "hours" and kind is not None else _DATE_VALUE
            if sub.general and self.event_times and pattern is _DATE_VALUE:
                # "仓储合同什么时候成立": no entity, a rule is asked; its answer is an event
                pattern = _DATE_OR_EVENT
            scope = "window" if sub.document_date else self.date_scope
            if self.skip_case_numbers:
                mask = _CASE_NUMBER
        else:
            return self._members(sub, passage)
        text = passage.lines
        if mask is not None:
            text = mask.sub(lambda m: "#" * len(m.group(0)), text)  # same length: same offsets
        if sub.document_date and _SIGN_OFF.search(text):
            return True  # "判决日期" of a 判决书: the date it is signed
        # a quantity sits by the asked noun, not by a scene-setting word ("比较…资产重组…，哪家的
        # 效率提升更显著": 效率, not 公司); a date by its event, often a verb ("何时开始实施")
        floor = self.spot_min_weight if sub.answer_type == "number" else 0.0
        asked = [t for t in sub.head if len(t) > 1 and sub.pos.get(t, 1.0) >= floor]
        terms = asked or [t for t in sub.head if len(t) > 1]
        spots = [(m.start(), m.end()) for t in terms for m in re.finditer(re.escape(t), text)]
        if not spots or self.type_window <= 0 or "|" in text:
            whole = passage.text_spaced
            return pattern.search(mask.sub("#", whole) if mask is not None else whole) is not None
        if self.fuzzy_spots:
            # the head's chars in order nearby count too ("判刑" ~ "判处有期徒刑五年"), after the
            # literal mentions (a literal "原判刑罚" need not be where the value is)
            spots += [
                (m.start(), m.end())
                for t in terms
                if 2 <= len(t) <= 4
                for m in _window_pattern(t).finditer(text)
                if (m.start(), m.end()) not in spots
            ]
        w = self.type_window
        for start, end in spots:
            lo, hi = max(0, start - w), start + w
            if scope != "window":
                a, b = _scope_bounds(text, start, end, scope)
                lo, hi = max(lo, a), min(max(hi, end), b)
            span = text[lo:hi]
            if not pattern.search(span) or (kind is not None and not kind.search(span)):
                continue
            if self.unknown_values:
                a, b = _scope_bounds(text, start, end, "sentence")
                if _UNKNOWN.search(text[a:b]):
                    continue  # "员工满意度从85%提高到了未知数值": the value asked is not given
            return True
        return False

    def _affects(self, sub: SubQuestion, passage: Passage) -> bool:
        """ "A对B有何影响": a sentence of the passage with B (or its chars in order within a
        clause) states an effect or a change (影响, 导致, 提高, 无法…); a record that names B only
        in passing ("工作压力适中"), or not at all, does not."""
        if not sub.effect_on:
            return True
        text = passage.lines
        spots = [
            (m.start(), m.end())
            for t in sub.effect_on
            for m in (
                re.finditer(re.escape(t), text)
                if t in text or not 2 <= len(t) <= 4
                else _window_pattern(t, clause=True).finditer(text)
            )
        ]
        for start, end in spots:
            a, b = _scope_bounds(text, start, end, "sentence")
            if _EFFECT_WORDS.search(text[a:b]):
                return True
        return False

    def _caused(self, sub: SubQuestion, passage: Passage) -> bool:
        """ "X为什么…", "X上诉的理由是什么": a sentence of the passage with a word of the head
        gives a reason (因, 由于, 鉴于, 导致…); the notice "如不服本判决…提出上诉" gives none."""
        if not sub.cause:
            return True
        text = passage.lines
        for t in sub.head:
            if len(t) < 2:
                continue
            for m in re.finditer(re.escape(t), text):
                a, b = _scope_bounds(text, m.start(), m.end(), "sentence")
                if _CAUSE_WORDS.search(text[a:b]):
                    return True
        return False

    def _in_scope(self, found: list[Passage], scope: Sequence[Entity]) -> list[Passage]:
        """The passages whose document names one of the question's scope entities (in the
        passage or the document's opening chunk); all of them when there is no scope."""
        if not scope or not found:
            return found
        heads = self._doc_heads(found)
        return [
            p
            for p in found
            if any(
                _mentions(p, s) or (p.doc_id in heads and _mentions(heads[p.doc_id], s))
                for s in scope
            )
        ]

    def _members(self, sub: SubQuestion, passage: Passage) -> bool:
        """ "销售哪些电子产品": a passage that names the class only as a modifier of another noun
        ("电子产品出口公司") names none of its members."""
        if not self.check_members or not sub.members_of:
            return True
        text, cls = passage.text, sub.members_of
        spots = [m.start() for m in re.finditer(re.escape(cls), text)]
        if not spots:
            return True  # paraphrased: not for this check to judge
        for start in spots:
            end = start + len(cls)
            if _MEMBER_BEFORE.search(text[max(0, start - 3) : start]):
                return True  # "手机、电脑等电子产品"
            if _MEMBER_AFTER.match(text, end):
                return True  # "电子产品包括…", "电子产品，"
        return False

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        question = query_bundle.query_str if query_bundle is not None else ""
        self._last = self.decide(question, nodes)
        if self._last.refused:
            return []
        floor = min((n.score or 0.0 for n in nodes), default=0.0)
        extra = [  # copies: the looked-up nodes are cached and shared between questions
            NodeWithScore(
                node=n.node.model_copy(update={"metadata": dict(n.node.metadata)}), score=floor
            )
            for n in self._last.supplements
        ]
        return list(nodes) + extra


__all__ = ["EvidenceGate", "GateDecision", "QuestionAnalysis", "analyze_question"]
