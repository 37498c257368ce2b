"""EvidenceGate on hand-written near misses: the entity is there, the asked detail is not.

Every passage below is written for these tests. Each near miss has an answerable twin that differs
only in the detail, so a gate that refuses everything (or nothing) fails.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pytest
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from rag_app.postprocess.gate import EvidenceGate, analyze_question
from rag_app.retrieval.tokenizer import tokenize
from rag_app.types import ChunkInfo

SERVER = (
    "服务器 web-01 由运维部负责维护，部署在上海一号机房，操作系统为 Ubuntu 22.04，"
    "每周日凌晨进行例行巡检，巡检记录保存在运维工单系统中。"
)
SERVER_WITH_IP = SERVER + "该服务器的IP地址为10.0.3.15，仅允许内网访问。"

PATIENT = (
    "患者王某某，男，45岁，因反复胸痛三天入院。既往体健，否认高血压、糖尿病病史，"
    "入院后完善心电图检查，给予抗血小板治疗，症状明显缓解。"
)
PATIENT_WITH_HOBBY = PATIENT + "患者平时爱好钓鱼和登山。"
PATIENT_WITH_BLOOD = PATIENT + "血型检查结果为A型，Rh阳性。"

CONTRACT = (
    "甲方星河数据科技有限公司与乙方蓝鲸物流有限公司签订仓储运输合同，合同金额为120万元，"
    "服务期限为两年，由乙方负责华东地区的仓储与配送。"
)
CONTRACT_DATED = CONTRACT + "双方于2023年5月8日在杭州签订本合同。"

LEAVE = "员工的年假须经部门负责人审批后方可休假，未休完的年假不得折算为工资。"
LEAVE_DAYS = "员工入职满一年后享有年假，年假为每年10天，须经部门负责人审批后方可休假。"

GUIDE = (
    "Visitors sign in at the front desk and receive a badge. Guests can use the guest network "
    "during their visit; the network is separated from the office network."
)
GUIDE_WITH_PASSWORD = GUIDE + " The guest network password is Welcome2024 and changes monthly."
HANDBOOK = "Annual leave requests are approved by your manager in the HR portal."
HANDBOOK_DAYS = "New employees get 12 days of annual leave in their first year of service."


def nodes(*texts: str, title: str = "") -> list[NodeWithScore]:
    return [
        NodeWithScore(node=TextNode(text=t, metadata={"title_path": title}), score=1.0 / (i + 1))
        for i, t in enumerate(texts)
    ]


def decide(question: str, *texts: str, title: str = "", **settings: object):  # type: ignore[no-untyped-def]
    return EvidenceGate(**settings).decide(question, nodes(*texts, title=title))


# ----- the near misses and their twins --------------------------------------------------------
@pytest.mark.parametrize(
    ("question", "near_miss", "twin"),
    [
        ("服务器web-01的IP地址是多少？", SERVER, SERVER_WITH_IP),
        ("王某某的爱好是什么？", PATIENT, PATIENT_WITH_HOBBY),
        ("王某某的血型是什么？", PATIENT, PATIENT_WITH_BLOOD),
        ("What is the password of the guest network?", GUIDE, GUIDE_WITH_PASSWORD),
    ],
)
def test_entity_present_attribute_absent_is_refused(
    question: str, near_miss: str, twin: str
) -> None:
    refused = decide(question, near_miss)
    assert refused.refused, refused.details
    assert refused.reason == "attribute_missing"
    passed = decide(question, twin)
    assert not passed.refused, passed.details
    assert passed.reason is None


def test_date_question_needs_a_date() -> None:
    question = "星河数据科技有限公司和蓝鲸物流有限公司的合同是哪一天签订的？"
    refused = decide(question, CONTRACT)
    assert refused.refused and refused.reason == "answer_type_missing", refused.details
    assert "date" in refused.details["answer_types"]
    assert not decide(question, CONTRACT_DATED).refused


def test_number_question_needs_a_number() -> None:
    question = "年假有多少天？"
    refused = decide(question, LEAVE)
    assert refused.refused and refused.reason == "answer_type_missing", refused.details
    assert not decide(question, LEAVE_DAYS).refused


def test_english_number_question() -> None:
    question = "How many days of annual leave do new employees get?"
    refused = decide(question, HANDBOOK)
    assert refused.refused, refused.details
    assert refused.reason in ("attribute_missing", "answer_type_missing")
    assert not decide(question, HANDBOOK_DAYS).refused


def test_a_year_is_not_an_amount() -> None:
    """'2023年' near the attribute must not count as the number asked for."""
    question = "蓝鲸物流有限公司的注册资本是多少？"
    text = "蓝鲸物流有限公司成立于2015年，注册资本在2023年完成变更，具体以工商登记为准。"
    decision = decide(question, text)
    assert decision.refused and decision.reason == "answer_type_missing", decision.details
    assert not decide(question, text + "变更后注册资本为5000万元。").refused


def test_comparison_with_one_entity_missing_is_refused() -> None:
    question = "王某某和赵某某的入院时间谁更早？"
    first = "患者王某某，男，45岁，于3月2日入院，主诉反复胸痛三天。"
    second = "患者赵某某，女，62岁，于1月15日入院，主诉咳嗽咳痰一周。"
    refused = decide(question, first)
    assert refused.refused and refused.reason == "entity_missing", refused.details
    assert refused.details["missing_entities"] == ["赵某某"]
    assert not decide(question, first, second).refused


def test_comparison_needs_the_value_for_every_entity() -> None:
    question = "比较星河数据科技有限公司和蓝鲸物流有限公司的员工人数，哪家公司的员工更多？"
    first = "星河数据科技有限公司现有员工320人，其中研发人员占六成。"
    second = "蓝鲸物流有限公司持续扩充员工队伍，员工培训覆盖全部岗位。"
    refused = decide(question, first, second)
    assert refused.refused and refused.reason == "answer_type_missing", refused.details
    assert not decide(question, first, second + "截至年底员工共有1500人。").refused


def test_no_evidence() -> None:
    decision = EvidenceGate().decide("服务器web-01的IP地址是多少？", [])
    assert decision.refused and decision.reason == "no_evidence"
    empty = EvidenceGate().decide("服务器web-01的IP地址是多少？", nodes("   "))
    assert empty.refused and empty.reason == "no_evidence"


def test_unknown_entity_is_refused() -> None:
    decision = decide("服务器web-02的IP地址是多少？", SERVER_WITH_IP)
    assert decision.refused and decision.reason == "entity_missing"
    assert decision.details["missing_entities"] == ["web-02"]


def test_document_kind_named_in_the_question() -> None:
    """'根据…的判决书' while the entity only appears in a medical record."""
    question = "根据青山市人民医院的判决书，王某某的职业是什么？"
    record = PATIENT + "职业：教师。"
    refused = decide(question, record)
    assert refused.refused and refused.reason == "scope_missing", refused.details
    assert not decide("根据青山市人民医院的住院病历，王某某的职业是什么？", record).refused


def test_table_row_lookup_passes_and_qualifier_numbers_are_checked() -> None:
    table = (
        "| 年龄 | 10年交 | 20年交 |\n| --- | --- | --- |\n| 30 | 520 | 310 |\n| 40 | 760 | 455 |"
    )
    title = "安康保险费率表 > 每万元基本保险金额年交保险费"
    ok = decide("30岁投保，20年交，每万元基本保险金额的年交保险费是多少？", table, title=title)
    assert not ok.refused, ok.details
    missing = decide("65岁投保，20年交，每万元基本保险金额的年交保险费是多少？", table, title=title)
    assert missing.refused and missing.reason == "entity_missing"


def test_off_topic_question_is_refused() -> None:
    decision = decide("红烧肉怎么做才能肥而不腻？", SERVER, PATIENT, CONTRACT)
    # an entity-less how question: the overall coverage refuses it (see entityless_types)
    assert decision.refused and decision.reason == "low_coverage", decision.details
    strict = decide("红烧肉怎么做才能肥而不腻？", SERVER, PATIENT, CONTRACT, entityless_types=[])
    assert strict.refused and strict.reason == "attribute_missing"


def test_postprocessor_returns_nothing_when_refused() -> None:
    gate = EvidenceGate()
    evidence = nodes(SERVER)
    assert gate.postprocess_nodes(evidence, QueryBundle("服务器web-01的IP地址是多少？")) == []
    assert gate.last_decision is not None and gate.last_decision.refused
    kept = gate.postprocess_nodes(
        nodes(SERVER_WITH_IP), QueryBundle("服务器web-01的IP地址是多少？")
    )
    assert len(kept) == 1
    assert gate.last_decision is not None and not gate.last_decision.refused


# ----- question analysis ----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("question", "head", "answer_type"),
    [
        ("王某某的血型是什么？", ["血型"], "what"),
        ("服务器web-01的IP地址是多少？", ["ip", "地址"], "number"),
        ("合同是哪一天签订的？", None, "date"),
        ("星河公司的注册时间是什么？", ["注册"], "date"),
        ("How many days of annual leave do new employees get?", ["days"], "number"),
        ("When does the reception open?", None, "date"),
        ("宋某的出租车是什么颜色的？", ["出租车", "颜色"], "what"),
    ],
)
def test_analysis(question: str, head: list[str] | None, answer_type: str) -> None:
    analysis = analyze_question(question)
    assert analysis.subquestions[0].answer_type == answer_type
    if head is not None:
        assert analysis.subquestions[0].head == head


def test_analysis_entities() -> None:
    a = analyze_question("比较2020年星河数据科技有限公司和蓝鲸物流有限公司的净利润，哪家公司更高？")
    names = {e.text: e.kind for e in a.entities}
    assert names["星河数据科技有限公司"] == "org" and names["蓝鲸物流有限公司"] == "org"
    assert names["2020"] == "year"
    assert a.comparative
    b = analyze_question("根据青山市人民医院的住院病历，王某某和赵某某的体温分别是多少？")
    kinds = {e.text: (e.kind, e.scope) for e in b.entities}
    assert kinds["青山市人民医院"] == ("org", True)
    assert kinds["王某某"] == ("person", False) and kinds["赵某某"] == ("person", False)
    assert not b.comparative


# ----- lookup in the entity's documents (with a small in-memory ledger) --------------------------
class FakeLedger:
    """Just enough of :class:`rag_app.store.ledger.Ledger` for the gate's lookups."""

    url = "memory://gate-test"

    def __init__(self, docs: dict[str, list[str]]) -> None:
        self.chunks: dict[str, ChunkInfo] = {}
        for doc_id, texts in docs.items():
            start = 0
            for i, text in enumerate(texts):
                chunk = ChunkInfo(
                    chunk_id=f"{doc_id}:1:{i}",
                    doc_id=doc_id,
                    version=1,
                    chunk_index=i,
                    text=text,
                    start_char=start,
                    end_char=start + len(text),
                )
                self.chunks[chunk.chunk_id] = chunk
                start += len(text)

    def term_document_frequencies(self, terms: Sequence[str]) -> tuple[dict[str, int], int]:
        freqs = {t: sum(t in c.text.lower() for c in self.chunks.values()) for t in terms}
        return freqs, len(self.chunks)

    def keyword_search(
        self,
        tokens: Sequence[str],
        *,
        tenant: str,
        doc_ids: Sequence[str] | None = None,
        limit: int = 20,
    ) -> list[tuple[str, float]]:
        hits = []
        for chunk in self.chunks.values():
            if doc_ids is not None and chunk.doc_id not in doc_ids:
                continue
            words = set(tokenize(chunk.text))
            score = sum(all(p in words for p in t.split()) for t in tokens)
            if score:
                hits.append((chunk.chunk_id, float(score)))
        return sorted(hits, key=lambda h: -h[1])[:limit]

    keyword_search_ranked = keyword_search  # the unscoped variant: same hits here

    def phrase_frequency(self, phrase: str, *, tenant: str, cap: int) -> int:
        return len(self.keyword_search([phrase], tenant=tenant, limit=cap))

    def active_chunks_by_id(
        self, chunk_ids: Iterable[str], tenant: str | None = None
    ) -> dict[str, ChunkInfo]:
        return {c: self.chunks[c] for c in chunk_ids if c in self.chunks}

    def active_chunks(self, doc_id: str) -> list[ChunkInfo]:
        return [c for c in self.chunks.values() if c.doc_id == doc_id]

    def document_sources(self, doc_ids: Iterable[str]) -> dict[str, tuple[str, str]]:
        return {d: (f"records/{d}.txt", "default") for d in doc_ids}

    def active_chunks_at(self, doc_id: str, indices: Iterable[int]) -> dict[int, ChunkInfo]:
        wanted = set(indices)
        return {c.chunk_index: c for c in self.active_chunks(doc_id) if c.chunk_index in wanted}


def ledger_nodes(ledger: FakeLedger, *chunk_ids: str) -> list[NodeWithScore]:
    out = []
    for chunk_id in chunk_ids:
        c = ledger.chunks[chunk_id]
        meta = {"doc_id": c.doc_id, "version": c.version, "chunk_index": c.chunk_index}
        out.append(
            NodeWithScore(node=TextNode(id_=chunk_id, text=c.text, metadata=meta), score=1.0)
        )
    return out


def test_lookup_supplements_a_missed_chunk_of_the_entity_document() -> None:
    """The record names its patient once, in the header; the temperature is further down."""
    ledger = FakeLedger(
        {
            "rec-a": [
                "住院病历 姓名：王某某 性别：男 年龄：45岁",
                "体格检查：体温36.6℃，脉搏78次/分。",
            ],
            "rec-b": [
                "住院病历 姓名：赵某某 性别：女 年龄：62岁",
                "体格检查：体温37.9℃，脉搏92次/分。",
            ],
        }
    )
    gate = EvidenceGate(ledger=ledger)  # type: ignore[arg-type]
    question = "王某某和赵某某的体温谁更高？"
    evidence = ledger_nodes(ledger, "rec-a:1:0", "rec-a:1:1", "rec-b:1:0")
    decision = gate.decide(question, evidence)
    assert not decision.refused, decision.details
    assert [n.node.node_id for n in decision.supplements] == ["rec-b:1:1"]
    assert decision.supplements[0].node.metadata["source"] == "records/rec-b.txt"
    kept = gate.postprocess_nodes(evidence, QueryBundle(question))
    assert [n.node.node_id for n in kept][-1] == "rec-b:1:1"
    # without the lookup the same evidence lacks 赵某某's temperature
    strict = EvidenceGate(ledger=ledger, lookup=False)  # type: ignore[arg-type]
    assert strict.decide(question, evidence).refused


def test_lookup_does_not_invent_a_missing_attribute() -> None:
    ledger = FakeLedger(
        {
            "rec-a": [
                "住院病历 姓名：王某某 性别：男 年龄：45岁",
                "体格检查：体温36.6℃，脉搏78次/分。",
            ]
        }
    )
    gate = EvidenceGate(ledger=ledger)  # type: ignore[arg-type]
    decision = gate.decide("王某某的血型是什么？", ledger_nodes(ledger, "rec-a:1:0"))
    assert decision.refused and decision.reason == "attribute_missing"
    assert decision.supplements == []


# ----- tables: column names paraphrased by the question -----------------------------------------
ENTERPRISES = (
    "| 企业名称 | 年份 | 营业总收入 | 营业总成本 | 负债合计 | 是否国有 | 信用债情况 |\n"
    "| --- | --- | --- | --- | --- | --- | --- |\n"
    "| 青川城建投资集团有限公司 | 2021 | 35.2 | 30.1 | 210.5 | 是 | 未知 |\n"
    "| 远帆置业控股有限公司 | 2021 | 120.4 | 118.9 | 860.2 | 否 | 信用债已违约或展期 |\n"
    "| 上海明湖实业有限公司 | 2021 | 12.3 | 11.0 | 45.6 | 否 | 未知 |"
)
ENTERPRISES_TITLE = "青川企业2021年财务表"
PRICES = (
    "| 项目名称 | 区域 | 成交均价 | 成交套数 | 年月 |\n"
    "| --- | --- | --- | --- | --- |\n"
    "| 云溪雅苑 | 青川市东湖区 | 18500.5 | 32 | 2021年03月 |\n"
    "| 明月华庭 | 青川市东湖区 | 22100.0 | 8 | 2021年03月 |"
)
PRICES_TITLE = "青川市东湖区2021年03月商品房成交价格表"
LAND = (
    "| 地块名称 | 项目名称 | 成交日期 | 所属集团 | 成交总价 | 容积率 | 绿化率(%) |\n"
    "| --- | --- | --- | --- | --- | --- | --- |\n"
    "| 东湖区北路01地块 | 云溪雅苑 | 2019年05月20日 | 远帆置业控股有限公司 | 860000000 | 2.2 | 35.0 |\n"
    "| 东湖区南路07地块 | 明月华庭 | 2020年08月11日 | 青川城建投资集团有限公司 | 1240000000 | 1.8 "
    "| 30.0 |"
)
LAND_TITLE = "青川市东湖区土地成交信息表"


@pytest.mark.parametrize(
    ("question", "table", "title"),
    [
        # 是不是属于国有企业 ~ 是否国有 (a yes/no column)
        ("青川城建投资集团有限公司是不是属于国有企业？", ENTERPRISES, ENTERPRISES_TITLE),
        (
            "青川城建投资集团有限公司与远帆置业控股有限公司，这两家公司是否都属于国有企业类别？",
            ENTERPRISES,
            ENTERPRISES_TITLE,
        ),
        # the entity span must not swallow 请问 and the year
        ("请问2021年远帆置业控股有限公司的营业总成本是多少？", ENTERPRISES, ENTERPRISES_TITLE),
        ("请问2021年时，远帆置业控股有限公司的总负债达到了多少？", ENTERPRISES, ENTERPRISES_TITLE),
        # 债务违约 ~ 信用债情况, whose cells read 信用债已违约或展期
        ("远帆置业控股有限公司在2021年的债务违约情况如何？", ENTERPRISES, ENTERPRISES_TITLE),
        # 房价 ~ 成交均价, 多少套 ~ 成交套数
        ("请问2021年3月，青川市东湖区云溪雅苑的房价是多少？", PRICES, PRICES_TITLE),
        (
            "在2021年3月，青川市东湖区的云溪雅苑和明月华庭这两个小区各自成交了多少套房子？",
            PRICES,
            PRICES_TITLE,
        ),
        ("请问在2021年3月，青川市东湖区云溪雅苑成交的房子数量是多少？", PRICES, PRICES_TITLE),
        # a filter: the bounds are not values to find
        ("在2021年3月，青川市东湖区有哪些小区的房价位于20000至25000元之间？", PRICES, PRICES_TITLE),
        # 成交价格 ~ 成交总价; names without a suffix, joined by 和 before 这两个小区
        (
            "位于青川市东湖区的云溪雅苑和明月华庭这两个小区，它们所对应的地块在拍卖时的成交价格各是多少？",
            LAND,
            LAND_TITLE,
        ),
        ("青川市东湖区的云溪雅苑与明月华庭，这两个小区的容积率具体是多少？", LAND, LAND_TITLE),
        ("青川市东湖区的云溪雅苑小区所属地块是在哪一年成交的？", LAND, LAND_TITLE),
    ],
)
def test_table_question_with_a_paraphrased_column_passes(
    question: str, table: str, title: str
) -> None:
    decision = decide(question, table, title=title)
    assert not decision.refused, decision.details


@pytest.mark.parametrize(
    ("question", "table", "title"),
    [
        # the entity is in the table, the asked column is not
        ("青川市东湖区的云溪雅苑与明月华庭，这两个小区的容积率具体是多少？", PRICES, PRICES_TITLE),
        ("请问2021年3月，青川市东湖区云溪雅苑的物业费是多少？", PRICES, PRICES_TITLE),
        # 房产 is counted in 套, but 物业费 is no count: 成交套数 does not answer it
        ("请问2021年3月，青川市东湖区云溪雅苑的房产物业费达到了多少？", PRICES, PRICES_TITLE),
        (
            "在2021年3月，青川市东湖区的云溪雅苑和明月华庭这两个小区各自有多少个停车位？",
            PRICES,
            PRICES_TITLE,
        ),
        ("青川市东湖区云溪雅苑所在地块的成交了多少套房子？", LAND, LAND_TITLE),
        ("请问2021年远帆置业控股有限公司的员工人数是多少？", ENTERPRISES, ENTERPRISES_TITLE),
        # 上…市…公…司 scattered over company and place names is no column 上市
        ("青川城建投资集团有限公司是不是上市公司？", ENTERPRISES, ENTERPRISES_TITLE),
        ("远帆置业控股有限公司在2021年的注册资本情况如何？", ENTERPRISES, ENTERPRISES_TITLE),
    ],
)
def test_table_with_the_entity_but_not_the_asked_column_is_refused(
    question: str, table: str, title: str
) -> None:
    decision = decide(question, table, title=title)
    assert decision.refused and decision.reason == "attribute_missing", decision.details


def test_table_entities() -> None:
    a = analyze_question("请问2021年融侨集团股份有限公司的营业总成本是多少？")
    assert {e.text: e.kind for e in a.entities} == {"融侨集团股份有限公司": "org", "2021": "year"}
    b = analyze_question("位于广州市白云区的天悦云山府和广州润府，这两个小区的容积率具体是多少？")
    assert {e.text: e.kind for e in b.entities} == {"天悦云山府": "name", "广州润府": "name"}
    assert b.subquestions[0].head == ["容积率"]
    c = analyze_question(
        "在2020年12月，武汉市汉阳区的长安和玺与禧悦学府这两个小区各自成交了多少套房子？"
    )
    assert {"长安和玺", "禧悦学府"} <= {e.text for e in c.entities}
    assert c.subquestions[0].unit == "套"
    d = analyze_question("在武汉市蔡甸区，哪些小区在2021年12月的房价位于10000至20000元之间？")
    assert [e.kind for e in d.entities] == ["date"] and "房价" in d.subquestions[0].head
    # common nouns joined by 和 are no names; a single name holding 和 is not split
    assert not analyze_question("原告和被告分别是谁？").entities
    assert not analyze_question("在各自的合规与监管更新中分别做了哪些调整？").entities
    assert not analyze_question("公司的产品质量和服务水平分别如何？").entities
    assert not [e for e in analyze_question("保利燕璟和颂小区所属地块的成交总价是多少？").entities]


# ----- where the value must be, and what kind of value ------------------------------------------
@pytest.mark.parametrize(
    ("question", "near_miss", "twin"),
    [
        # a number in the next sentence is no head count: it counts something else
        (
            "蓝鲸物流有限公司的员工人数是多少？",
            "蓝鲸物流有限公司重视员工关怀。2023年共组织了12次团建活动。",
            "蓝鲸物流有限公司现有员工850人。2023年共组织了12次团建活动。",
        ),
        # a sentence that calls the value unknown does not give it
        (
            "蓝鲸物流有限公司的员工满意度是多少？",
            "蓝鲸物流有限公司的员工满意度较上年的85%有所提升，最新数值未披露。",
            "蓝鲸物流有限公司的员工满意度为90%，较上年的85%有所提升。",
        ),
        # an amount of money, not a share
        (
            "星河数据科技有限公司的收购金额是多少？",
            "星河数据科技有限公司于2023年3月完成收购，取得目标公司60%的股权。",
            "星河数据科技有限公司于2023年3月完成收购，收购金额为3.2亿元。",
        ),
    ],
)
def test_the_value_must_be_in_the_head_sentence_and_of_the_asked_kind(
    question: str, near_miss: str, twin: str
) -> None:
    refused = decide(question, near_miss)
    assert refused.refused and refused.reason == "answer_type_missing", refused.details
    passed = decide(question, twin)
    assert not passed.refused, passed.details
    # the old rule (any number within the window) took the near miss
    assert not decide(
        question, near_miss, number_scope="window", unknown_values=False, value_kinds=[]
    ).refused


def test_a_degree_comparison_needs_a_number_by_the_asked_noun() -> None:
    """ "提升更显著" compares magnitudes; a number by the scene-setting 资产重组 does not count."""
    question = (
        "比较星河数据科技有限公司和蓝鲸物流有限公司的资产重组，哪家公司的运营效率提升更显著？"
    )
    first = "星河数据科技有限公司投入5000万元进行资产重组。这一举措提高了公司的运营效率。"
    second = "蓝鲸物流有限公司投入3000万元进行资产重组。这一举措提高了公司的运营效率。"
    assert analyze_question(question).subquestions[0].answer_type == "number"
    refused = decide(question, first, second)
    assert refused.refused and refused.reason == "answer_type_missing", refused.details
    measured = second.replace("提高了公司的运营效率", "使运营效率提升了15%")
    assert not decide(
        question, first.replace("提高了", "使运营效率提升了8%，提高了"), measured
    ).refused


JUDGMENT = (
    "# 青川市东湖区人民法院刑事判决书\n\n(2023)青东刑初字第12号\n\n"
    "公诉机关：青川市东湖区人民检察院。被告人：王某，男，住青川市。\n\n"
    "## 判决结果\n\n被告人王某犯盗窃罪，判处有期徒刑二年。如不服本判决，可在接到判决书的第二日起"
    "十日内提出上诉。"
)


def test_a_case_number_year_is_no_judgment_date() -> None:
    question = "根据青川市东湖区人民法院的判决书，王某的判决日期是什么时候？"
    refused = decide(question, JUDGMENT)
    assert refused.refused and refused.reason == "answer_type_missing", refused.details
    assert analyze_question(question).subquestions[0].document_date
    # the date the judgment is signed on a line of its own, far from the word 判决
    signed = JUDGMENT + "\n\n审判长：李某\n\n二〇二三年九月十五日\n"
    assert not decide(question, signed).refused
    assert not decide(question, JUDGMENT, skip_case_numbers=False).refused


def test_a_date_asked_of_each_entity_needs_both() -> None:
    """ "A和B的入院时间分别是什么时候": one record without it is a near miss (all of it read)."""
    docs = {
        "rec-a": ["住院病历 姓名：王某某 性别：男", "王某某于3月2日入院，主诉胸痛三天。"],
        "rec-b": ["住院病历 姓名：赵某某 性别：女", "赵某某主诉咳嗽咳痰一周，门诊随访。"],
    }
    question = "王某某和赵某某的入院时间分别是什么时候？"
    ledger = FakeLedger(docs)
    evidence = ledger_nodes(ledger, "rec-a:1:0", "rec-a:1:1", "rec-b:1:0", "rec-b:1:1")
    refused = EvidenceGate(ledger=ledger).decide(question, evidence)  # type: ignore[arg-type]
    assert refused.refused and refused.reason == "attribute_missing", refused.details
    lenient = EvidenceGate(ledger=ledger, valued_entity_quorum=0.5)  # type: ignore[arg-type]
    assert not lenient.decide(question, evidence).refused
    docs["rec-b"][1] = "赵某某于1月15日入院，主诉咳嗽咳痰一周。"
    ledger = FakeLedger(docs)
    evidence = ledger_nodes(ledger, "rec-a:1:0", "rec-a:1:1", "rec-b:1:0", "rec-b:1:1")
    assert not EvidenceGate(ledger=ledger).decide(question, evidence).refused  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "question",
    [
        "请分别阐述星河数据科技有限公司和蓝鲸物流有限公司的主营业务。",
        "分别描述一下星河数据科技有限公司和蓝鲸物流有限公司的主营业务。",
    ],
)
def test_openers_are_not_part_of_a_name(question: str) -> None:
    names = {e.text for e in analyze_question(question).entities}
    assert names == {"星河数据科技有限公司", "蓝鲸物流有限公司"}


def test_value_kinds_and_distributive_heads() -> None:
    sub = analyze_question("郝某某和蓝某某的出院时间分别是什么？").subquestions[0]
    assert sub.answer_type == "date"
    assert analyze_question("哪家公司的总资产更高？").subquestions[0].value == "money"
    assert analyze_question("王某某的兄弟姐妹有多少人？").subquestions[0].value == "count"
    assert analyze_question("赵某某的判决日期是什么时候？").subquestions[0].value == "day"


# ----- answer kinds named by the question (hours, a country, the members of a class) -----------
@pytest.mark.parametrize(
    ("question", "near_miss", "twin", "without"),
    [
        # "营业时间" asks the opening hours: a year by the word 营业 is no answer
        (
            "王某的便利店的营业时间是什么？",
            "王某自2019年3月起在青川市东湖路经营一家便利店，店铺营业至今，生意尚可。",
            "王某经营的便利店位于青川市东湖路，营业时间为早上8点至晚上10点。",
            {"value_kinds": ["money"]},
        ),
        # "去过哪些国家" asks countries: 国家 in "按国家计划接种疫苗" names none
        (
            "王某某在三年前去过哪些国家？",
            PATIENT + "小时候按国家计划接种疫苗。三年前去过外地旅游，无疫区居住史。",
            PATIENT + "三年前去过日本和泰国旅游，无疫区居住史。",
            {"value_kinds": ["money"]},
        ),
        # "员工人数" asks a number of people: a share or a count of sessions is none
        (
            "星河数据科技有限公司的员工人数是多少？",
            "星河数据科技有限公司重视员工发展，2022年员工满意度提升至85%，全年为员工组织培训12次。",
            "星河数据科技有限公司现有员工1200名，2022年员工满意度提升至85%。",
            {"value_kinds": ["money", "hours", "country"]},
        ),
        # "销售哪些电子产品" asks members of the class: "电子产品出口公司" names none
        (
            "熊某某的公司主要销售哪些电子产品？",
            "熊某某经营一家电子产品出口公司，2022年起通过虚报销项税额少缴税款25万元。",
            "熊某某经营的公司主要销售手机、平板电脑等电子产品，2022年起少缴税款25万元。",
            {"check_members": False},
        ),
    ],
)
def test_the_answer_kind_named_by_the_question(
    question: str, near_miss: str, twin: str, without: dict[str, object]
) -> None:
    refused = decide(question, near_miss)
    assert refused.refused and refused.reason == "answer_type_missing", refused.details
    passed = decide(question, twin)
    assert not passed.refused, passed.details
    assert not decide(question, near_miss, **without).refused  # what the rule adds


def test_answer_kind_analysis() -> None:
    assert analyze_question("王某的便利店的营业时间是什么？").subquestions[0].value == "hours"
    assert analyze_question("超市几点开门？").subquestions[0].value == "hours"
    assert analyze_question("王某参加工作时间是什么时候？").subquestions[0].value == ""
    assert analyze_question("王某某去过哪些国家？").subquestions[0].value == "country"
    assert analyze_question("X公司的员工人数是多少？").subquestions[0].value == "people"
    sub = analyze_question("熊某某的公司主要销售哪些电子产品？").subquestions[0]
    assert sub.members_of == "电子产品"
    # a verb phrase after 哪些 names no class ("哪些方式投资于碳抵消项目")
    sub = analyze_question("百和文化集团在2017年通过哪些方式投资于碳抵消项目？").subquestions[0]
    assert sub.members_of == ""


# ----- prison terms, values by a fuzzy head, values that name their attribute -------------------
def test_a_life_sentence_is_a_term() -> None:
    question = "王某和李某的判刑时间谁更长？"
    first = "被告人王某犯盗窃罪，判处有期徒刑三年，并处罚金五千元。"
    life = "被告人李某犯故意杀人罪，判处无期徒刑，剥夺政治权利终身。"
    assert not decide(question, first, life).refused
    vague = "被告人李某犯故意杀人罪，本院依法判处刑罚，剥夺政治权利终身。"
    refused = decide(question, first, vague)
    assert refused.refused, refused.details


def test_a_value_by_a_fuzzy_mention_of_the_head() -> None:
    """ "判刑时间" is answered by "判处有期徒刑五年"; the literal 判刑 of "原判刑罚" is elsewhere."""
    question = "王某的判刑时间是多长？"
    passage = (
        "被告人王某犯盗窃罪，判处有期徒刑五年，并处罚金人民币5000元。"
        "缓刑期内如有再犯，将撤销缓刑，执行原判刑罚。"
    )
    assert not decide(question, passage).refused
    assert decide(question, passage, fuzzy_spots=False).refused
    near_miss = "被告人王某犯盗窃罪，依法判处刑罚。缓刑期内如有再犯，将撤销缓刑，执行原判刑罚。"
    assert decide(question, near_miss).refused


@pytest.mark.parametrize(
    ("question", "near_miss", "twin"),
    [
        (
            "被告人倪某某的职业是什么？",
            "被告人：倪某某，女，1979年11月13日出生，汉族，住青川市玉门街86号。",
            "被告人：倪某某，女，1979年11月13日出生，汉族，某物流公司司机。",
        ),
        # the address follows the defendant 宋某, not his lawyer 钱某
        (
            "宋某的辩护人钱某的家庭住址是什么？",
            "被告人：宋某，男，住青川市玉门街86号。辩护人：钱某，青川律师事务所律师。",
            "被告人：宋某，男。辩护人：钱某，青川律师事务所律师，住青川市玉门街86号。",
        ),
    ],
)
def test_a_value_that_names_its_attribute(question: str, near_miss: str, twin: str) -> None:
    refused = decide(question, near_miss)
    assert refused.refused and refused.reason == "attribute_missing", refused.details
    passed = decide(question, twin)
    assert not passed.refused, passed.details
    assert decide(question, twin, value_cues=False).refused  # what the rule adds


def test_a_looked_up_entity_comes_from_the_named_court() -> None:
    """吕某某 is a defendant in the named court's judgment and a judge in another court's."""
    docs = {
        "other": [
            "青川市北湖区人民法院刑事判决书 被告人：李某，男。",
            "李某犯盗窃罪，判处拘役三个月。",
        ],
        "judge": [
            "青川市西湖区人民法院刑事判决书 审判员：吕某某 被告人：张某，男。",
            "被告人张某于2023年5月25日被依法逮捕，审判员吕某某审理本案。",
        ],
        "defendant": [
            "青川市东湖区人民法院刑事判决书 被告人：吕某某，男，住青川市。",
            "被告人吕某某犯故意杀人罪，判处无期徒刑。",
        ],
    }
    question = "根据青川市东湖区人民法院的判决书，吕某某的逮捕日期是什么时候？"
    ledger = FakeLedger(docs)
    evidence = ledger_nodes(ledger, "other:1:0", "other:1:1")
    refused = EvidenceGate(ledger=ledger).decide(question, evidence)  # type: ignore[arg-type]
    assert refused.refused, refused.details
    loose = EvidenceGate(ledger=ledger, scope_lookup=False)  # type: ignore[arg-type]
    assert not loose.decide(question, evidence).refused  # took the judge's document
    docs["defendant"][1] = "被告人吕某某于2023年3月1日被依法逮捕，犯故意杀人罪，判处无期徒刑。"
    ledger = FakeLedger(docs)
    evidence = ledger_nodes(ledger, "other:1:0", "other:1:1")
    assert not EvidenceGate(ledger=ledger).decide(question, evidence).refused  # type: ignore[arg-type]


# ----- what the question presupposes ---------------------------------------------------------------
REPORT = [
    "星河数据科技有限公司2021年度报告",
    "2021年3月，星河数据科技有限公司完成债务重组，通过债务重组减少负债2000万元。"
    "2021年9月，公司发生一起道德与诚信事件，涉及高管违规。",
    "2021年6月，公司召开股东大会，审议通过年度利润分配方案。",
]


# the event presupposed (数据泄露) and a twin the report holds (债务重组, 道德与诚信事件)
LEAK_QUESTIONS = [
    (
        "星河数据科技有限公司通过数据泄露事件减少了多少负债？",
        "星河数据科技有限公司通过债务重组减少了多少负债？",
    ),
    (
        "星河数据科技有限公司何时发生了数据泄露事件？",
        "星河数据科技有限公司何时发生了道德与诚信事件？",
    ),
]


@pytest.mark.parametrize(("near_miss", "twin"), LEAK_QUESTIONS)
def test_a_presupposed_event_no_document_mentions(near_miss: str, twin: str) -> None:
    """The entity's report is all there, with figures and dates; the event the question takes
    for granted (数据泄露) is in no chunk of the knowledge base."""

    def run(question: str, **settings: object):  # type: ignore[no-untyped-def]
        ledger = FakeLedger({"rep-a": REPORT})
        ledger.url = f"memory://gate-test-presupposed/{question}/{sorted(settings)}"  # own DFs
        gate = EvidenceGate(ledger=ledger, **settings)  # type: ignore[arg-type]
        return gate.decide(question, ledger_nodes(ledger, "rep-a:1:1"))

    refused = run(near_miss)
    assert refused.refused and refused.reason == "attribute_missing", refused.details
    assert refused.details["checks"][0]["absent_terms"] == ["泄露"]
    assert not run(twin).refused
    assert not run(near_miss, check_presupposed=False).refused  # what the rule adds


# another company's report: the only chunk of the knowledge base that mentions a data leak
LEAK_REPORT = [
    "蓝鲸物流有限公司2021年度报告",
    "2021年7月，蓝鲸物流有限公司发生一起数据泄露事件，约十万条客户信息外泄。",
    "2021年8月，蓝鲸物流有限公司启动仓储自动化改造，投入资金800万元。",
]
FILLER = [f"第{i}号公告：公司按计划召开例行经营会议，审议日常事项。" for i in range(5)]


def presupposed_run(
    question: str, docs: dict[str, list[str]], evidence: Sequence[str], **settings: object
):  # type: ignore[no-untyped-def]
    ledger = FakeLedger(docs)
    ledger.url = f"memory://gate-test-rare/{question}/{sorted(docs)}/{sorted(settings.items())}"
    gate = EvidenceGate(ledger=ledger, **settings)  # type: ignore[arg-type]
    return gate.decide(question, ledger_nodes(ledger, *evidence))


@pytest.mark.parametrize(("near_miss", "twin"), LEAK_QUESTIONS)
def test_a_presupposed_event_only_another_entity_mentions(near_miss: str, twin: str) -> None:
    """数据泄露 is in the knowledge base, but only in another company's report: a word this rare
    in the corpus that the entity's documents (all read) do not hold is not there to answer
    from. Where the word is common in the corpus it is not judged: the corpus's own label for
    such events, which an entity's report may word otherwise."""
    docs = {"rep-a": REPORT, "rep-b": LEAK_REPORT, "fill": FILLER}  # 泄露: 1 of 11 chunks
    refused = presupposed_run(near_miss, docs, ["rep-a:1:1"], presupposed_max_share=0.1)
    assert refused.refused and refused.reason == "attribute_missing", refused.details
    assert refused.details["checks"][0]["absent_terms"] == ["泄露"]
    assert not presupposed_run(twin, docs, ["rep-a:1:1"], presupposed_max_share=0.1).refused
    # what the rule adds: only the words no chunk holds (the rule before it)
    assert not presupposed_run(near_miss, docs, ["rep-a:1:1"], presupposed_max_share=0).refused
    # 数据泄露 in 3 of 13 chunks: no rare word, not judged
    common = {**docs, "rep-c": LEAK_REPORT[1:], "rep-d": LEAK_REPORT[1:2]}
    assert not presupposed_run(near_miss, common, ["rep-a:1:1"], presupposed_max_share=0.1).refused


def test_a_rare_presupposed_word_is_matched_within_a_list_item() -> None:
    """ "否认高血压、糖尿病" holds the chars of 血糖 in order, across two items of a list: no loose
    mention of the blood sugar another patient's record gives."""
    from rag_app.postprocess.gate import Passage

    history = Passage(None, "既往史：否认高血压、糖尿病病史。", "rec", 0)
    assert history.match("血糖", 0.75) == 0.75  # the coverage checks' loose match
    assert history.match("血糖", 0.75, clause=True) == 0.0
    # within one item the loose match stays ("空腹血浆葡萄糖" ~ 血糖)
    assert (
        Passage(None, "空腹血浆葡萄糖7.8mmol/L", "rec", 0).match("血糖", 0.75, clause=True) == 0.75
    )
    docs = {
        "r-a": [
            "住院病历 姓名：王某某 性别：男 年龄：45岁",
            "既往史：否认高血压、糖尿病病史。入院查体：体温36.6℃，血压130/80mmHg。",
        ],
        "r-b": ["住院病历 姓名：李某 性别：女 年龄：60岁", "辅助检查：空腹血糖7.8mmol/L。"],
        "r-c": ["住院病历 姓名：张某 性别：女 年龄：30岁", "入院查体：体温37.2℃，血压120/70mmHg。"],
    }
    near_miss = presupposed_run(
        "王某某的血糖是多少？", docs, ["r-a:1:1"], presupposed_max_share=0.2
    )
    assert near_miss.refused and near_miss.reason == "attribute_missing", near_miss.details
    assert near_miss.details["checks"][0]["absent_terms"] == ["血糖"]
    assert not presupposed_run("王某某的血压是多少？", docs, ["r-a:1:1"]).refused


def test_a_lay_question_words_its_situation_itself() -> None:
    """ "…有牵连，人民法院会怎么处理": a how (yes/no, why) question lays out the asker's situation in
    their own words; a rare one of them (牵连, held by another statute) missing from the named
    institution's documents is no near miss (only the words no chunk holds are checked there)."""
    loan = [
        "最高人民法院关于审理民间借贷案件适用法律若干问题的规定",
        "人民法院立案后，发现民间借贷行为本身涉嫌非法集资犯罪的，应当裁定驳回起诉，并将涉嫌非法"
        "集资犯罪的线索、材料移送公安或者检察机关。",
        "人民法院立案后，发现与民间借贷纠纷案件虽有关联但不是同一事实的涉嫌非法集资等犯罪的线索、"
        "材料的，人民法院应当继续审理民间借贷纠纷案件，依法处理借贷款项。",
    ]
    docs = {"loan": loan, "cpl": ["刑事诉讼法", "与本案有牵连的其他犯罪嫌疑人，可以并案处理。"]}
    docs["fill"] = FILLER
    question = (
        "民间借贷中的款项与非法集资犯罪有牵连，但其本身并非非法集资犯罪款项的情况，人民法院会怎么"
        "处理呢？"
    )
    evidence = ["loan:1:1", "loan:1:2"]
    passed = presupposed_run(question, docs, evidence, presupposed_max_share=0.2)
    assert not passed.refused, passed.details
    strict = presupposed_run(question, docs, evidence, presupposed_max_share=0.2, lay_types=[])
    assert strict.refused and strict.details["checks"][0]["absent_terms"] == ["牵连"]


def test_a_reporting_verb_is_not_presupposed() -> None:
    """ "报告中提到的股东大会" presupposes a report about the meeting; 提到 itself is no fact the
    report must word that way (no chunk here holds it)."""
    docs = {"rep-a": REPORT, "rep-b": LEAK_REPORT}
    question = "星河数据科技有限公司在年度报告中提到的股东大会是何时召开的？"
    passed = presupposed_run(question, docs, ["rep-a:1:2"])
    assert not passed.refused, passed.details
    near_miss = "星河数据科技有限公司在年度报告中提到的罢工事件减少了多少负债？"
    refused = presupposed_run(near_miss, docs, ["rep-a:1:1"])
    assert refused.refused and refused.details["checks"][0]["absent_terms"] == ["罢工"]


def test_a_predicate_verb_is_not_presupposed() -> None:
    """ "被判定犯了什么罪": the asked verb is the text's to word (判处), unlike an event noun."""
    ledger = FakeLedger(
        {
            "j-a": [
                "刑事判决书 被告人王某某，男，1980年出生。",
                "被告人王某某犯盗窃罪，判处有期徒刑三年，并处罚金五千元。",
            ]
        }
    )
    ledger.url = "memory://gate-test-predicate"
    evidence = ledger_nodes(ledger, "j-a:1:0", "j-a:1:1")
    decision = EvidenceGate(ledger=ledger).decide("王某某被判定犯了什么罪？", evidence)  # type: ignore[arg-type]
    assert not decision.refused, decision.details


# ----- legal questions that name no entity -------------------------------------------------------
FALLING = (
    "建筑物、构筑物或者其他设施及其搁置物、悬挂物发生脱落、坠落造成他人损害，所有人、管理人或者"
    "使用人不能证明自己没有过错的，应当承担侵权责任。被侵权人有权请求赔偿。"
)
NEIGHBOURS = (
    "不动产的相邻权利人应当按照有利生产、方便生活的原则，正确处理相邻关系。"
    "建造建筑物，不得妨碍相邻建筑物的通风、采光和日照。"
)
PARCEL = "快递包裹在寄递过程中丢失、损毁的，快递公司应当按照约定或者保价金额向寄件人赔偿。"
PORTRAIT = (
    "未经肖像权人同意，不得制作、使用、公开肖像权人的肖像，但是为实施新闻报道，"
    "不可避免地制作、使用、公开肖像权人的肖像的，可以不经肖像权人同意。"
)


def test_a_polar_question_asks_its_last_clause() -> None:
    """ "…，可以请求赔偿吗？" without a question word: a yes/no question about the 吗-clause, the
    clauses before it are the scene (not a 'what' question about every word at full weight)."""
    question = "墙砖脱落砸伤行人，可以请求赔偿吗？"
    sub = analyze_question(question).subquestions[0]
    assert sub.answer_type == "yesno" and sub.head == ["请求", "赔偿"]
    # passes on its own, without the entity-less rule (the scene is context now)
    assert not decide(question, FALLING, entityless_types=[]).refused
    # a yes/no question on evidence about something else
    off_topic = decide(question, SERVER, CONTRACT)
    assert off_topic.refused and off_topic.reason == "low_coverage", off_topic.details
    # a polar question naming an entity: its evidence must still hold the asked predicate
    named = "王某某住院期间，可以报销医药费吗？"
    refused = decide(named, PATIENT)
    assert refused.refused and refused.reason == "attribute_missing", refused.details
    assert not decide(named, PATIENT + "王某某住院期间的医药费可以按规定报销。").refused


def test_what_to_do_is_no_question_about_do() -> None:
    """ "怎么办" is one question word, not 怎么 + the head 办."""
    sub = analyze_question("邻居违章搭建的大棚妨碍通风，怎么办？").subquestions[0]
    assert sub.answer_type == "how" and "办" not in sub.head and "办" not in sub.attribute


@pytest.mark.parametrize(
    ("question", "evidence"),
    [
        ("楼栋外墙的墙砖脱落，把我砸伤了，可以要求赔偿吗？", FALLING),
        ("邻居违章搭建的大棚妨碍通风，怎么办？", NEIGHBOURS),
    ],
)
def test_an_entityless_legal_question_needs_no_attribute_passage(
    question: str, evidence: str
) -> None:
    """No name, organisation, date or title in the question: a yes/no or how question has no
    "entity there, attribute missing" near miss, and the statute words the lay facts differently.
    The overall question coverage still guards against off-topic evidence."""
    assert not analyze_question(question).entities
    passed = decide(question, evidence)
    assert not passed.refused, passed.details
    refused = decide(question, evidence, entityless_types=[])  # what the rule adds
    assert refused.refused and refused.reason == "attribute_missing", refused.details
    off_topic = decide(question, SERVER, PATIENT)
    assert off_topic.refused and off_topic.reason == "low_coverage", off_topic.details


def test_a_named_entity_keeps_the_attribute_check() -> None:
    """The same kind of yes/no question about a named patient: the record without the asked
    detail is a near miss, whatever ``entityless_types`` says."""
    question = "王某某住院期间，可以报销医药费吗？"
    refused = decide(question, PATIENT, entityless_types=["yesno", "how", "reason", "what"])
    assert refused.refused and refused.reason == "attribute_missing", refused.details


@pytest.mark.parametrize(
    ("question", "names"),
    [
        ("寄东西给朋友，但是快递公司把东西搞丢了，可以要求快递公司赔偿吗？", []),
        ("包裹被快递公司弄丢了，可以要求蓝鲸物流有限公司赔偿吗？", ["蓝鲸物流有限公司"]),
        ("新闻直播上，公开某犯罪份子的肖像，是否属于侵权行为？", []),
        ("我路过某栋楼时被砸伤，可以要求赔偿吗？", []),
        ("原告和田某某签订了借款合同，借款金额是多少？", ["田某某"]),
        ("被告对白某某实施了殴打，判处了什么刑罚？", ["白某某"]),
        ("经过梁某家门口时被狗咬伤，可以要求赔偿吗？", ["梁某"]),
    ],
)
def test_entity_spans_without_clause_words(question: str, names: list[str]) -> None:
    """An organisation span loses the verb it swallowed ("要求快递公司"), a class of organisations
    ("快递公司") is no name; "公开某", "路过某栋" are no persons, "和田某某", "对白某某" still are."""
    assert [e.text for e in analyze_question(question).entities] == names


def test_a_class_of_organisations_is_not_looked_for() -> None:
    question = "寄东西给朋友，但是快递公司把东西搞丢了，可以要求快递公司赔偿吗？"
    passed = decide(question, PARCEL)
    assert not passed.refused, passed.details
    # a named company after the same verb is still an entity the evidence must hold
    named = "包裹被快递公司弄丢了，可以要求蓝鲸物流有限公司赔偿吗？"
    refused = decide(named, PARCEL)
    assert refused.refused and refused.reason == "entity_missing", refused.details
    assert refused.details["missing_entities"] == ["蓝鲸物流有限公司"]
    assert not decide(named, PARCEL, CONTRACT).refused
    # "公开某犯罪份子" names nobody; on unrelated evidence the question is still refused
    portrait = "新闻直播上，公开某犯罪份子的肖像，是否属于侵权行为？"
    assert not decide(portrait, PORTRAIT).refused
    off_topic = decide(portrait, SERVER)
    assert off_topic.refused and off_topic.reason == "low_coverage", off_topic.details


DISTRESS = "侵害他人人身权益造成严重精神损害的，被侵权人有权请求精神损害赔偿。"
DEPOSIT = "承租人应当按照约定支付租金；出租人不退还的，承租人可以要求返还。"
WAREHOUSE = "仓储合同是保管人储存存货人交付的仓储物，存货人支付仓储费的合同。"
COMMISSION = "行纪合同是行纪人以自己的名义为委托人从事贸易活动，委托人支付报酬的合同。"


def test_a_lay_question_is_covered_by_its_nouns() -> None:
    """An entity-less lay question weighs its words by part of speech in the overall coverage:
    the statute names what is asked (精神损害赔偿), not the asker's account (养, 打伤)."""
    question = "家里养的宠物被邻居打伤了，主人能否要求精神损害赔偿？"
    passed = decide(question, DISTRESS)
    assert not passed.refused, passed.details
    plain = decide(question, DISTRESS, lay_coverage_by_pos=False)  # what the rule changes
    assert plain.refused and plain.reason == "low_coverage", plain.details
    off_topic = decide(question, SERVER, CONTRACT)
    assert off_topic.refused and off_topic.reason == "low_coverage", off_topic.details
    # the near miss: the verbs are there (退, 要求, 支付), the asked nouns (押金, 违约金) are not
    near_miss = decide("房东不退押金，可以要求支付违约金吗？", DEPOSIT)
    assert near_miss.refused and near_miss.reason == "low_coverage", near_miss.details


def test_a_rule_is_timed_by_an_event() -> None:
    """ "仓储合同什么时候成立" names no entity: the statute answers with an event ("自…时"); a
    passage without one is still a near miss, and so is a named entity's contract (a date)."""
    timed = WAREHOUSE + "仓储合同自保管人和存货人意思表示一致时成立。"
    assert not decide("仓储合同什么时候成立？", timed).refused
    strict = decide("仓储合同什么时候成立？", timed, event_times=False)
    assert strict.refused and strict.reason == "answer_type_missing", strict.details
    untimed = decide("仓储合同什么时候成立？", WAREHOUSE)
    assert untimed.refused and untimed.reason == "answer_type_missing", untimed.details
    named = decide(
        "蓝鲸物流有限公司的仓储合同什么时候成立？",
        "蓝鲸物流有限公司与存货人签订仓储合同，合同自双方意思表示一致时成立。",
    )
    assert named.refused and named.reason == "answer_type_missing", named.details


def test_an_entityless_question_asking_several_things_needs_a_share() -> None:
    """ "什么是X？X的形式是什么？": without an entity, half of the sub-questions answered by a
    passage is enough; a yes/no sub-question let through by ``entityless_types`` alone is not,
    and about a named entity every sub-question still counts."""
    question = "什么是行纪合同？行纪合同的形式是什么？"
    assert not decide(question, COMMISSION).refused
    strict = decide(question, COMMISSION, general_subquestion_quorum=1.0)
    assert strict.refused and strict.reason == "attribute_missing", strict.details
    unfounded = decide("什么是行纪合同？行纪合同可以口头订立吗？", SERVER)
    assert unfounded.refused and unfounded.reason == "attribute_missing", unfounded.details
    named = decide("王某某的血型是什么？王某某的爱好是什么？", PATIENT_WITH_HOBBY)
    assert named.refused and named.reason == "attribute_missing", named.details


@pytest.mark.parametrize(
    ("question", "names"),
    [
        ("可以注册“热词”“名人姓名”商标吗？", []),
        ("对于具有“内部性”“非终局性”特征的过程性信息，我可以申请信息公开吗？", []),
        ("在不同保险公司为同一物品购买的多份保险有效吗？保险公司如何理赔？", []),
        ("运输公司把东西弄丢了可以同时请求运输公司承担责任吗？", []),
        ("和供电/供热/供气/热力公司约定给园区供热，居民区可以用吗？", []),
        ("违反了《个人贷款管理暂行办法》，借款合同有效吗？", ["个人贷款管理暂行办法"]),
        (
            "上海纺织（集团）有限公司在2019年有没有出现债务违约的情况？",
            ["上海纺织(集团)有限公司", "2019"],
        ),
    ],
)
def test_quotes_and_sentence_marks_make_no_names(question: str, names: list[str]) -> None:
    """ "“热词”" is a word in quotes, not a title (《…》 is); no name spans a question mark,
    a slash or a quote ("？保险公司", "“非终局"), nor keeps two clause words ("同时请求运输公司")."""
    assert [e.text for e in analyze_question(question).entities] == names


def test_a_quoted_word_is_no_entity_to_look_up() -> None:
    trademark = "申请注册的商标，不得与他人在先取得的合法权利相冲突，不得以不正当手段抢先注册。"
    passed = decide("可以注册“热词”商标吗？", trademark)
    assert not passed.refused, passed.details
    titled = decide("根据《星河商标管理办法》，可以注册热词商标吗？", trademark)
    assert titled.refused and titled.reason == "entity_missing", titled.details


# ----- record near misses: the asked verb, the effect and the reason -------------------------
CONVICT = (
    "被告人赵某，男，1980年5月出生，汉族，住青川市玉门街86号。赵某因犯盗窃罪，"
    "于2023年3月1日被刑事拘留，同年3月8日被逮捕，本院判处其有期徒刑三年。"
)
INPATIENT = (
    "患者王某某，男，45岁，教师，因反复胸痛三天住院治疗。住院后完善心电图检查，"
    "给予抗血小板治疗，病情稳定，症状明显缓解。"
)


@pytest.mark.parametrize(
    ("question", "near_miss", "twin"),
    [
        # a yes/no question asks its verb: 减刑 must be there
        ("赵某是否获得了减刑？", CONVICT, CONVICT + "服刑期间赵某确有悔改表现，获得减刑六个月。"),
        # "住院期间" is when; 陪护 is asked
        ("王某某住院期间由谁陪护？", INPATIENT, INPATIENT + "住院期间由其妻子陪护。"),
        # a noun of the predicate is no paraphrase of its verb
        ("赵某被羁押在哪个看守所？", CONVICT, CONVICT + "赵某现羁押于青川市第一看守所。"),
    ],
)
def test_the_verb_of_a_record_question_is_asked(question: str, near_miss: str, twin: str) -> None:
    """A predicate of verbs only is not waved through because the passage names the entity:
    the verb (and any noun with it) must be there, loosely."""
    refused = decide(question, near_miss)
    assert refused.refused and refused.reason == "attribute_missing", refused.details
    passed = decide(question, twin)
    assert not passed.refused, passed.details


def test_a_linking_verb_before_a_class_is_not_asked() -> None:
    """ "在哪个法院受审", "属于哪个行业": an individual of a class is asked; the verb only links it
    (the text says 审理, 从事); so does the verb of a lay question about a situation."""
    court = "赵某盗窃一案，由青川市桐城区人民法院于2023年9月1日公开开庭审理。"
    assert not decide("赵某在哪个法院受审？", court).refused
    airline = "云翼航空有限公司主要从事国内航空客运业务，拥有客机32架。"
    assert not decide("云翼航空有限公司属于哪个行业？", airline).refused
    # without the entity the question is still refused
    assert decide("赵某在哪个法院受审？", airline).refused


@pytest.mark.parametrize(
    ("question", "near_miss", "twin"),
    [
        (
            "王某某的病情对其工作有何影响？",
            INPATIENT + "患者职业为教师，工作压力适中。",
            INPATIENT + "患者职业为教师，因胸痛频繁发作，目前无法正常工作。",
        ),
        (
            "王某某的胸痛是否会影响他的睡眠？",
            INPATIENT + "患者平素睡眠正常。",
            INPATIENT + "患者夜间胸痛发作，严重影响睡眠。",
        ),
    ],
)
def test_an_effect_question_needs_the_effect(question: str, near_miss: str, twin: str) -> None:
    """ "A对B有何影响": a record naming A and B apart states no effect of one on the other."""
    refused = decide(question, near_miss)
    assert refused.refused and refused.reason == "answer_type_missing", refused.details
    passed = decide(question, twin)
    assert not passed.refused, passed.details
    assert not decide(question, near_miss, check_effects=False).refused  # what the rule adds


@pytest.mark.parametrize(
    ("question", "near_miss", "twin"),
    [
        (
            "赵某上诉的理由是什么？",
            CONVICT + "如不服本判决，可在接到判决书的第二日起十日内提出上诉。",
            CONVICT + "赵某不服，提出上诉，认为原判量刑过重。",
        ),
        (
            "王某某为什么没有按时服药？",
            INPATIENT + "出院后继续按时服药，定期复查。",
            INPATIENT + "住院第二天因恶心呕吐未能按时服药。",
        ),
    ],
)
def test_a_reason_question_needs_a_reason(question: str, near_miss: str, twin: str) -> None:
    """ "X为什么…", "…的理由是什么" about a named person: a sentence with the asked words gives a
    cause; the judgment's notice of the right to appeal gives none."""
    refused = decide(question, near_miss)
    assert refused.refused and refused.reason == "answer_type_missing", refused.details
    passed = decide(question, twin)
    assert not passed.refused, passed.details
    assert not decide(question, near_miss, check_effects=False).refused  # what the rule adds


def test_a_time_frame_is_context() -> None:
    """ "住院期间由谁陪护": 住院 says when, it is not what is asked."""
    sub = analyze_question("王某某住院期间由谁陪护？").subquestions[0]
    assert sub.pos["住院"] < 1.0 and "陪护" in sub.head


def test_the_phrase_after_the_question_word_is_a_noun() -> None:
    """ "有哪些兴趣爱好": 兴趣爱好 is what is asked (the tagger calls it a verb), so a record that
    only shares 平时 with the question does not answer it."""
    question = "王某某平时有哪些兴趣爱好？"
    sub = analyze_question(question).subquestions[0]
    assert sub.pos["兴趣爱好"] == 1.0
    near_miss = INPATIENT + "患者平时较少生病。"
    refused = decide(question, near_miss)
    assert refused.refused and refused.reason == "attribute_missing", refused.details
    passed = decide(question, near_miss + "患者的兴趣爱好包括钓鱼和登山。")
    assert not passed.refused, passed.details


# ----- company reports: compounds, compared noun phrases, numbers of people -----------------------
ENV_REPORT = [
    "星河数据科技有限公司2021年度报告",
    "2021年5月，星河数据科技有限公司完成环保设施升级改造，废水排放达标率提升至99%。",
    "2021年10月，公司推出员工职业成长计划，覆盖全体员工。",
]
# judgments: 处罚 is common in this knowledge base, so it is no rare word
PENALTIES = [f"第{i}号判决书：被告人依法受到刑事处罚，并处罚金一万元。" for i in range(6)]


@pytest.mark.parametrize(
    ("near_miss", "twin", "added", "absent"),
    [
        (
            "星河数据科技有限公司何时受到了环保处罚？",
            "星河数据科技有限公司何时完成了环保设施升级？",
            "2021年8月，公司因废水超标受到环保处罚，罚款20万元。",
            "处罚",
        ),
        (
            "星河数据科技有限公司何时实施了员工持股计划？",
            "星河数据科技有限公司何时推出了员工职业成长计划？",
            "2021年11月，公司实施员工持股计划，覆盖核心骨干。",
            "持股",
        ),
    ],
)
def test_the_verb_of_a_noun_verb_compound_must_be_there(
    near_miss: str, twin: str, added: str, absent: str
) -> None:
    """ "受到了环保处罚", "员工持股计划": the verb right after a noun makes one compound with it,
    so the report must hold it (loosely) however common it is in the corpus (处罚 in every
    judgment); the report's 环保 and 计划 alone do not answer."""
    docs = {"rep-a": ENV_REPORT, "pen": PENALTIES}
    refused = presupposed_run(near_miss, docs, ["rep-a:1:1", "rep-a:1:2"])
    assert refused.refused and refused.reason == "attribute_missing", refused.details
    assert refused.details["checks"][0]["absent_terms"][0] == absent  # (员工持股计划 too)
    assert not presupposed_run(twin, docs, ["rep-a:1:1", "rep-a:1:2"]).refused
    full = {"rep-a": [*ENV_REPORT, added], "pen": PENALTIES}
    assert not presupposed_run(near_miss, full, ["rep-a:1:1", "rep-a:1:3"]).refused
    # a modifier before a noun is paraphrased ("绿色产品" ~ "环保型产品", "防止污染设施" ~
    # "污染防治设施"): not checked
    from rag_app.postprocess.gate import _compound_members

    for question in ("X公司何时开发了绿色产品？", "X公司在哪一年建立了防止污染设施？"):
        assert _compound_members(analyze_question(question).subquestions[0]) == []


def test_the_compared_phrase_after_de_is_a_noun_phrase() -> None:
    """ "比较A和B的海外收入占比": 海外收入占比 is what is compared (the tagger calls 收入 and 占 verbs),
    so reports that give only their revenue and other shares do not answer it; an adjective of
    the phrase stays paraphrasable ("重大投资时间" ~ "投资了…")."""
    question = (
        "比较星河数据科技有限公司和蓝鲸物流有限公司的海外收入占比，哪家公司的海外收入占比更高？"
    )
    sub = analyze_question(question).subquestions[0]
    assert sub.pos["海外"] == 1.0 and sub.pos["收入"] == 1.0
    first = "星河数据科技有限公司2021年营业收入为5亿元，同比增长15%，毛利率为30%。"
    second = "蓝鲸物流有限公司2021年营业收入为8亿元，同比增长12%，净利率为6%。"
    refused = decide(question, first, second)
    assert refused.refused and refused.reason == "attribute_missing", refused.details
    passed = decide(
        question,
        first + "其中海外收入占比为40%。",
        second + "海外收入占比为25%。",
    )
    assert not passed.refused, passed.details
    sub = analyze_question(
        "比较星河数据科技有限公司和蓝鲸物流有限公司的重大投资时间，哪家公司的重大投资时间更早？"
    ).subquestions[0]
    assert sub.pos["重大"] < 1.0


def test_a_number_of_staff_is_a_number_of_people() -> None:
    """ "研发人员数量" asks how many people: a report that names its research staff and gives
    only money and shares near them does not answer."""
    question = "星河数据科技有限公司的研发人员数量是多少？"
    assert analyze_question(question).subquestions[0].value == "people"
    near_miss = (
        "星河数据科技有限公司加大研发投入，研发人员数量持续增长，研发费用达3000万元，同比增长20%。"
    )
    refused = decide(question, near_miss)
    assert refused.refused and refused.reason == "answer_type_missing", refused.details
    passed = decide(question, near_miss + "截至年底，公司研发人员共有320名。")
    assert not passed.refused, passed.details


# ----- what belongs to somebody else: an owned noun, the scope's organisation --------------------
RECORD_LINES = (
    "住院病历\n姓名：王某某\n性别：男\n职业：教师\n住址：青川市玉门街86号\n"
    "个人史：平时驾驶汽车上班。\n查体：皮肤颜色正常。\n"
    "婚育史：已婚，配偶体健。\n家族史：父亲有高血压病史，兄弟姐妹体健。"
)


def record_run(question: str, record: str, **settings: object):  # type: ignore[no-untyped-def]
    """The record as one chunk among fillers (the owned nouns are rare: a real IDF)."""
    docs = {"rec": [record], "fill": FILLER * 3}
    return presupposed_run(question, docs, ["rec:1:0"], **settings)


@pytest.mark.parametrize(
    ("question", "twin_line"),
    [
        ("王某某的兄弟姐妹的职业是什么？", "\n家族史补充：其兄弟姐妹职业均为农民。"),
        ("王某某的父亲的职业是什么？", "\n家族史补充：父亲职业为退休工人。"),
        ("王某某的配偶在哪里工作？", "\n婚育史补充：配偶在青川市第一中学工作。"),
        ("王某某的汽车是什么颜色的？", "\n个人史补充：其汽车颜色为白色。"),
    ],
)
def test_an_owned_thing_and_its_attribute_share_a_line(question: str, twin_line: str) -> None:
    """ "X的兄弟姐妹的职业", "X的配偶在哪里工作", "X的汽车是什么颜色": what is asked belongs to the
    owned thing, so one sentence or record line must name both; the record's other lines give X's
    own 职业 and 住址 ("兄弟姐妹体健" is on the family line, 颜色 on the examination's)."""
    refused = record_run(question, RECORD_LINES)
    assert refused.refused and refused.reason == "attribute_missing", refused.details
    assert not record_run(question, RECORD_LINES, subject_sentence=False).refused  # the rule's part
    passed = record_run(question, RECORD_LINES + twin_line)
    assert not passed.refused, passed.details
    # X's own attribute is still answered from its line
    assert not record_run("王某某的职业是什么？", RECORD_LINES).refused


def test_the_owner_before_the_question_word() -> None:
    """The noun between 的 and 是什么 (a noun follows) or 在哪里 (a verb follows) owns what is
    asked; a plain "X的注册地址是什么" has no owner."""
    subject = {
        q: analyze_question(q).subquestions[0].subject
        for q in (
            "王某某的汽车是什么颜色的？",
            "王某某的配偶在哪里工作？",
            "王某某的职业是什么？",
            "星河数据科技有限公司的注册地址是什么？",
        )
    }
    assert subject["王某某的汽车是什么颜色的？"] == ["汽车"]
    assert subject["王某某的配偶在哪里工作？"] == ["配偶"]
    assert subject["王某某的职业是什么？"] == []
    assert "注册" not in subject["星河数据科技有限公司的注册地址是什么？"]


COURT_DOCS = {
    "j-a": [
        "青川市桐城区人民法院刑事判决书",
        "被告人赵某，男，1980年5月出生，住青川市棉花街72号。",
        "被告人赵某犯盗窃罪，判处有期徒刑三年。青川市桐城区人民法院审判长李某，住青川市棉花街。",
    ],
    "j-b": [
        "青川市东湖区人民法院刑事判决书",
        "青川市东湖区人民法院院长王某签发。青川市市花为月季。被告人钱某犯诈骗罪，判处有期徒刑二年。",
    ],
    "fill": FILLER,
}


@pytest.mark.parametrize(
    ("question", "absent"),
    [
        ("根据青川市桐城区人民法院的判决书，青川市桐城区人民法院的院长是谁？", "院长"),
        ("根据青川市桐城区人民法院的判决书，青川市的市花是什么？", "市花"),
    ],
)
def test_a_question_about_the_scope_organisation_presupposes_from_its_documents(
    question: str, absent: str
) -> None:
    """ "根据X法院的判决书，X法院的院长是谁": nobody is named but the scope's court, so its
    judgments stand for the entity's documents: a rare noun they do not hold is not there to
    answer from. A two-char noun matches as written ("法院审判长" holds no 院长, "青川市棉花街"
    no 市花: the coverage checks' loose match finds both); the other court's judgment has them."""
    refused = presupposed_run(question, COURT_DOCS, ["j-a:1:2"], presupposed_max_share=0.2)
    assert refused.refused and refused.reason == "attribute_missing", refused.details
    assert refused.details["checks"][0]["absent_terms"] == [absent]
    loose = presupposed_run(question, COURT_DOCS, ["j-a:1:2"], check_presupposed=False)
    assert not loose.refused, loose.details  # what the rule adds
    twin = question.replace("桐城区", "东湖区")
    passed = presupposed_run(twin, COURT_DOCS, ["j-b:1:1"], presupposed_max_share=0.2)
    assert not passed.refused, passed.details


def test_a_verb_is_matched_loosely_a_noun_tightly() -> None:
    """ "判刑时间" is worded "判处有期徒刑" (a verb: chars apart), "院长" is not in "法院…审判长"."""
    from rag_app.postprocess.gate import Passage

    passage = Passage(None, "本院判处被告人有期徒刑三年，审判长李某。", "j", 0)
    assert passage.match("判刑", 0.75, clause=True, tight=True) == 0.0
    assert Passage(None, "判处徒刑三年", "j", 0).match("判刑", 0.75, clause=True) == 0.75
    assert passage.match("院长", 0.75, clause=True, tight=True) == 0.0
    assert Passage(None, "院长王某", "j", 0).match("院长", 0.75, clause=True, tight=True) == 1.0


CFO_REPORT = [
    "星河数据科技有限公司2021年度报告",
    "公司首席执行官张某主持经营工作，财务总监王某负责财务管理。2021年公司变更了会计估计，"
    "并修订了信息披露政策。",
]
CFO_OTHER = ["蓝鲸物流有限公司2021年度报告", "蓝鲸物流有限公司首席财务官李某于2021年3月到任。"]


@pytest.mark.parametrize(
    ("near_miss", "twin"),
    [
        ("星河数据科技有限公司的首席财务官是谁？", "星河数据科技有限公司的财务总监是谁？"),
        ("星河数据科技有限公司何时变更了会计政策？", "星河数据科技有限公司何时变更了会计估计？"),
    ],
)
def test_a_rare_noun_compound_must_be_in_the_entity_documents(near_miss: str, twin: str) -> None:
    """ "首席财务官", "会计政策": each word is common (首席执行官, 财务总监, 会计估计), the thing the
    compound names is not; a compound this rare in the KB must be in the entity's documents with
    its chars in order (not just some of its bigrams). An attribute of an event ("决议时间",
    "融资金额") is no such compound: the text words it as it likes."""
    from rag_app.postprocess.gate import _compound_noun

    docs = {"rep-a": CFO_REPORT, "rep-b": CFO_OTHER, "fill": FILLER * 3}
    refused = presupposed_run(near_miss, docs, ["rep-a:1:1"], presupposed_max_share=0.1)
    assert refused.refused and refused.reason == "attribute_missing", refused.details
    sub = analyze_question(near_miss).subquestions[0]
    assert refused.details["checks"][0]["absent_terms"][-1] == _compound_noun(sub)
    off = presupposed_run(
        near_miss, docs, ["rep-a:1:1"], presupposed_max_share=0.1, check_compounds=False
    )
    assert not off.refused, off.details  # what the rule adds
    passed = presupposed_run(twin, docs, ["rep-a:1:1"], presupposed_max_share=0.1)
    assert not passed.refused, passed.details
    assert _compound_noun(analyze_question("A公司股东大会决议的时间是什么？").subquestions[0]) == ""


def test_the_class_after_a_question_word_is_no_organisation() -> None:
    """ "是哪家律师事务所的律师", "哪个医院": the organisation class after a question word is what
    the answer is one of, not a name to look up (it was "家律师事务所", entity_missing)."""
    question = "根据青川市桐城区人民法院的判决书，赵某的辩护人是哪家律师事务所的律师？"
    names = [e.text for e in analyze_question(question).entities]
    assert names == ["青川市桐城区人民法院", "赵某"]
    judgment = (
        "青川市桐城区人民法院刑事判决书\n被告人赵某，男，1980年5月出生。\n"
        "辩护人：钱某，青川市正义律师事务所律师。"
    )
    passed = decide(question, judgment)
    assert not passed.refused, passed.details
    without = decide(question, judgment.replace("辩护人：钱某，青川市正义律师事务所律师。", ""))
    assert without.refused and without.reason == "attribute_missing", without.details


def test_the_verb_after_an_organisation_class_is_the_predicate() -> None:
    """ "在哪个律师事务所执业": the class is a kind of organisation (律师事务所, all of it) and the
    one word after it is the predicate whatever the tagger says (执业 is tagged a noun): it is
    the text's to word ("X律师事务所律师"). "哪家公司的排放量更高" keeps its asked noun."""
    question = "根据青川市桐城区人民法院的判决书，赵某的辩护人在哪个律师事务所执业？"
    sub = analyze_question(question).subquestions[0]
    assert sub.pos["执业"] < 1.0 and "事务所" not in sub.head
    judgment = (
        "青川市桐城区人民法院刑事判决书\n被告人赵某，男，1980年5月出生。\n"
        "辩护人：钱某，青川市正义律师事务所律师。"
    )
    passed = decide(question, judgment)
    assert not passed.refused, passed.details
    compared = analyze_question("哪家公司的二氧化碳排放量更高？").subquestions[0]
    assert compared.pos.get("排放量", 1.0) >= 1.0


def test_an_event_before_qian_after_zai_is_a_time_frame() -> None:
    """ "在入院前一周去过哪些城市": 入院 only says when (as "住院期间"), so a record that names the
    admission but no travel does not answer; one that tells the trip does."""
    question = "王某某在入院前一周去过哪些城市？"
    sub = analyze_question(question).subquestions[0]
    assert sub.pos["入院"] < 1.0
    admitted = "患者王某某，男，45岁，教师，因反复胸痛三天入院。入院后完善心电图检查，病情稳定。"
    refused = decide(question, admitted)
    assert refused.refused, refused.details
    passed = decide(question, admitted + "患者入院前一周曾去过上海、杭州出差。")
    assert not passed.refused, passed.details
