"""The answer path on a real KB: scopes in both branches, keyword consistency, neighbours, LLM mode."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest
from llama_index.core.schema import NodeWithScore, QueryBundle

from rag_app import KnowledgeBase
from rag_app.postprocess.neighbors import NeighborExpansion
from rag_app.retrieval.record import record_of
from rag_app.synthesis.citations import clean_markers
from rag_app.types import REFUSAL
from tests.eval.stub_llm import chat_completion

CN_NUMS = "一 二 三 四 五 六 七 八 九 十 十一 十二 十三 十四 十五 十六 十七 十八 十九 二十".split()
TOPICS = [
    "公司应当建立健全安全生产责任制度",
    "员工享有带薪年休假的权利",
    "劳动合同应当以书面形式订立",
    "用人单位应当按时足额支付工资",
    "试用期不得超过六个月",
    "加班费按照工资的百分之一百五十支付",
    "女职工享受九十八天产假",
    "经济补偿按工作年限每满一年支付一个月工资",
    "用人单位不得扣押劳动者的居民身份证",
    "劳动者可以提前三十日书面通知解除劳动合同",
]


def statute() -> str:
    lines = ["# 星河公司劳动管理条例", "", "## 第一章 总则", ""]
    for i, num in enumerate(CN_NUMS):
        if i == 10:
            lines += ["## 第二章 附则", ""]
        lines += [f"第{num}条 {TOPICS[i % len(TOPICS)]}，本条编号{i + 1}。", ""]
    return "\n".join(lines)


def long_table(rows: int = 40) -> str:
    head = "# 费率手册\n\n## 附表 年交保费表\n\n以下为每万元保额的年交保费：\n\n"
    table = "| 投保年龄 | 男性保费 | 女性保费 |\n| --- | --- | --- |\n"
    table += "\n".join(f"| {age} | {300 + age * 17} | {280 + age * 15} |" for age in range(rows))
    return head + table + "\n\n## 说明\n\n保费按年交纳。\n"


@pytest.fixture
def two_tenants(kb: KnowledgeBase, tmp_path: Path) -> KnowledgeBase:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "secret.md").write_text(
        "# 机密\n\n数据库服务器的IP地址是10.8.8.8，root密码每三十天轮换。\n", encoding="utf-8"
    )
    (tmp_path / "b" / "public.md").write_text(
        "# 公开\n\n食堂每天中午十一点半开饭，周末不营业。\n", encoding="utf-8"
    )
    kb.ingest([tmp_path / "a"], tenant="alpha")
    kb.ingest([tmp_path / "b"], tenant="beta")
    return kb


class TestScope:
    @pytest.mark.parametrize("mode", ["dense", "keyword", "hybrid"])
    def test_a_question_never_returns_another_tenants_chunk(self, two_tenants, mode):
        question = "数据库服务器的IP地址是多少？"
        best = two_tenants.retrieve(question, top_k=1, tenant="alpha", mode=mode)
        assert best and "10.8.8.8" in best[0].text  # the best match lives in tenant alpha
        hits = two_tenants.retrieve(question, top_k=10, tenant="beta", mode=mode)
        assert all(h.tenant == "beta" for h in hits)
        assert not any("10.8.8.8" in h.text for h in hits)

    def test_ask_in_another_tenant_refuses_instead_of_leaking(self, two_tenants):
        answer = two_tenants.ask("数据库服务器的IP地址是多少？", tenant="beta")
        assert "10.8.8.8" not in answer.answer
        assert all(s.tenant == "beta" for s in answer.sources)

    def test_document_scope_applies_to_both_branches(self, kb, tmp_path):
        docs = tmp_path / "docs"
        docs.mkdir()
        (docs / "x.md").write_text("# X\n\n报销须在三十日内提交。\n", encoding="utf-8")
        (docs / "y.md").write_text("# Y\n\n报销须在十五日内提交。\n", encoding="utf-8")
        report = kb.ingest([docs])
        y = next(f.doc_id for f in report.files if f.path.endswith("y.md"))
        for mode in ("dense", "keyword", "hybrid"):
            hits = kb.retrieve("报销须在多少日内提交？", top_k=5, doc_ids=[y], mode=mode)
            assert hits and {h.doc_id for h in hits} == {y}


class TestKeywordIndex:
    def test_article_lookup_finds_the_article_by_chinese_or_arabic_number(self, kb, tmp_path):
        path = tmp_path / "statute.md"
        path.write_text(statute(), encoding="utf-8")
        kb.ingest([path])
        for question in ("星河公司劳动管理条例第十三条的内容是什么？", "第13条规定了什么"):
            hits = kb.retrieve(question, top_k=3, mode="keyword")
            assert hits and any("本条编号13。" in h.text for h in hits), question

    def test_keyword_entries_follow_the_ledger_on_change_and_delete(self, kb, tmp_path):
        path = tmp_path / "menu.md"
        path.write_text("# 菜单\n\n周一供应红烧狮子头。\n", encoding="utf-8")
        report = kb.ingest([path])
        doc_id = report.files[0].doc_id
        assert kb.retrieve("红烧狮子头", mode="keyword")
        path.write_text("# 菜单\n\n周一供应清蒸鲈鱼。\n", encoding="utf-8")
        kb.ingest([path])
        assert kb.retrieve("红烧狮子头", mode="keyword") == []
        assert kb.retrieve("清蒸鲈鱼", mode="keyword")[0].version == 2
        assert kb.ledger.keyword_count() == len(kb.ledger.all_active_chunk_ids())
        kb.documents.delete(doc_id)
        assert kb.retrieve("清蒸鲈鱼", mode="keyword") == []
        assert kb.ledger.keyword_count() == 0


class TestNeighbors:
    def test_a_hit_on_a_cut_table_brings_the_next_piece_with_one_header(
        self, tmp_path, embed_model
    ):
        path = tmp_path / "rates.md"
        path.write_text(long_table(), encoding="utf-8")
        with KnowledgeBase.open(
            tmp_path / "kb", embed_model=embed_model, chunk_size=160, chunk_overlap=16
        ) as kb:
            kb.ingest([path])
            (doc,) = kb.documents.list()
            chunks = kb.documents.chunks(doc.doc_id)
            table_chunks = [c for c in chunks if "table" in c.block_types]
            assert len(table_chunks) >= 3
            first = table_chunks[0]
            node = kb.retrieve_nodes("投保年龄 男性保费", top_k=20, mode="keyword")
            hit = next(n for n in node if n.node.node_id == first.chunk_id)
            expanded = NeighborExpansion(kb.ledger, mode="auto").postprocess_nodes(
                [hit], query_bundle=QueryBundle("x")
            )
            assert len(expanded) == 1
            text = expanded[0].node.get_content()
            nxt = table_chunks[1]
            assert nxt.text[nxt.prefix_chars :].strip() in text
            assert text.count("| 投保年龄 |") == 1  # the repeated header is not duplicated
            record = record_of(expanded[0].node)
            assert record.chunk_ids == f"{first.chunk_id},{nxt.chunk_id}"
            assert record.end_char == nxt.end_char

    def test_a_complete_hit_is_not_expanded_in_auto_mode_and_budget_is_respected(
        self, kb, tmp_path
    ):
        path = tmp_path / "statute.md"
        path.write_text(statute(), encoding="utf-8")
        kb.ingest([path])
        nodes = kb.retrieve_nodes("第十三条", top_k=1, mode="keyword")
        auto = NeighborExpansion(kb.ledger, mode="auto").postprocess_nodes(nodes)
        assert record_of(auto[0].node).expanded is False
        tight = NeighborExpansion(kb.ledger, mode="always", context_budget=1).postprocess_nodes(
            nodes
        )
        assert tight[0].node.get_content() == nodes[0].node.get_content()

    def test_duplicates_are_merged(self, kb, tmp_path):
        path = tmp_path / "statute.md"
        path.write_text(statute(), encoding="utf-8")
        kb.ingest([path])
        nodes = kb.retrieve_nodes("第十三条", top_k=1, mode="keyword")
        twice = [nodes[0], NodeWithScore(node=nodes[0].node, score=0.1)]
        assert len(NeighborExpansion(kb.ledger, mode="never").postprocess_nodes(twice)) == 1


class TestCitations:
    def test_markers_without_a_source_are_removed(self):
        text, kept = clean_markers("答案是八十天[1][3]，另见[12]。[2]", n_sources=2)
        assert text == "答案是八十天[1]，另见。[2]"
        assert kept == [1, 2]

    def test_extractive_answer_cites_backend_sources(self, kb, tmp_path):
        path = tmp_path / "statute.md"
        path.write_text(statute(), encoding="utf-8")
        kb.ingest([path])
        answer = kb.ask("试用期最长不得超过多久？")
        assert not answer.refused, answer
        assert "六个月" in answer.answer
        markers = {int(m) for m in __import__("re").findall(r"\[(\d+)\]", answer.answer)}
        assert markers and all(1 <= m <= len(answer.sources) for m in markers)
        for s in answer.sources:
            assert s.source == str(path.resolve()) and s.end_char > s.start_char

    def test_unanswerable_question_is_refused_with_a_reason(self, kb, tmp_path):
        path = tmp_path / "statute.md"
        path.write_text(statute(), encoding="utf-8")
        kb.ingest([path])
        answer = kb.ask("公司食堂的营业时间是几点？")
        assert answer.refused and answer.answer == REFUSAL and answer.reason


class _StubOpenAI(BaseHTTPRequestHandler):
    reply = "答案[1]。"
    requests: list[dict[str, Any]] = []

    def do_POST(self) -> None:  # noqa: N802 - http.server API
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append(
            {"path": self.path, "body": body, "auth": self.headers.get("Authorization")}
        )
        payload = chat_completion(type(self).reply, body.get("model", "stub"))
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        return


@pytest.fixture
def stub_llm() -> Iterator[str]:
    _StubOpenAI.requests = []
    server = HTTPServer(("127.0.0.1", 0), _StubOpenAI)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/v1"
    server.shutdown()


class TestLLMMode:
    def _kb(self, tmp_path: Path, embed_model: Any, url: str, **settings: Any) -> KnowledgeBase:
        path = tmp_path / "statute.md"
        path.write_text(statute(), encoding="utf-8")
        kb = KnowledgeBase.open(
            tmp_path / "kb",
            embed_model=embed_model,
            llm_base_url=url,
            llm_model="stub-model",
            llm_api_key="sk-test",
            **settings,
        )
        kb.ingest([path])
        return kb

    def test_model_markers_are_validated_and_sources_come_from_the_backend(
        self, tmp_path, embed_model, stub_llm
    ):
        _StubOpenAI.reply = "试用期不得超过六个月[1][9]。"
        with self._kb(tmp_path, embed_model, stub_llm) as kb:
            answer = kb.ask("试用期不得超过几个月？")
        assert answer.mode == "llm" and not answer.refused
        assert answer.answer == "试用期不得超过六个月[1]。"
        assert answer.sources and answer.sources[0].doc_id
        (request,) = _StubOpenAI.requests
        assert request["path"].endswith("/chat/completions")
        assert request["body"]["model"] == "stub-model"
        assert request["auth"] == "Bearer sk-test"
        prompt = request["body"]["messages"][-1]["content"]
        assert "[1]" in prompt and "试用期" in prompt

    def test_model_refusal_becomes_a_refusal(self, tmp_path, embed_model, stub_llm):
        _StubOpenAI.reply = "当前知识库中未找到足够依据。"
        with self._kb(tmp_path, embed_model, stub_llm) as kb:
            answer = kb.ask("试用期不得超过几个月？")
        assert answer.refused and answer.reason == "llm_refused" and answer.answer == REFUSAL
        (closest,) = answer.closest  # the unit the answer model ranks best, in its source
        assert closest.text in answer.sources[closest.source - 1].text


class TestLLMReview:
    """RAG_LLM_REVIEW: the LLM reads the gate's refusals from a floor up. A threshold of 0.99
    makes the gate refuse "试用期不得超过几个月？" (confidence about 0.95, weak_evidence)."""

    def _ask(self, tmp_path, embed_model, url, question, **settings):  # type: ignore[no-untyped-def]
        kb = TestLLMMode()._kb(tmp_path, embed_model, url, gate_threshold=0.99, **settings)
        with kb:
            return kb.ask(question)

    def test_the_llm_answers_a_refusal_above_the_floor(self, tmp_path, embed_model, stub_llm):
        _StubOpenAI.reply = "试用期不得超过六个月[1]。"
        answer = self._ask(
            tmp_path, embed_model, stub_llm, "试用期不得超过几个月？", llm_review="0.5"
        )
        assert not answer.refused and answer.reviewed and answer.mode == "llm"
        assert answer.answer == "试用期不得超过六个月[1]。" and answer.sources
        assert answer.confidence < answer.threshold == 0.99  # what the gate alone said
        (request,) = _StubOpenAI.requests
        assert "试用期" in request["body"]["messages"][-1]["content"]

    def test_rag_eval_records_it(self, tmp_path, embed_model, stub_llm):
        from rag_app.eval.dataset import QAItem
        from rag_app.eval.runner import evaluate_question

        _StubOpenAI.reply = "试用期不得超过六个月[1]。"
        item = QAItem(id="q1", question="试用期不得超过几个月？", answers=["六个月"])
        kb = TestLLMMode()._kb(tmp_path, embed_model, stub_llm, gate_threshold=0.99)
        with kb:
            plain = evaluate_question(kb, item)
        (tmp_path / "b").mkdir()
        kb = TestLLMMode()._kb(
            tmp_path / "b", embed_model, stub_llm, gate_threshold=0.99, llm_review="0"
        )
        with kb:
            read = evaluate_question(kb, item)
        assert plain.refused and not plain.reviewed and not plain.passed
        assert not read.refused and read.reviewed and read.mode == "llm" and read.passed

    def test_an_llm_refusal_keeps_the_gate_reason(self, tmp_path, embed_model, stub_llm):
        _StubOpenAI.reply = REFUSAL
        answer = self._ask(
            tmp_path, embed_model, stub_llm, "试用期不得超过几个月？", llm_review="0"
        )
        assert answer.refused and answer.reviewed and answer.answer == REFUSAL
        assert answer.reason == "weak_evidence" and "0.99" in (answer.explanation or "")
        assert answer.closest and len(_StubOpenAI.requests) == 1

    def test_an_llm_answer_citing_nothing_does_not_overrule(self, tmp_path, embed_model, stub_llm):
        _StubOpenAI.reply = "试用期一般是六个月。"
        answer = self._ask(
            tmp_path, embed_model, stub_llm, "试用期不得超过几个月？", llm_review="0"
        )
        assert answer.refused and answer.reviewed and answer.reason == "weak_evidence"

    @pytest.mark.parametrize(
        ("question", "review"),
        [
            ("试用期不得超过几个月？", "off"),  # the default
            ("试用期不得超过几个月？", "0.97"),  # its confidence is below the floor
            ("《员工手册》规定试用期多长？", "0"),  # entity_missing: no passage to read
        ],
    )
    def test_refusals_it_does_not_read(self, tmp_path, embed_model, stub_llm, question, review):
        answer = self._ask(tmp_path, embed_model, stub_llm, question, llm_review=review)
        assert answer.refused and not answer.reviewed and answer.mode == "gate"
        assert _StubOpenAI.requests == []

    def test_answers_above_the_threshold_are_not_marked(self, tmp_path, embed_model, stub_llm):
        _StubOpenAI.reply = "试用期不得超过六个月[1]。"
        kb = TestLLMMode()._kb(tmp_path, embed_model, stub_llm, llm_review="lenient")
        with kb:
            answer = kb.ask("试用期不得超过几个月？")
        assert not answer.refused and not answer.reviewed and answer.mode == "llm"


@pytest.mark.parametrize(
    ("value", "expected"),
    [("off", "off"), ("Lenient", "lenient"), (" strict ", "strict"), ("0.02", "0.02"), (0, "0")],
)
def test_llm_review_setting(value, expected):
    from rag_app.config import Settings

    assert Settings(llm_review=value).llm_review == expected


@pytest.mark.parametrize("value", ["sometimes", "1.5", "-0.1"])
def test_llm_review_setting_rejects(value):
    from pydantic import ValidationError

    from rag_app.config import Settings

    with pytest.raises(ValidationError, match="RAG_LLM_REVIEW"):
        Settings(llm_review=value)


def test_sources_carry_the_repeated_prefix_of_their_chunk(kb, tmp_path):
    """A piece of a long table starts with the repeated header: its source says how long it is."""
    rows = "\n".join(f"| 城市{i:03d} | {100 + i} 元 | 备注{i} |" for i in range(120))
    doc = tmp_path / "rates.md"
    doc.write_text(
        "# 住宿标准\n\n| 城市 | 标准 | 备注 |\n| --- | --- | --- |\n" + rows + "\n",
        encoding="utf-8",
    )
    report = kb.ingest([doc])
    (file,) = report.files
    chunks = {c.chunk_id: c for c in kb.documents.chunks(file.doc_id)}
    assert len(chunks) > 1 and any(c.prefix_chars > 0 for c in chunks.values())
    hits = kb.retrieve("城市110的住宿标准是多少？", top_k=3, mode="keyword")
    piece = next(h for h in hits if chunks[h.chunk_id].prefix_chars > 0)
    assert piece.prefix_chars == chunks[piece.chunk_id].prefix_chars
    assert piece.suffix_chars == chunks[piece.chunk_id].suffix_chars
    assert "| 城市 | 标准 | 备注 |" in piece.text[: piece.prefix_chars]  # the repeated header
    answer = kb.ask("城市110的住宿标准是多少？")
    assert answer.sources
    # a (possibly merged) source starts with its first chunk: that chunk's repeated prefix
    assert all(s.prefix_chars == chunks[s.chunk_id].prefix_chars for s in answer.sources)


class TestLLMFailure:
    """An LLM endpoint that is down, returns nothing, or answers citing no source never costs
    the answer: the extractive one (or the gate's refusal) stands, with ``llm_error``."""

    def test_a_dead_endpoint_falls_back_to_the_extractive_answer(self, tmp_path, embed_model):
        import socket

        with socket.socket() as sock:  # a port nothing listens on
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        url = f"http://127.0.0.1:{port}/v1"
        with TestLLMMode()._kb(tmp_path, embed_model, url, llm_timeout=2.0) as kb:
            answer = kb.ask("试用期不得超过几个月？")
            refused = kb.ask("公司食堂的营业时间是几点？")
        assert answer.mode == "extractive" and not answer.refused, answer
        assert "六个月" in answer.answer and answer.sources
        assert answer.llm_error and answer.llm_error.startswith("LLM call failed")
        assert refused.refused and refused.llm_error is None  # the LLM was never asked

    @pytest.mark.parametrize(
        ("reply", "error"),
        [("", "empty answer"), ("试用期一般不超过六个月。", "cited no source")],
    )
    def test_an_empty_or_uncited_reply_falls_back(
        self, tmp_path, embed_model, stub_llm, reply, error
    ):  # type: ignore[no-untyped-def]
        _StubOpenAI.reply = reply
        with TestLLMMode()._kb(tmp_path, embed_model, stub_llm) as kb:
            answer = kb.ask("试用期不得超过几个月？")
        assert answer.mode == "extractive" and not answer.refused
        assert answer.llm_error and error in answer.llm_error
        assert "六个月" in answer.answer

    def test_a_refusal_the_llm_was_to_read_stands_when_it_fails(self, tmp_path, embed_model):
        with TestLLMMode()._kb(tmp_path, embed_model, "http://127.0.0.1:9/v1", llm_timeout=2.0,
                               gate_threshold=0.99, llm_review="0") as kb:  # fmt: skip
            answer = kb.ask("试用期不得超过几个月？")
        assert answer.refused and answer.reason == "weak_evidence" and not answer.reviewed
        assert answer.llm_error and answer.llm_error.startswith("LLM call failed")
