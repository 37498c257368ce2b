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
    assert decision.refused and decision.reason == "attribute_missing"


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
