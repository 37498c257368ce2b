"""Evidence gate on the shared dev data: refuse the unanswerable, answer the answerable.

    .venv/bin/python benchmarks/gate.py              # defaults, baselines, sample KB
    .venv/bin/python benchmarks/gate.py --sweep      # + the threshold sweep on the calibration half
    .venv/bin/python benchmarks/gate.py --refresh    # recompute the cached top-5 evidence

``dragonball_zh`` (1,529 questions, 155 unanswerable near misses: "the entity exists, the asked
detail does not") is split deterministically by ``sha1(id) % 2`` into a *calibration* half (the
only one thresholds were tuned on) and a *check* half, reported separately. The bundled sample KB
(``data/knowledge`` + ``data/eval/sample_qa.jsonl``) is reported as a third set.

``retqa_tables_zh`` (783 answerable table look-ups) measures false refusals on tables. Its dev
file holds only ids with ``sha1(id) % 2 == 0`` (the other parity is the held-out part), so it is
split one bit further: ``sha1(id) % 4 == 0`` → calibration, ``== 2`` → check. It has no
unanswerable questions; *near-miss probes* stand in for them: each question whose asked column
matches one of ``PROBE_RULES`` is rewritten to ask for a column its table does not have
("…的容积率" on a price table → "…的物业费"), and is run on the original question's evidence
(the entity is there, the column is not): the gate should refuse it.

``dragonball_zh`` gets near-miss probes the same way (``DRAGON_PROBE_RULES``): an answerable
question's asked attribute is swapped for one that a plain substring check finds in none of its
gold documents ("费某和柳某某的职业" → "…的血型", "…的净利润" → "…的员工人数", "何时进行了资产重组" →
"…破产重整"), and run on the original question's evidence. The calibration half's probes are
reported per rule; the check half's only as totals.

*Record probes* (``RECORD_PROBE_FAMILIES``) are built anew rather than by a swap, so that they ask
other kinds of things than the templates above: for each person an answerable medical or law
question names, "根据{hospital/court}的{住院病历/判决书}，{person}{predicate}" with a predicate asking
a record field the records lack (主治医师, 用药剂量, 随访时间, 二审结果, 羁押地点…), a personal fact
(工作单位, 兴趣爱好, 婚姻状况…) or an effect or reason ("…的病情对其工作有何影响", "…上诉的理由是
什么"), in the dataset's phrasings; the asked word and its synonyms must be in none of the
person's gold documents. Reported per family on the calibration half, as totals on the check half.

*Finance probes* (``FINANCE_PROBE_FAMILIES``) do the same for the companies answerable finance
questions name (as they name them): a report figure (研发人员数量, 海外收入占比, 商誉减值…), an event
or party (员工持股计划, 股票回购, 审计机构, 环保处罚…), a reason or effect ("…的股票回购对其股价有何
影响"), two companies compared on a fact neither gives, and two compared on a fact one gives and the
other does not (净资产收益率, 员工满意度, 碳抵消项目…, the dataset's own unanswerable kind); the asked
word and its synonyms (paraphrases such as "投资500万元用于社区发展" for 社区投资额 included) must be
in none of the documents naming the company. Reported like the record probes.

The evidence is what the gate sees in ``KnowledgeBase.ask``: hybrid retrieval → LexicalReranker →
top 5 (cached in ``benchmarks/.cache/gate-*.pkl``); the gate then runs with the KB's ledger (its
look-ups in the entity's documents included). Baseline: the best single score threshold (top
dense cosine, or the reranker's query-term coverage of the top passage), chosen on the
calibration half as the threshold that refuses the most unanswerable questions while refusing at
most 5 % of the answerable ones. The gate's own thresholds come from ``--sweep`` under the same
rule, plus: on the sample KB every unanswerable question refused and no answerable one. Writes ``benchmarks/results/gate.json``.
Dev-split figures: part of each source is held out by the team for independent evaluation.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import pickle
import re
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (  # noqa: E402
    CACHE,
    ROOT,
    half,
    kb_for,
    load_questions,
    require_shared,
    write_result,
)

from rag_app import KnowledgeBase  # noqa: E402
from rag_app.eval.dataset import QAItem, load_qa  # noqa: E402
from rag_app.postprocess.gate import EvidenceGate  # noqa: E402

MAX_FALSE_REFUSAL = 0.05
SAMPLE_QA = ROOT / "data" / "eval" / "sample_qa.jsonl"
SAMPLE_KB = ROOT / "data" / "knowledge"

# The grid the defaults were chosen from (see ``sweep``): stage 1 the quorum rules and the two
# coverage thresholds, stage 2 the answer-type window, the fuzzy credit and the subject check,
# stage 3 the value checks.
SWEEP: dict[str, list[Any]] = {
    "entity_quorum": [0.5, 1.0],
    "compare_quorum": [0.5, 1.0],
    "min_head_coverage": [0.4, 0.5, 0.6],
    "min_attribute_coverage": [0.3, 0.4, 0.5],
}
SWEEP_STAGE2: dict[str, list[Any]] = {
    "typed_quorum": [0.5, 1.0],
    "type_window": [20, 30],
    "window_credit": [0.6, 0.75],
    "min_subject_coverage": [0.0, 0.3],
}
# stage 3: where the asked value must be (the head's sentence/clause), what kind of value, and
# when "A和B的X分别是多少" needs it for both
SWEEP_STAGE3: dict[str, list[Any]] = {
    "number_scope": ["window", "sentence"],
    "valued_entity_quorum": [0.5, 1.0],
    "unknown_values": [False, True],
    "skip_case_numbers": [False, True],
    "spot_min_weight": [0.0, 0.6],
    "value_kinds": [[], ["money"], ["money", "hours", "country"]],
}
# not swept (rules, each checked on the calibration half by switching it off; see the tests):
# scope_lookup, fuzzy_spots, value_cues, check_members, check_presupposed; entityless_types
# (questions naming no entity; chosen on laws_zh calibration questions, benchmarks/laws_refusals.py)
# presupposed_max_share (0.005) was read off the calibration half: the presupposed words of its
# answerable questions that their entity's documents lack are each in 7 or more of the 807 chunks
# (category labels the reports word otherwise: 绿色, 防止, 决议), the probes' 泄露, 罢工, 血糖 in 4
# or fewer


def retqa_half(item_id: str) -> str:
    """retqa's dev ids all have sha1 % 2 == 0: split on the next bit."""
    return (
        "calibration" if int(hashlib.sha1(item_id.encode()).hexdigest(), 16) % 4 == 0 else "check"
    )


# near-miss probes: the asked column swapped for one no retqa table has (first matching rule)
PROBE_RULES: list[tuple[str, str]] = [
    (r"容积率", "物业费"),
    (r"绿化覆盖率|绿化率", "物业费"),
    (r"建筑密度", "车位数量"),
    (r"平均房价|房屋成交均价|成交均价|房价|均价", "物业费"),
    (r"拍卖成交价格|成交价格|成交总价", "土地面积"),
    (r"成交了多少套(?:房子|房屋|房产)?", "有多少个停车位"),
    (r"房子数量|房屋成交量|成交量", "停车位数量"),
    (r"营业总成本|营业利润|营业总收入|利润|负债总计|负债合计|总负债|负债总额|资产总计", "员工人数"),
    (r"(?:是否|是不是)(都|均)?(?:属于|为)?(?:一家)?国有企业(?:类别|性质)?", r"是否\1是上市公司"),
    (r"债务违约", "注册资本"),
    (r"风险等级", "注册地址"),
    (r"哪一年成交", "哪一年开盘"),
]


def probes(items: list[QAItem]) -> list[tuple[QAItem, str]]:
    out = []
    for item in items:
        for pattern, repl in PROBE_RULES:
            if re.search(pattern, item.question):
                out.append((item, re.sub(pattern, repl, item.question, count=1)))
                break
    return out


# dragonball near-miss probes: an answerable question's asked attribute swapped for one that its
# entity's documents (the question's gold documents) do not mention. Each rule: a name, the asked
# attribute (regex), and the swaps (replacement, regex that must not occur in any of the
# documents). The first matching rule is used; among its swaps whose absence check passes, one is
# picked by sha1(id) (no dependence on the gate). The rewrite is dropped when a word of the
# original attribute is left elsewhere in the question ("…的员工人数，哪家公司的营业收入更高").
DRAGON_PROBE_RULES: list[tuple[str, str, list[tuple[str, str]]]] = [
    # law and medical records: a person's attributes and the case's people and dates
    (
        "occupation",
        r"(?<=的)职业|职业(?=分别|是)",
        [("血型", "血型"), ("宗教信仰", "宗教|信仰"), ("爱好", "爱好|兴趣")],
    ),
    (
        "crime",
        r"(?:分别)?(?:被判定)?犯了?(?:什么|何种|哪种)罪(?:名)?|罪名(?:分别)?是什么",
        [("分别毕业于哪所学校", "毕业|学校|学历|文化程度")],
    ),
    (
        "sentence_compare",
        r"(?:判刑时间|刑期)(谁|哪个|哪位)更长",
        [(r"身高\1更高", "身高"), (r"体重\1更重", "体重")],
    ),
    (
        "sentence",
        r"分别被判处了?(?:多长时间的有期徒刑|什么刑期|多少年的?有期徒刑|何种刑罚|什么刑罚)",
        [("的身高分别是多少", "身高"), ("的体重分别是多少", "体重")],
    ),
    ("sentence", r"判刑时间|刑期", [("身高", "身高"), ("体重", "体重")]),
    (
        "judgment_date",
        r"判决(?:日期|时间)|审判日期|案件审判时间",
        [("结婚日期", "结婚|婚姻"), ("毕业时间", "毕业"), ("入职时间", "入职")],
    ),
    (
        "case_date",
        r"(?:立案调查|逮捕|刑事拘留|采取留置措施?|留置)(?:的)?(?:日期|时间)",
        [("结婚日期", "结婚|婚姻"), ("毕业时间", "毕业")],
    ),
    (
        "court_person",
        r"分别由哪位审判长主持了(.+?)的案件",
        [(r"\1的案件分别由哪位人民陪审员参与审理", "陪审")],
    ),
    (
        "court_person",
        r"案件的?(?:审判长|审判员|书记员|辩护人)",
        [("案件的人民陪审员", "陪审")],
    ),
    (
        "court_person",
        r"辩护人(分别是谁)?(?:及其所属律所)?|审判长|审判员|书记员|公诉人",
        [(r"配偶\1", "配偶|妻子|丈夫"), (r"担保人\1", "担保人"), (r"主治医生\1", "主治医")],
    ),
    (
        "vital_compare",
        r"(?:脉搏|呼吸|心率)(?:次数)?(谁|哪个|哪位)更快",
        [(r"体重\1更重", "体重"), (r"血糖\1更高", "血糖")],
    ),
    (
        "vital",
        r"体温|脉搏(?:次数)?|呼吸(?:次数)?|血压|心率",
        [("血糖", "血糖"), ("体重", "体重"), ("身高", "身高")],
    ),
    ("age", r"年龄", [("身高", "身高"), ("体重", "体重")]),
    ("admission_date", r"入院(?:日期|时间)", [("手术时间", "手术"), ("出院时间", "出院")]),
    (
        "clinical",
        r"初步诊断(?:结果)?|诊断结果|诊断依据|主诉|主要症状|伴随症状|治疗方案|辅助检查结果|长期医嘱|"
        r"尿常规检查结果|婚姻状况|病史陈述者|重大疾病史",
        [
            ("过敏药物", "过敏"),
            ("手术名称", "手术"),
            ("家族遗传病", "遗传|家族史"),
            ("血型", "血型"),
        ],
    ),
    # company reports: figures and events
    (
        "figure",
        r"净利润|营业收入|总资产|股东权益|总负债|现金流量|负债比率|资产负债率|净资产收益率|营业利润",
        [
            ("员工人数", "员工人数|员工总数|名员工"),
            ("研发投入", "研发"),
            ("注册资本", "注册资本"),
            ("市场份额", "市场份额"),
        ],
    ),
    (
        "esg_figure",
        r"二氧化碳排放量|排放量|员工满意度|社区投资额",
        [("用水量", "用水|水资源"), ("员工流失率", "流失|离职"), ("专利数量", "专利")],
    ),
    (
        "event",
        r"股东大会(?:决议)?|董事会变更|高级管理层变动|资产重组|债务重组|重大资产收购|重大股权收购|"
        r"大规模融资(?:活动)?|分发股利|股利|慈善活动|绿色产品(?:开发)?|防止污染设施|碳抵消项目|"
        r"环境管理系统|合规与监管更新|风险管理举措|公司治理政策|道德与诚信事件|可持续性与社会责任倡议|"
        r"员工职业成长和人才发展计划|公共服务项目|节能减排项目?|重大投资",
        [
            ("破产重整", "破产|重整"),
            ("首次公开募股", "首次公开募股|IPO|上市"),
            ("产品召回", "召回"),
            ("数据泄露事件", "泄露"),
            ("罢工事件", "罢工"),
        ],
    ),
    ("industry", r"哪个行业|所属行业|什么行业", [("总部位于哪个城市", "总部")]),
]


def document_texts(kb: KnowledgeBase) -> dict[str, str]:
    """File name → the document's text (its active chunks joined), from the KB's ledger."""
    return {
        Path(d.source).name: "\n".join(c.text for c in kb.ledger.active_chunks(d.doc_id))
        for d in kb.ledger.list_documents()
    }


def dragon_probes(items: list[QAItem], texts: dict[str, str]) -> list[tuple[QAItem, str, str]]:
    """(answerable item, probe question, rule name) per item a rule applies to."""
    out = []
    for item in items:
        docs = [texts.get(Path(d).name, "") for d in item.gold_docs]
        if not item.answerable or not docs or not all(docs):
            continue
        for name, pattern, swaps in DRAGON_PROBE_RULES:
            if not re.search(pattern, item.question):
                continue
            absent = [r for r, word in swaps if not any(re.search(word, t) for t in docs)]
            if absent:
                repl = absent[int(hashlib.sha1(item.id.encode()).hexdigest(), 16) % len(absent)]
                probe = re.sub(pattern, repl, item.question)
                asked = "".join(m.group(0) for m in re.finditer(pattern, item.question))
                rest = re.sub(pattern, " ", re.sub(r"^根据[^，,]*[，,]", "", item.question))
                if not any(asked[i : i + 2] in rest for i in range(len(asked) - 1)):
                    out.append((item, probe, name))
            break
    return out


# record near-miss probes, built anew from the entities of answerable questions: "根据{scope}的
# {doctype}，{person}{predicate}" for a person an answerable medical or law question names, with
# predicates asking what these records do not hold (unlike DRAGON_PROBE_RULES, which swap the
# attribute inside the original wording). The calibration half's unanswerable questions ask a
# person's private life (宠物, 最喜欢的…, 银行账户余额), family, the record's other people, and
# effects and reasons ("婚姻状况对她的病情有何影响", "住院后为什么没有去上班"); these families ask
# record fields the records lack, personal facts and effects, in the dataset's phrasings ("X的Y是
# 什么/是多少/是谁/在哪里", "X有几个Y", "X是否…", "X为什么…", "X的Y对Z有何影响", "X的Y如何").
# Each family: the document kind, and (predicate with {p} for the person, regex that must occur
# in none of the person's gold documents: the asked word and its obvious synonyms). Per source
# question, person and family one predicate whose absence check passes is picked by sha1;
# duplicates within a half are dropped. Run on the source question's evidence.
RECORD_PROBE_FAMILIES: dict[str, tuple[str, list[tuple[str, str]]]] = {
    # fields of a hospital record that these records do not have
    "med_record_field": (
        "住院病历",
        [
            ("{p}的主治医师是谁", "主治|医生|大夫"),
            ("{p}每次服药的剂量是多少", r"剂量|mg|毫克|ml|毫升|\d\s*g|片|粒|支|袋"),
            ("{p}的住院费用总计多少元", "费用|元|花费|自费|医疗费"),
            ("{p}的医保类型是什么", "医保|保险|医疗保障|自费"),
            ("{p}的病床号是多少", "床"),
            ("{p}接受了哪种麻醉", "麻醉"),
            ("{p}出院后的随访时间是什么时候", "随访|复查|复诊|门诊"),
            ("{p}转院的原因是什么", "转院|转入|转至|转诊|转科"),
            ("{p}为什么被转入重症监护室", "重症|ICU|监护室"),
            ("{p}的护理等级是几级", "护理"),
            ("{p}的心电图检查结果如何", "心电图|ECG|心电"),
            ("{p}的核酸检测结果是什么", "核酸"),
            ("{p}的出院带药有哪些", "带药|出院"),
            ("{p}的预后如何", "预后"),
        ],
    ),
    # a patient's personal facts a hospital record does not give
    "med_personal": (
        "住院病历",
        [
            ("{p}的工作单位是哪里", "单位|公司|学校|就职|任职|工作于|供职|受雇"),
            ("{p}的联系电话是多少", "电话|手机|号码|联系方式"),
            ("{p}的文化程度是什么", "文化程度|学历|毕业|大学|中学|小学"),
            ("{p}每月的收入有多少", "收入|工资|薪|月入"),
            ("{p}平时有哪些兴趣爱好", "爱好|兴趣|喜欢|喜爱"),
            ("{p}家里养了什么宠物", "宠物|猫|狗|犬|鸟"),
            ("{p}的身份证号码是多少", "身份证|证件"),
            ("{p}住院期间由谁陪护", "陪护|陪同|陪伴|护工|家属"),
            ("{p}的紧急联系人是谁", "联系人|联系"),
            ("{p}每周锻炼几次", "锻炼|运动|健身"),
            ("{p}的配偶从事什么工作", "配偶[^。]{0,15}(?:职业|工作|从事|任职)|丈夫|妻子"),
            ("{p}的微信号是什么", "微信"),
            ("{p}有没有购买商业保险", "保险"),
        ],
    ),
    # effects, reasons and events around the illness that the record does not tell
    "med_effect": (
        "住院病历",
        [
            (
                "{p}的病情对其工作有何影响",
                "影响[^。]{0,6}工作|工作[^。]{0,10}影响|无法工作|不能工作|停工|病假",
            ),
            ("{p}住院期间为什么没有按时服药", "未按时|漏服|没有按时|拒绝服药|依从"),
            ("{p}的疾病是否会遗传给下一代", "遗传"),
            ("{p}出院后多久可以恢复工作", "恢复工作|复工|返岗|上班|休假"),
            ("{p}的症状是由哪种食物引起的", "进食|食用|吃|饮食后|食物后|餐后|饭后"),
            ("{p}的病情是否影响了其家人的生活", "家人|家属|家庭(?!史)"),
            ("{p}在发病前是否去外地旅游过", "旅游|旅行|外地|出差"),
            ("{p}对医院的服务是否满意", "满意"),
            ("{p}住院期间的情绪为什么低落", "情绪|心情|低落|抑郁|焦虑"),
        ],
    ),
    # what a judgment does not record about its case
    "law_case": (
        "判决书",
        [
            ("{p}案件的二审结果是什么", "二审|终审|维持原判|改判|驳回上诉"),
            ("{p}赔偿了被害人多少钱", "赔偿|赔付|补偿|退赔|退还|返还"),
            ("{p}支付了多少律师费", "律师费|代理费"),
            ("{p}被羁押在哪个看守所", "羁押|看守所|关押"),
            ("{p}作案时使用了什么工具", "工具|凶器|刀|棍|棒|枪|锤|器械|车"),
            ("{p}案中被害人的年龄是多少", "岁|(?:被害|受害)人[^。]{0,20}出生|年龄"),
            ("{p}作案当天的天气如何", "天气|下雨|雨天|晴天|大雪|大风|阴天|暴雨"),
            ("{p}是否获得了减刑", "减刑|假释"),
            ("{p}是否被取保候审", "取保候审|保释|监视居住"),
            ("{p}案件的审理期限是多长时间", "审理期限|审限|期限"),
            ("{p}在服刑期间表现如何", "服刑期间|改造|表现"),
            ("{p}上诉的理由是什么", "上诉理由|上诉称|上诉人"),
            ("{p}的罚金是否已经缴清", "缴清|缴纳|已缴|交纳"),
        ],
    ),
    # a defendant's personal facts a judgment does not give
    "law_personal": (
        "判决书",
        [
            ("{p}的婚姻状况如何", "婚|配偶|妻|丈夫|离异|单身"),
            ("{p}有几个子女", "子女|儿子|女儿|孩子|育有"),
            ("{p}每月的收入是多少", "收入|工资|薪|月入"),
            ("{p}的联系电话是多少", "电话|手机|号码|联系方式"),
            ("{p}的身份证号码是多少", "身份证|身份号码|证件"),
            ("{p}的籍贯是哪里", "籍贯|户籍|祖籍|出生地|生于|人氏"),
            ("{p}平时有什么兴趣爱好", "爱好|兴趣|喜欢|喜爱"),
            ("{p}的身体健康状况如何", "健康|身体状况|疾病|患有|病史"),
            ("{p}的政治面貌是什么", "政治面貌|党员|群众|团员"),
            ("{p}的文化程度是什么", "文化程度|学历|毕业|大学|中学|小学|文盲"),
            ("{p}的父亲从事什么职业", "父亲|父母"),
            ("{p}驾驶的车辆是什么品牌", "品牌|牌子|型号"),
            ("{p}的电子邮箱是什么", "邮箱|邮件|email"),
        ],
    ),
}
_RECORD_SCOPE = re.compile(r"^根据(?P<orgs>[^，,]+?)的(?P<kind>住院病历|判决书)[，,]")


def unique_per_half(rows: list[tuple[QAItem, str, str]]) -> list[tuple[QAItem, str, str]]:
    """The probe rows in order, each (half, probe question) once: a probe built from two source
    questions of a half counts once."""
    seen: set[tuple[str, str]] = set()
    out = []
    for item, probe, kind in rows:
        if (half(item.id), probe) not in seen:
            seen.add((half(item.id), probe))
            out.append((item, probe, kind))
    return out


def record_people(
    items: list[QAItem], texts: dict[str, str]
) -> Iterator[tuple[QAItem, str, str, str, list[str]]]:
    """(answerable source item, document kind, person, scope organisation, the person's gold
    documents) per person an answerable "根据X的住院病历/判决书，…" question names, found in one of
    its gold documents together with one of its scope's organisations."""
    for item in items:
        m = _RECORD_SCOPE.match(item.question)
        if not item.answerable or m is None:
            continue
        orgs = [o for o in re.split(r"和|与|、", m.group("orgs")) if o]
        docs = [texts.get(Path(d).name, "") for d in item.gold_docs]
        body = item.question[m.end() :]
        for person in dict.fromkeys(re.findall(r"([\u4e00-\u9fff]某某?)", body)):
            if person[0] in "被告人害患者":
                continue
            own = [t for t in docs if person in t]
            org = next((o for o in orgs for t in own if o in t), None)
            if own and org is not None:
                yield item, m.group("kind"), person, org, own


def record_probes(items: list[QAItem], texts: dict[str, str]) -> list[tuple[QAItem, str, str]]:
    """(answerable source item, probe question, family) per person of ``record_people`` and
    family whose document kind the question is scoped to; per half without duplicates."""
    out: list[tuple[QAItem, str, str]] = []
    for item, scoped_kind, person, org, own in record_people(items, texts):
        for family, (kind, predicates) in RECORD_PROBE_FAMILIES.items():
            if kind != scoped_kind:
                continue
            absent = [p for p, word in predicates if not any(re.search(word, t) for t in own)]
            if not absent:
                continue
            pick = int(hashlib.sha1(f"{item.id}|{person}|{family}".encode()).hexdigest(), 16)
            label = person
            if kind == "判决书" and pick % 3 == 0:
                label = "被告人" + person
            elif kind == "住院病历" and pick % 3 == 0:
                label = "患者" + person
            probe = f"根据{org}的{kind}，{absent[pick % len(absent)].format(p=label)}？"
            out.append((item, probe, family))
    return unique_per_half(out)


# *asked-anew* probes: the calibration half's unanswerable medical and law questions ("irrelevant"
# near misses) ask about somebody the record names but from another angle than RECORD_PROBE_FAMILIES
# took: what belongs to another person or thing the record mentions ("X的辩护人钱某的家庭住址",
# "X的父母的职业", "X的个体店铺的营业时间"), the scope's organisation or city itself ("荔枝市的市花",
# "看守所的地址"), a past activity ("三年前去过哪些国家", "完成了多少次马拉松") or the weather on a
# date of the record, and a cause in detail ("左小腿红肿是由什么动物咬伤引起的"). These families
# ask such things of the people of answerable questions, and are then *retrieved for themselves*
# (the evidence of a new question, not the source question's), so retrieval and the entity
# look-ups are exercised as for a real question. Placeholders: {p} person, {o} the scope's
# organisation, {city} its city, {d} the first date of the person's document, {s} the record's
# chief complaint, {j} the presiding judge. The regex must match none of the person's documents
# (for an owned thing: the owned word and the attribute on one line). One predicate in three (by
# sha1) is asked, to keep the set small.
ASKED_ANEW_FAMILIES: dict[str, dict[str, list[tuple[str, str]]]] = {
    "住院病历": {
        "owned": [
            ("{p}的父亲的职业是什么", "父亲[^。\n]{0,15}(职业|工作|从事)"),
            ("{p}的母亲今年多大年龄", "母亲[^。\n]{0,15}(岁|年龄)"),
            ("{p}的配偶在哪里工作", "(配偶|丈夫|妻子)[^。\n]{0,15}(工作|单位|职业)"),
            (
                "{p}的兄弟姐妹的职业是什么",
                "(兄弟|姐妹|哥哥|弟弟|姐姐|妹妹)[^。\n]{0,15}(职业|工作)",
            ),
            ("{p}的主治医生的从医年限是多少", "从医|执业|年资"),
            ("{p}的子女在哪里上学", "(子女|儿子|女儿|孩子)[^。\n]{0,15}(上学|学校|读书)"),
        ],
        "past": [
            ("{p}在过去一年中出国旅行了几次", "出国|国外|旅行|旅游"),
            ("{p}参加过哪些体育比赛", "比赛|竞赛|运动会"),
            ("{p}完成过几次全程马拉松", "马拉松"),
            ("{p}在入院前一周去过哪些城市", "去过|前往|出差|旅游|旅行"),
            ("{p}小时候在哪所学校读书", "学校|小学|读书"),
            ("{p}上一次体检是在什么时候", "体检"),
        ],
        "cause": [
            ("{p}的{s}是被什么动物咬伤引起的", "咬|动物|狗|猫|蛇|虫"),
            ("{p}的{s}是在哪家餐馆吃饭后引起的", "餐馆|饭店|餐厅|外出就餐|聚餐"),
            ("{p}的{s}是因为参加什么运动引起的", "运动|锻炼|比赛|跑步|打球"),
            ("{p}为什么在{d}之后没有去上班", "上班|工作"),
        ],
        "private": [
            ("{p}最喜欢的运动是什么", "喜欢|爱好|喜爱"),
            ("{p}家里养了几只狗", "狗|犬|宠物"),
            ("{p}的汽车是什么颜色的", "汽车|车辆|驾驶|车"),
            ("{p}的月工资是多少", "工资|收入|薪"),
            ("{p}在{d}的天气情况如何", "天气|下雨|晴|阴"),
            ("{p}在{d}的晚餐吃了什么", "晚餐|晚饭|进食|食用"),
        ],
        "scope": [
            ("{o}有多少张床位", "床位"),
            ("{o}的院长是谁", "院长"),
            ("{o}是哪一年建院的", "建院|成立|始建|创建"),
            ("{city}的市花是什么", "市花"),
            ("{city}的常住人口是多少", "人口"),
        ],
    },
    "判决书": {
        "owned": [
            ("{p}的辩护人的执业年限是多少", "执业年限|执业[^。\n]{0,4}年"),
            ("{p}的辩护人的家庭住址是什么", "辩护人[^。\n]{0,30}(住|住址|住所)"),
            ("审判长{j}的年龄是多少", "审判长[^。\n]{0,10}(岁|年龄|出生)"),
            ("{p}的父母的职业是什么", "(父|母)[^。\n]{0,15}(职业|工作|从事)"),
            ("{p}的公司有多少名员工", "员工|职工|雇员|工人"),
            ("{p}的店铺的营业时间是什么", "营业时间|营业"),
        ],
        "past": [
            ("{p}在{d}之前的工作经历是什么", "工作经历|曾任|曾在|就职"),
            ("{p}高中毕业于哪所学校", "毕业|学校|中学"),
            ("{p}服过几年兵役", "兵役|服役|退伍|入伍"),
            ("{p}在案发前去过哪些国家", "国家|出国|境外|国外"),
        ],
        "cause": [
            ("{p}作案的起因是因为什么纠纷", "纠纷|起因|矛盾|因[^。\n]{0,10}(争执|争吵)"),
            ("{p}为什么在{d}之后离开了{city}", "离开"),
            ("{p}是通过什么途径认识被害人的", "认识|结识|相识"),
        ],
        "private": [
            ("{p}最喜欢的运动是什么", "喜欢|爱好|喜爱"),
            ("{p}家里养了什么宠物", "宠物|狗|猫"),
            ("{p}的汽车是什么颜色的", "颜色|色"),
            ("{p}在{d}的天气情况如何", "天气|下雨|晴|阴"),
            ("{p}在{d}晚上吃了什么", "晚餐|晚饭|吃"),
        ],
        "scope": [
            ("{o}的院长是谁", "院长"),
            ("{o}有多少名法官", "法官人数|名法官"),
            ("{city}的市花是什么", "市花"),
            ("{city}的常住人口是多少", "人口"),
            ("{o}的办公地址在哪里", "地址|位于"),
        ],
    },
}


def _first(pattern: str, text: str) -> str | None:
    m = re.search(pattern, text)
    return m.group(1) if m else None


def asked_anew_probes(items: list[QAItem], texts: dict[str, str]) -> list[tuple[QAItem, str, str]]:
    """(answerable source item, probe question, "kind/family") per person of ``record_people``
    and predicate picked; per half without duplicates (see ASKED_ANEW_FAMILIES)."""
    out: list[tuple[QAItem, str, str]] = []
    for item, kind, person, org, own in record_people(items, texts):
        values = {
            "p": person,
            "o": org,
            "city": _first(r"^([\u4e00-\u9fff]{2}市)", org),
            "d": _first(r"(\d{4}年\d{1,2}月\d{1,2}日)", own[0])
            or _first(r"(\d{1,2}月\d{1,2}日)", own[0]),
            "s": _first(
                r"主诉[:：]?\s*\n?\s*([\u4e00-\u9fff]{2,6}?)(?:伴|[0-9０-９一二三四五六七八九十半]+)",
                own[0],
            ),
            "j": _first(r"审判长[:：\s]*([\u4e00-\u9fff]某某?)", own[0]),
        }
        for family, predicates in ASKED_ANEW_FAMILIES[kind].items():
            for k, (text, absent) in enumerate(predicates):
                if any(values[n] is None for n in re.findall(r"\{(\w+)\}", text)):
                    continue
                if any(re.search(absent, t) for t in own):
                    continue
                key = f"{item.id}|{person}|{family}|{k}"
                if int(hashlib.sha1(key.encode()).hexdigest(), 16) % 3:
                    continue
                probe = f"根据{org}的{kind}，" + text.format(**values) + "？"
                out.append((item, probe, f"{kind}/{family}"))
    return unique_per_half(out)


# *Answerable* asked-anew probes: the same people asked what belongs to somebody else of their
# record where the record does say it (the regex finds it in one of the person's documents): the
# family line ("配偶健康状况良好", "父亲有高血压病史"), the defence counsel's line ("辩护人：钱某，
# X律师事务所律师"). The gate should answer them: a false-refusal check for the rules the
# unanswerable probes brought (an owned thing and its attribute on one line).
OWNED_ANSWERABLE: list[tuple[str, str, str]] = [
    ("住院病历", r"配偶健康状况[：:]?\s*(?:良好|健康|已故)", "{p}的配偶的健康状况如何"),
    ("住院病历", r"父亲有[\u4e00-\u9fff]{2,6}病史", "{p}的父亲患有什么疾病"),
    ("住院病历", r"母亲(?:健康|已故|体健)", "{p}的母亲的健康状况如何"),
    ("住院病历", r"育有[\u4e00-\u9fff\d]{1,6}", "{p}的子女情况如何"),
    ("住院病历", r"病史陈述者[：:]\s*(?:患者)?(?:母亲|父亲)", "{p}的病史是由谁陈述的"),
    (
        "判决书",
        r"辩护人[：:]\s*[\u4e00-\u9fff]某某?[，,]\s*[\u4e00-\u9fff]+律师事务所",
        "{p}的辩护人是哪家律师事务所的律师",
    ),
    (
        "判决书",
        r"辩护人[：:]\s*[\u4e00-\u9fff]某某?[，,]\s*[\u4e00-\u9fff]+律师事务所",
        "{p}的辩护人在哪个律师事务所执业",
    ),
    ("判决书", r"辩护人[\u4e00-\u9fff]某某?(?:律师)?提出", "{p}的辩护人提出了什么辩护意见"),
]


def owned_answerable_probes(
    items: list[QAItem], texts: dict[str, str]
) -> list[tuple[QAItem, str, str]]:
    """(answerable source item, probe question, kind) per person of ``record_people`` and
    OWNED_ANSWERABLE predicate whose regex one of the person's documents matches; per half
    without duplicates."""
    out: list[tuple[QAItem, str, str]] = []
    for item, kind, person, org, own in record_people(items, texts):
        for k, present, text in OWNED_ANSWERABLE:
            if k == kind and any(re.search(present, t) for t in own):
                out.append((item, f"根据{org}的{kind}，" + text.format(p=person) + "？", kind))
    return unique_per_half(out)


# finance near-miss probes, built anew from the companies of answerable finance questions (whose
# gold documents are company reports: figures, events with dates, ESG measures). The calibration
# half's unanswerable finance questions compare two companies on a figure or event one of them
# does not report ("比较A和B的员工满意度，哪家公司的员工满意度更高", "A和B分别在什么时间参与了
# 慈善活动"); these families ask, in the dataset's phrasings (是多少/何时/哪些/是否/是谁/为什么/
# 对…有何影响/哪家公司…更…), a report figure, an event or a reason no report of the company
# gives, and comparisons where one of the two companies lacks the fact. Each predicate: (text
# with {c} for the company as the question names it, regex that must occur in none of the
# documents naming the company: the asked word and its obvious synonyms). "fin_compare_one"
# takes (attribute, regex) pairs: the regex must match a document of the first company and none
# of the second's ("A has it, B does not"). Per source question, company (pair) and family one
# predicate is picked by sha1; duplicates within a half are dropped.
FINANCE_PROBE_FAMILIES: dict[str, list[tuple[str, str]]] = {
    # report figures these reports do not give
    "fin_figure": [
        ("{c}的研发人员数量是多少", "研发人员|研发团队|技术人员|科研人员"),
        ("{c}的海外收入占营业收入的比例是多少", "海外|境外|国外|国际"),
        ("{c}计提的商誉减值金额是多少", "商誉|减值"),
        ("{c}的独立董事薪酬是多少", "独立董事|薪酬"),
        ("{c}的分红比例是多少", "分红|股利|派息"),
        ("{c}拥有多少项专利", "专利"),
        ("{c}共有多少家门店", "门店|店铺|分店|网点|门市"),
        ("{c}的毛利率是多少", "毛利"),
        ("{c}的每股收益是多少", "每股收益|每股盈利|EPS"),
        ("{c}的应收账款余额是多少", "应收"),
        ("{c}的存货周转率是多少", "存货|周转"),
        ("{c}控股股东质押了多少股份", "质押|控股股东"),
        ("{c}的碳排放量是多少", "碳排放|二氧化碳|排放量"),
        (
            "{c}的研发投入占营业收入的比例是多少",
            "研发投入|研发费用|研发支出|研发经费|投[^。]{0,8}研发|研发[^。]{0,8}投",
        ),
    ],
    # events and parties these reports do not record
    "fin_event": [
        ("{c}何时实施了员工持股计划", "持股计划|股权激励|员工持股"),
        ("{c}在哪一年进行了股票回购", "回购"),
        ("{c}的审计机构是哪家会计师事务所", "审计|会计师事务所"),
        ("{c}的前五大客户有哪些", "客户"),
        ("{c}涉及哪些诉讼案件", "诉讼|起诉|仲裁|官司|纠纷"),
        ("{c}何时受到了环保处罚", "处罚|罚款|罚单"),
        ("{c}是否发生过安全生产事故", "事故"),
        ("{c}的董事长是谁", "董事长"),
        ("{c}的首席财务官是谁", "财务官|CFO|财务总监"),
        ("{c}是否发行过可转换债券", "可转债|可转换"),
        ("{c}是否获得了政府补助", "补助|补贴"),
        ("{c}何时变更了会计政策", "会计政策"),
        ("{c}的主要竞争对手有哪些", "竞争对手|对手|竞品"),
    ],
    # reasons and effects these reports do not tell
    "fin_effect": [
        ("{c}为什么更换了审计机构", "审计|会计师事务所"),
        ("{c}的股票回购对其股价有何影响", "回购|股价"),
        ("{c}的商誉减值对净利润有何影响", "商誉"),
        ("{c}为什么实施员工持股计划", "持股计划|股权激励|员工持股"),
        ("{c}的诉讼案件对公司经营有何影响", "诉讼|纠纷|仲裁"),
        ("{c}受到的环保处罚对其声誉有何影响", "处罚|罚款"),
        ("{c}为什么关闭了部分门店", "门店|关闭|关店"),
        ("汇率波动对{c}的海外业务有何影响", "汇率|海外|境外"),
        ("{c}的股权质押对公司控制权有何影响", "质押"),
    ],
    # two companies, a fact neither report gives
    "fin_compare_both": [
        ("比较{c}和{d}的研发人员数量，哪家公司的研发人员更多", "研发人员|研发团队|技术人员"),
        ("{c}和{d}分别拥有多少项专利", "专利"),
        ("比较{c}和{d}的毛利率，哪家公司的毛利率更高", "毛利"),
        ("{c}和{d}分别在何时进行了股票回购", "回购"),
        ("{c}和{d}的审计机构分别是哪家会计师事务所", "审计|会计师事务所"),
        ("比较{c}和{d}的海外收入占比，哪家公司的海外收入占比更高", "海外|境外|国外"),
        ("{c}和{d}的董事长分别是谁", "董事长"),
        ("比较{c}和{d}的门店数量，哪家公司的门店更多", "门店|店铺|分店|网点"),
    ],
    # two companies, a fact the first company's report gives and the second's does not
    "fin_compare_one": [
        ("净资产收益率", "净资产收益率|ROE"),
        ("员工满意度", "满意度"),
        ("社区投资额", "社区[^。]{0,12}投资|投[^。]{0,12}社区"),
        ("二氧化碳排放量", "二氧化碳|碳排放|排放量"),
        ("能源消耗", "能源消耗|能耗|耗能|用电|耗电|能源使用"),
        ("负债比率", "负债比率|负债率|负债[^。]{0,8}(?:比例|占)"),
        ("营业利润", "营业利润"),
        ("研发投入", "研发投入|研发费用|研发支出|投[^。]{0,8}研发|研发[^。]{0,8}投"),
        ("员工人数", r"员工人数|员工总数|员工数量|\d+\s*名员工"),
        ("市场份额", "市场份额|市场占有率|市占率"),
        ("慈善活动", "慈善|捐赠|捐款|公益"),
        ("碳抵消项目", "碳抵消|碳中和|碳汇"),
        ("重大资产收购", "资产收购|收购"),
        ("债务重组", "债务重组"),
        ("大规模融资", "融资|募集|募资"),
        ("股利发放", "股利|分红|派息"),
    ],
}
# how "fin_compare_one" asks: figures compared, events dated or listed
_FIN_COMPARE_FIGURE = [
    "比较{c}和{d}的{a}，哪家公司的{a}更高",
    "{c}和{d}的{a}分别是多少",
]
_FIN_COMPARE_EVENT = [
    "比较{c}和{d}的{a}时间，哪家公司的{a}时间更早",
    "{c}和{d}分别在何时进行了{a}",
    "{c}和{d}分别有哪些{a}",
]
_FIN_EVENTS = {"慈善活动", "碳抵消项目", "重大资产收购", "债务重组", "大规模融资", "股利发放"}
_COMPANY_SUFFIX = r"(?:股份有限公司|集团有限公司|有限公司|集团|公司)"


def finance_companies(texts: dict[str, str]) -> dict[str, str]:
    """Company stem ("盛达能源") → the first company report naming it, from the reports' opening
    sentences ("盛达能源是一家…", "北京市建业集团有限公司成立于…")."""
    out: dict[str, str] = {}
    for name, text in sorted(texts.items()):
        m = re.match(r"([\u4e00-\u9fffA-Za-z]{2,20}?)(?:是一家|是|成立于|于\d|在\d)", text)
        if m is None or "法院" in m.group(1) or "医院" in m.group(1):
            continue
        stem = re.sub(_COMPANY_SUFFIX + "$", "", re.sub(r"^[\u4e00-\u9fff]{2}市", "", m.group(1)))
        if len(stem) >= 2 and "公司" in text[:300]:
            out.setdefault(stem, name)
    return out


def finance_probes(items: list[QAItem], texts: dict[str, str]) -> list[tuple[QAItem, str, str]]:
    """(answerable source item, probe question, family) per source finance question, company it
    names (as it names it) and family, or per ordered pair of the companies it names for the
    comparison families; per half without duplicates. The absence check runs over every
    document that names the company, not only the question's gold documents."""
    stems = finance_companies(texts)
    docs_of = {s: [t for t in texts.values() if s in t] for s in stems}
    out: list[tuple[QAItem, str, str]] = []
    for item in items:
        if not item.answerable or "finance" not in (item.category or ""):
            continue
        named: list[tuple[str, str]] = []  # (stem, mention)
        for stem in sorted(stems, key=len, reverse=True):
            m = re.search(re.escape(stem) + _COMPANY_SUFFIX + "?", item.question)
            if m and not any(m.group(0) in n for _, n in named):
                named.append((stem, m.group(0)))
        named.sort(key=lambda sn: item.question.index(sn[1]))
        for stem, mention in named:
            own = docs_of[stem]
            for family in ("fin_figure", "fin_event", "fin_effect"):
                absent = [
                    p
                    for p, w in FINANCE_PROBE_FAMILIES[family]
                    if not any(re.search(w, t) for t in own)
                ]
                if not absent:
                    continue
                pick = int(hashlib.sha1(f"{item.id}|{stem}|{family}".encode()).hexdigest(), 16)
                year = re.search(r"(\d{4}年)" + re.escape(mention), item.question)
                label = (year.group(1) if year and pick % 2 else "") + mention
                out.append((item, absent[pick % len(absent)].format(c=label) + "？", family))
        for (s1, m1), (s2, m2) in itertools.permutations(named[:2], 2):
            d1, d2 = docs_of[s1], docs_of[s2]
            pick = int(hashlib.sha1(f"{item.id}|{s1}|{s2}".encode()).hexdigest(), 16)
            both = [
                p
                for p, w in FINANCE_PROBE_FAMILIES["fin_compare_both"]
                if not any(re.search(w, t) for t in d1 + d2)
            ]
            if both and s1 < s2:
                out.append(
                    (item, both[pick % len(both)].format(c=m1, d=m2) + "？", "fin_compare_both")
                )
            one = [
                a
                for a, w in FINANCE_PROBE_FAMILIES["fin_compare_one"]
                if any(re.search(w, t) for t in d1) and not any(re.search(w, t) for t in d2)
            ]
            if one:
                attr = one[pick % len(one)]
                forms = _FIN_COMPARE_EVENT if attr in _FIN_EVENTS else _FIN_COMPARE_FIGURE
                form = forms[(pick // 7) % len(forms)]
                # the company lacking the fact is named first or second, as it falls
                c, d = (m1, m2) if pick % 2 else (m2, m1)
                out.append((item, form.format(c=c, d=d, a=attr) + "？", "fin_compare_one"))
    return unique_per_half(out)


def probe_report(
    kb: KnowledgeBase,
    items: list[QAItem],
    data: dict[str, Any],
    probes: Any,
    *,
    name: str,
    per: str,
    examples: int,
    retrieved: Path | None = None,
    **settings: Any,
) -> dict[str, Any]:
    """Share of the probes made by ``probes(items, texts)`` that the gate refuses, per half; per
    rule/family (``per``) and the probes let through on the calibration half only (the check
    half: totals). A probe runs on its source question's evidence, or with ``retrieved`` (a
    cache file) on its own top 5."""
    gate = EvidenceGate(ledger=kb.ledger, **settings)
    made = probes(items, document_texts(kb))
    evidence = {q: data[it.id] for it, q, _ in made}
    if retrieved is not None:
        asked = {
            q: QAItem(id="probe-" + hashlib.sha1(q.encode()).hexdigest()[:16], question=q)
            for _, q, _ in made
        }
        own = collect(kb, list(asked.values()), retrieved)
        evidence = {q: own[a.id] for q, a in asked.items()}
    rows = [(it, q, kind, gate.decide(q, evidence[q]["nodes"]).refused) for it, q, kind in made]
    out: dict[str, Any] = {}
    for part in ("calibration", "check"):
        group = [r for r in rows if half(r[0].id) == part]
        refused = [r for *_, r in group]
        out[part] = {
            name: len(group),
            f"{name}_refused": round(sum(refused) / len(refused), 4) if refused else None,
        }
        if part == "calibration":
            by_kind: dict[str, list[bool]] = defaultdict(list)
            for _, _, kind, r in group:
                by_kind[kind].append(r)
            out[part][per] = {
                k: {"n": len(v), "refused": round(sum(v) / len(v), 4)} for k, v in by_kind.items()
            }
            out[part]["passed_probe_examples"] = [q for _, q, _, r in group if not r][:examples]
    return out


def retqa_report(
    kb: KnowledgeBase, items: list[QAItem], data: dict[str, Any], **settings: Any
) -> dict[str, Any]:
    """False refusals per half (all, and where the gold row is in the top 5), reasons, and the
    near-miss probes refused."""
    from rag_app.eval.metrics import first_hit_rank

    gate = EvidenceGate(ledger=kb.ledger, **settings)
    out: dict[str, Any] = {}
    decisions = {it.id: gate.decide(it.question, data[it.id]["nodes"]) for it in items}
    probed = [(it, q, gate.decide(q, data[it.id]["nodes"]).refused) for it, q in probes(items)]
    for name in ("calibration", "check"):
        group = [it for it in items if retqa_half(it.id) == name]
        hit = [
            it
            for it in group
            if first_hit_rank([n.node.get_content() for n in data[it.id]["nodes"]], it) > 0
        ]
        per_cat: dict[str, list[bool]] = defaultdict(list)
        for it in group:
            per_cat[it.category].append(decisions[it.id].refused)
        near = [r for it, _, r in probed if retqa_half(it.id) == name]
        out[name] = {
            **rates([(it, decisions[it.id].refused) for it in group]),
            "gold_row_in_top5": len(hit),
            "false_refusal_gold_row_in_top5": round(
                sum(decisions[it.id].refused for it in hit) / len(hit), 4
            )
            if hit
            else None,
            "per_category": {
                c: {"n": len(v), "refused": round(sum(v) / len(v), 4)}
                for c, v in sorted(per_cat.items())
            },
            "reasons": dict(
                Counter(decisions[it.id].reason or "passed" for it in group).most_common()
            ),
            "near_miss_probes": len(near),
            "near_miss_probes_refused": round(sum(near) / len(near), 4) if near else None,
            "refused_examples": [
                {"question": it.question, "reason": decisions[it.id].reason}
                for it in group
                if decisions[it.id].refused
            ][:10],
            "passed_probe_examples": [
                q for it, q, r in probed if retqa_half(it.id) == name and not r
            ][:10],
        }
    return out


def kind(item: QAItem) -> str:
    """Question kind from the dragonball id (irrelevant near miss, comparison, integration)."""
    if "irrelevant" in item.id:
        return "irrelevant"
    return "compare" if "compare" in item.id else "integration"


# ----- evidence ----------------------------------------------------------------------------------
def collect(kb: KnowledgeBase, items: list[QAItem], cache: Path | None) -> dict[str, Any]:
    """Top-5 reranked evidence per question (what the gate sees), plus the top dense cosine."""
    from llama_index.core.schema import QueryBundle

    from rag_app.engine import build_query_engine

    if cache is not None and cache.exists():
        data: dict[str, Any] = pickle.loads(cache.read_bytes())
        if all(it.id in data for it in items):
            return data
    parts = build_query_engine(kb, top_k=5)
    data = {}
    t0 = time.perf_counter()
    for n, item in enumerate(items, start=1):
        bundle = QueryBundle(item.question)
        nodes = parts.retriever.retrieve(bundle)
        if parts.reranker is not None:
            nodes = parts.reranker.postprocess_nodes(nodes, query_bundle=bundle)
        dense = parts.retriever.dense(item.question, 1)
        data[item.id] = {"nodes": nodes[:5], "dense_top": dense[0][1] if dense else 0.0}
        if n % 200 == 0:
            print(f"  evidence {n}/{len(items)} ({time.perf_counter() - t0:.0f}s)", flush=True)
    if cache is not None:
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_bytes(pickle.dumps(data))
    return data


# ----- scoring -----------------------------------------------------------------------------------
def rates(rows: list[tuple[QAItem, bool]]) -> dict[str, Any]:
    unans = [r for it, r in rows if not it.answerable]
    ans = [r for it, r in rows if it.answerable]
    return {
        "unanswerable": len(unans),
        "unanswerable_refused": round(sum(unans) / len(unans), 4) if unans else None,
        "answerable": len(ans),
        "false_refusal": round(sum(ans) / len(ans), 4) if ans else None,
    }


def run_gate(
    kb: KnowledgeBase, items: list[QAItem], data: dict[str, Any], **settings: Any
) -> dict[str, Any]:
    gate = EvidenceGate(ledger=kb.ledger, **settings)
    decisions = {}
    times, cpu = [], []
    for item in items:
        t0, c0 = time.perf_counter(), time.process_time()
        decisions[item.id] = gate.decide(item.question, data[item.id]["nodes"])
        times.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.process_time() - c0) * 1000)
    return {"decisions": decisions, "ms": times, "cpu_ms": cpu}


def summarize(items: list[QAItem], decisions: dict[str, Any], split: bool) -> dict[str, Any]:
    groups: dict[str, list[QAItem]] = defaultdict(list)
    for item in items:
        groups[half(item.id) if split else "all"].append(item)
    out: dict[str, Any] = {}
    for name, group in sorted(groups.items()):
        rows = [(it, decisions[it.id].refused) for it in group]
        per_cat: dict[str, list[tuple[QAItem, bool]]] = defaultdict(list)
        reasons: dict[str, Counter[str]] = {"answerable": Counter(), "unanswerable": Counter()}
        for it, refused in rows:
            if split:
                per_cat[f"{it.category}/{kind(it)}"].append((it, refused))
            side = "answerable" if it.answerable else "unanswerable"
            reasons[side][decisions[it.id].reason or "passed"] += 1
        out[name] = {
            **rates(rows),
            "per_category": {
                c: {"n": len(r), "refused": round(sum(x for _, x in r) / len(r), 4)}
                for c, r in sorted(per_cat.items())
            },
            "reasons": {k: dict(v.most_common()) for k, v in reasons.items()},
        }
    return out


def threshold_baseline(items: list[QAItem], data: dict[str, Any], score: str) -> dict[str, Any]:
    """Refuse when one score is below t; t chosen on the calibration half."""

    def value(item: QAItem) -> float:
        rec = data[item.id]
        if score == "dense_top":
            return float(rec["dense_top"])
        nodes = rec["nodes"]
        return float(nodes[0].node.metadata.get("rerank_coverage", 0.0)) if nodes else 0.0

    cal = [it for it in items if half(it.id) == "calibration"]
    candidates = sorted({round(value(it), 4) for it in cal})
    best_t, best = 0.0, (-1.0, 0.0)
    for t in candidates:
        r = rates([(it, value(it) < t) for it in cal])
        if (
            r["false_refusal"] <= MAX_FALSE_REFUSAL
            and (r["unanswerable_refused"], -r["false_refusal"]) > best
        ):
            best_t, best = t, (r["unanswerable_refused"], -r["false_refusal"])
    result: dict[str, Any] = {"score": score, "threshold": best_t}
    for name in ("calibration", "check"):
        group = [it for it in items if half(it.id) == name]
        result[name] = rates([(it, value(it) < best_t) for it in group])
    return result


def sweep(
    kb: KnowledgeBase,
    items: list[QAItem],
    data: dict[str, Any],
    sample: tuple[KnowledgeBase, list[QAItem], dict[str, Any]],
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Three-stage grid search on the calibration half (and the sample KB, our own data).

    Feasible: at most 5 % of the calibration half's answerable questions refused, and the sample
    KB (our own data) all right: every unanswerable question refused, no answerable one. Among
    those: most unanswerable refused on the calibration half, then fewest false refusals, then
    the settings already in place (ties keep them).
    """
    cal = [it for it in items if half(it.id) == "calibration"]
    skb, sitems, sdata = sample
    log: list[dict[str, Any]] = []
    chosen: dict[str, Any] = {}
    for grid in (SWEEP, SWEEP_STAGE2, SWEEP_STAGE3):
        best: tuple[Any, ...] | None = None
        best_settings = chosen
        keys = list(grid)
        current = EvidenceGate(**chosen)
        for values in itertools.product(*grid.values()):
            combo = dict(zip(keys, values, strict=True))
            settings = {**chosen, **combo}
            decisions = run_gate(kb, cal, data, **settings)["decisions"]
            r = rates([(it, decisions[it.id].refused) for it in cal])
            sdec = run_gate(skb, sitems, sdata, **settings)["decisions"]
            sr = rates([(it, sdec[it.id].refused) for it in sitems])
            log.append({"settings": combo, **r, "sample_kb": sr})
            print(f"  {combo} → {r} sample {sr}", flush=True)
            feasible = (
                r["false_refusal"] <= MAX_FALSE_REFUSAL
                and sr["false_refusal"] == 0
                and sr["unanswerable_refused"] == 1
            )
            same = all(getattr(current, k) == v for k, v in combo.items())
            key = (feasible, r["unanswerable_refused"], -r["false_refusal"], same)
            if best is None or key > best:
                best, best_settings = key, settings
        chosen = best_settings
    return chosen, log


# ----- report ------------------------------------------------------------------------------------
def pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f} %"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sweep", action="store_true", help="run the threshold sweep")
    parser.add_argument("--refresh", action="store_true", help="recompute the cached evidence")
    args = parser.parse_args()

    shared = require_shared("dragonball_zh", "retqa_tables_zh")
    path = shared["dragonball_zh"]
    items = load_questions(path)
    kb = kb_for("dragonball_zh", path / "docs")
    cache = CACHE / "gate-dragonball_zh.pkl"
    if args.refresh and cache.exists():
        cache.unlink()
    print(f"dragonball_zh: {len(items)} questions; collecting the top-5 evidence …", flush=True)
    data = collect(kb, items, cache)

    gate = EvidenceGate()
    skip = ("callback_manager", "tenant", "doc_ids")
    defaults = {k: getattr(gate, k) for k in EvidenceGate.model_fields if k not in skip}

    # the bundled sample KB, built fresh (10 s) so that it matches data/knowledge
    sample_items = load_qa(SAMPLE_QA)
    tmp = tempfile.TemporaryDirectory()
    skb = KnowledgeBase.open(Path(tmp.name) / "kb")
    skb.ingest([SAMPLE_KB])
    sdata = collect(skb, sample_items, None)

    settings: dict[str, Any] = {}
    sweep_log: list[dict[str, Any]] = []
    if args.sweep:
        print("sweep on the calibration half (and the sample KB) …", flush=True)
        chosen, sweep_log = sweep(kb, items, data, (skb, sample_items, sdata))
        settings = {k: v for k, v in chosen.items() if defaults.get(k) != v}
        print(f"chosen: {chosen} (differs from the defaults in {settings or 'nothing'})")

    run = run_gate(kb, items, data, **settings)
    dragon = summarize(items, run["decisions"], split=True)
    latency = {}
    for name in ("ms", "cpu_ms"):  # wall clock (shared, busy machine) and CPU time
        ms = sorted(run[name])
        latency[name] = {
            "median": round(statistics.median(ms), 2),
            "mean": round(sum(ms) / len(ms), 2),
            "p90": round(ms[int(0.9 * (len(ms) - 1))], 2),
            "max": round(ms[-1], 2),
        }
    no_lookup = summarize(
        items, run_gate(kb, items, data, **settings, lookup=False)["decisions"], True
    )
    baselines = [threshold_baseline(items, data, s) for s in ("dense_top", "top_coverage")]
    # probe sets: (name, builder, per, examples, own retrieval cache or None)
    probe_sets = [
        ("near_miss_probes", dragon_probes, "per_rule", 10, None),
        ("record_probes", record_probes, "per_family", 20, None),
        ("asked_anew_probes", asked_anew_probes, "per_family", 20, "asked-anew"),
        ("owned_answerable_probes", owned_answerable_probes, "per_kind", 20, "owned-answerable"),
        ("finance_probes", finance_probes, "per_family", 20, None),
    ]
    reports = {
        name: probe_report(
            kb,
            items,
            data,
            builder,
            name=name,
            per=per,
            examples=examples,
            retrieved=CACHE / f"gate-dragonball_zh-{cache}.pkl" if cache else None,
            **settings,
        )
        for name, builder, per, examples, cache in probe_sets
    }
    dragon_near, record_near = reports["near_miss_probes"], reports["record_probes"]
    anew, owned_ok = reports["asked_anew_probes"], reports["owned_answerable_probes"]
    finance_near = reports["finance_probes"]

    srun = run_gate(skb, sample_items, sdata, **settings)
    sample = summarize(sample_items, srun["decisions"], split=False)["all"]
    sample["refused_answerable"] = [
        it.id for it in sample_items if it.answerable and srun["decisions"][it.id].refused
    ]
    sample["passed_unanswerable"] = [
        it.id for it in sample_items if not it.answerable and not srun["decisions"][it.id].refused
    ]
    sample["reasons_by_id"] = {
        it.id: srun["decisions"][it.id].reason for it in sample_items if not it.answerable
    }
    skb.close()
    tmp.cleanup()

    # tables: false refusals (retqa has no unanswerable questions) and near-miss probes
    ritems = load_questions(shared["retqa_tables_zh"])
    rkb = kb_for("retqa_tables_zh", shared["retqa_tables_zh"] / "docs")
    rcache = CACHE / "gate-retqa_tables_zh.pkl"
    if args.refresh and rcache.exists():
        rcache.unlink()
    print(f"retqa_tables_zh: {len(ritems)} questions; collecting the top-5 evidence …", flush=True)
    rdata = collect(rkb, ritems, rcache)
    retqa = retqa_report(rkb, ritems, rdata, **settings)
    rkb.close()

    print("\n## Evidence gate (dev data; thresholds tuned on the calibration half only)\n")
    print("| set | method | unanswerable refused | answerable refused (false refusal) |")
    print("| --- | --- | --- | --- |")
    for name in ("calibration", "check"):
        r = dragon[name]
        print(
            f"| dragonball {name} ({r['unanswerable']} / {r['answerable']}) | EvidenceGate | "
            f"{pct(r['unanswerable_refused'])} | {pct(r['false_refusal'])} |"
        )
        r = no_lookup[name]
        print(
            f"| dragonball {name} | EvidenceGate, no look-up | {pct(r['unanswerable_refused'])} | "
            f"{pct(r['false_refusal'])} |"
        )
        for b in baselines:
            r = b[name]
            print(
                f"| dragonball {name} | threshold {b['score']} < {b['threshold']} | "
                f"{pct(r['unanswerable_refused'])} | {pct(r['false_refusal'])} |"
            )
    for report, key, label in (
        (dragon_near, "near_miss_probes", "near-miss probes"),
        (record_near, "record_probes", "record probes"),
        (finance_near, "finance_probes", "finance probes"),
        (anew, "asked_anew_probes", "asked-anew probes"),
    ):
        for name in ("calibration", "check"):
            r = report[name]
            print(
                f"| dragonball {name} ({r[key]} {label}) | EvidenceGate | "
                f"{pct(r[key + '_refused'])} ({label}) | – |"
            )
    key, label = "owned_answerable_probes", "answerable owned probes"
    for name in ("calibration", "check"):
        r = owned_ok[name]
        print(
            f"| dragonball {name} ({r[key]} {label}) | EvidenceGate | – | "
            f"{pct(r[key + '_refused'])} ({label}) |"
        )
    print(
        f"| sample KB ({sample['unanswerable']} / {sample['answerable']}) | EvidenceGate | "
        f"{pct(sample['unanswerable_refused'])} | {pct(sample['false_refusal'])} |"
    )
    for name in ("calibration", "check"):
        r = retqa[name]
        print(
            f"| retqa {name} ({r['near_miss_probes']} probes / {r['answerable']}) | EvidenceGate | "
            f"{pct(r['near_miss_probes_refused'])} (near-miss probes) | {pct(r['false_refusal'])} "
            f"({pct(r['false_refusal_gold_row_in_top5'])} where the gold row is in the top 5) |"
        )
    for label, report in (("Record", record_near), ("Finance", finance_near), ("Asked-anew", anew)):
        print(f"\n### {label} probes, calibration half, per family (share refused)\n")
        for fam, v in report["calibration"]["per_family"].items():
            print(f"- {fam}: {pct(v['refused'])} of {v['n']}")
    print("\n### Per category (share refused)\n")
    print("| category | calibration | check |")
    print("| --- | --- | --- |")
    cats = sorted(set(dragon["calibration"]["per_category"]) | set(dragon["check"]["per_category"]))
    for c in cats:
        cells = []
        for name in ("calibration", "check"):
            v = dragon[name]["per_category"].get(c)
            cells.append(f"{pct(v['refused'])} of {v['n']}" if v else "–")
        print(f"| {c} | {cells[0]} | {cells[1]} |")
    print("\n### Reasons\n")
    for name in ("calibration", "check"):
        print(f"- {name}: {dragon[name]['reasons']}")
    print(f"- sample KB: {sample['reasons']}")
    for name in ("calibration", "check"):
        print(f"- retqa {name}: {retqa[name]['reasons']}")
    print(f"\ngate latency per question (wall ms, CPU ms): {latency}")

    out = write_result(
        "gate",
        {
            "note": "development figures: thresholds were tuned on the calibration half only",
            "split": "sha1(id) % 2 == 0 → calibration, else check",
            "max_false_refusal": MAX_FALSE_REFUSAL,
            "settings": {**defaults, **settings},
            "dragonball_zh": dragon,
            "dragonball_zh_near_miss_probes": {
                "built": "answerable questions, asked attribute swapped for one their gold "
                "documents lack (DRAGON_PROBE_RULES); check half: totals only",
                **dragon_near,
            },
            "dragonball_zh_record_probes": {
                "built": "person of an answerable medical/law question, asked a record field, "
                "personal fact or effect their gold documents lack (RECORD_PROBE_FAMILIES); "
                "check half: totals only",
                **record_near,
            },
            "dragonball_zh_finance_probes": {
                "built": "company of an answerable finance question, asked a report figure, "
                "event, reason or effect no document naming it gives, or compared with the other "
                "company on a fact one or both lack (FINANCE_PROBE_FAMILIES); check half: totals "
                "only",
                **finance_near,
            },
            "dragonball_zh_asked_anew_probes": {
                "built": "person of an answerable medical/law question, asked what belongs to "
                "another person or thing, the scope's organisation or city, a past activity, the "
                "weather on a date or a cause in detail, none of which its documents give "
                "(ASKED_ANEW_FAMILIES); retrieved for themselves; check half: totals only",
                **anew,
            },
            "dragonball_zh_owned_answerable_probes": {
                "built": "person of an answerable medical/law question, asked what belongs to "
                "somebody else of the record where the record says it (OWNED_ANSWERABLE); "
                "retrieved for themselves; refused = false refusal; check half: totals only",
                **owned_ok,
            },
            "dragonball_zh_without_lookup": no_lookup,
            "baselines": baselines,
            "sample_kb": sample,
            "retqa_tables_zh": {
                "split": "sha1(id) % 4 == 0 → calibration, == 2 → check (dev ids are all even)",
                **retqa,
            },
            "latency": latency,
            "sweep": {"grid": [SWEEP, SWEEP_STAGE2, SWEEP_STAGE3], "runs": sweep_log}
            if sweep_log
            else None,
        },
    )
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
