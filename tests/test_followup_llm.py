"""Follow-ups rewritten by an LLM (rag_app/analysis/followup_llm.py), the rules as the fallback:
ChatService over a stub OpenAI-compatible endpoint (a local HTTP server, no network)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine

from rag_app.analysis.followup_llm import LLMFollowUpRewriter, clean_rewrite
from rag_app.chat import ChatService
from rag_app.config import Settings
from rag_app.store.conversations import ConversationStore
from rag_app.store.schema import conversation_turns, conversations, metadata
from rag_app.synthesis.citations import build_llm
from rag_app.types import Answer
from tests.eval.stub_llm import chat_completion

REWRITE_MARK = "对话问题改写助手"  # in the rewriter's system prompt


class _Stub(BaseHTTPRequestHandler):
    rewrite = "SKU-1024的库存是多少？"  # the reply to a rewrite request
    answer = "答案[1]。"  # the reply to any other (the answer synthesizer's)
    status = 200
    delay = 0.0
    requests: list[dict[str, Any]] = []

    def do_POST(self) -> None:  # noqa: N802 - http.server API
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        prompt = "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
        kind = "rewrite" if REWRITE_MARK in prompt else "answer"
        type(self).requests.append({"path": self.path, "kind": kind, "prompt": prompt})
        if type(self).delay:
            time.sleep(type(self).delay)
        reply = type(self).rewrite if kind == "rewrite" else type(self).answer
        payload: dict[str, Any] = chat_completion(reply, body.get("model", "stub"))
        if type(self).status != 200:
            payload = {"error": {"message": "boom", "type": "server_error"}}
        data = json.dumps(payload).encode()
        try:
            self.send_response(type(self).status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except OSError:  # the client timed out and went away
            pass

    def log_message(self, *args: Any) -> None:
        return


@pytest.fixture
def stub_llm() -> Iterator[str]:
    _Stub.rewrite, _Stub.answer, _Stub.status, _Stub.delay = (
        "SKU-1024的库存是多少？", "答案[1]。", 200, 0.0,
    )  # fmt: skip
    _Stub.requests = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Stub)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/v1"
    server.shutdown()


def _rewrites() -> list[dict[str, Any]]:
    return [r for r in _Stub.requests if r["kind"] == "rewrite"]


class _Ask:
    def __init__(self) -> None:
        self.asked: list[str] = []

    def __call__(
        self,
        question: str,
        tenant: str,
        top_k: int,
        doc_ids: Sequence[str] | None,
        *,
        on_text: Any = None,
        collection_ids: Any = None,
    ):  # type: ignore[no-untyped-def]
        self.asked.append(question)
        return Answer(question=question, answer="答案")


def _chat(tmp_path: Path, url: str | None, timeout: float = 5.0) -> tuple[ChatService, _Ask]:
    engine = create_engine(f"sqlite:///{tmp_path / 'chat.db'}")
    metadata.create_all(engine, tables=[conversations, conversation_turns])
    ask = _Ask()
    rewriter = (
        LLMFollowUpRewriter(build_llm(url, "stub-model", "sk-test", timeout=timeout))
        if url
        else None
    )
    return ChatService(ConversationStore(engine), ask, rewriter=rewriter), ask


def _two_turns(chat: ChatService, follow_up: str = "那SKU-1024呢？") -> Any:
    first = chat.turn("SKU-1023的库存是多少？", tenant="t", key_id="k")
    return first, chat.turn(
        follow_up, tenant="t", key_id="k", conversation_id=first.conversation_id
    )


def test_the_llm_rewrite_is_used_and_its_prompt_has_the_previous_question(tmp_path, stub_llm):
    _Stub.rewrite = "问题：“螺母（SKU-1024）的库存是多少？”"
    chat, ask = _chat(tmp_path, stub_llm)
    first, second = _two_turns(chat, "螺母的呢？")
    assert first.followup == "standalone"
    assert second.followup == "llm"
    assert second.resolved_question == "螺母（SKU-1024）的库存是多少？"  # prefix, quotes gone
    assert ask.asked == ["SKU-1023的库存是多少？", "螺母（SKU-1024）的库存是多少？"]
    (request,) = _rewrites()  # the first turn was not sent
    assert request["path"].endswith("/chat/completions")
    assert "SKU-1023的库存是多少？" in request["prompt"] and "螺母的呢？" in request["prompt"]
    stored = chat.store.get("t", "k", second.conversation_id)
    assert stored is not None
    assert stored.turns[1].resolved_question == "螺母（SKU-1024）的库存是多少？"


def test_the_history_is_the_last_three_resolved_questions(tmp_path, stub_llm):
    _Stub.rewrite = ""  # rejected: the rules' (standalone) questions stand
    chat, _ = _chat(tmp_path, stub_llm)
    cid = chat.turn("问题一是什么？", tenant="t", key_id="k").conversation_id
    for q in ("问题二是什么？", "问题三是什么？", "问题四是什么？"):
        chat.turn(q, tenant="t", key_id="k", conversation_id=cid)
    _Stub.rewrite = "问题四的答案有多少？"
    last = chat.turn("它有多少？", tenant="t", key_id="k", conversation_id=cid)
    assert last.followup == "llm" and len(_rewrites()) == 4
    prompt = _rewrites()[-1]["prompt"]
    assert "问题一" not in prompt  # 4 turns back
    assert all(f"问题{n}是什么？" in prompt for n in "二三四")
    assert prompt.index("问题二") < prompt.index("问题四")  # oldest first
    assert chat.store.recent_questions("t", "k", cid, 2) == [
        "问题四是什么？",
        "问题四的答案有多少？",
    ]


def test_an_agreeing_rewrite_keeps_the_rule(tmp_path, stub_llm):
    _Stub.rewrite = "SKU-1024的库存是多少?"  # the rule's result (ASCII ?)
    chat, _ = _chat(tmp_path, stub_llm)
    _, second = _two_turns(chat)
    assert second.followup == "ellipsis" and second.resolved_question == "SKU-1024的库存是多少？"
    assert len(_rewrites()) == 1


def test_the_first_turn_never_calls_the_llm(tmp_path, stub_llm):
    chat, _ = _chat(tmp_path, stub_llm)
    first = chat.turn("它的保费是多少？", tenant="t", key_id="k")
    assert first.followup == "standalone" and first.resolved_question == "它的保费是多少？"
    assert _Stub.requests == []


@pytest.mark.parametrize(
    "reply",
    [
        "",
        "抱歉，我无法改写这个问题。",
        "SKU-1024的库存是80件。",  # an answer, not a question
        "SKU-1024的库存是多少？\n说明：补全了主语。",
        "很长的问题" * 40,
    ],
)
def test_garbage_output_falls_back_to_the_rule(tmp_path, stub_llm, reply):
    _Stub.rewrite = reply
    chat, ask = _chat(tmp_path, stub_llm)
    _, second = _two_turns(chat)
    assert second.followup == "ellipsis" and second.resolved_question == "SKU-1024的库存是多少？"
    assert ask.asked[-1] == "SKU-1024的库存是多少？" and len(_rewrites()) == 1


def test_an_http_error_falls_back_to_the_rule(tmp_path, stub_llm):
    _Stub.status = 500
    chat, _ = _chat(tmp_path, stub_llm)
    _, second = _two_turns(chat)
    assert second.followup == "ellipsis" and second.resolved_question == "SKU-1024的库存是多少？"
    assert _rewrites()


def test_a_timeout_falls_back_to_the_rule(tmp_path, stub_llm):
    _Stub.delay = 1.5
    chat, _ = _chat(tmp_path, stub_llm, timeout=0.3)
    first = chat.turn("SKU-1023的库存是多少？", tenant="t", key_id="k")
    started = time.monotonic()
    second = chat.turn(
        "那SKU-1024呢？", tenant="t", key_id="k", conversation_id=first.conversation_id
    )
    assert time.monotonic() - started < 5
    assert second.followup == "ellipsis" and second.resolved_question == "SKU-1024的库存是多少？"


def test_an_unreachable_endpoint_falls_back_to_the_rule(tmp_path):
    chat, _ = _chat(tmp_path, "http://127.0.0.1:9/v1", timeout=0.5)  # discard port: refused
    _, second = _two_turns(chat)
    assert second.followup == "ellipsis" and second.resolved_question == "SKU-1024的库存是多少？"


def test_without_an_endpoint_there_is_no_rewriter(tmp_path):
    assert LLMFollowUpRewriter.from_settings(Settings(kb_dir=tmp_path)) is None
    rewriter = LLMFollowUpRewriter.from_settings(
        Settings(kb_dir=tmp_path, llm_base_url="http://127.0.0.1:9/v1", llm_timeout=120)
    )
    assert rewriter is not None and rewriter.llm.timeout == 20.0  # type: ignore[attr-defined]
    chat, _ = _chat(tmp_path, None)
    _, second = _two_turns(chat)
    assert second.followup == "ellipsis"


@pytest.mark.parametrize(
    ("reply", "cleaned"),
    [
        ("「犹豫期多长？」", "犹豫期多长？"),
        ("改写后的问题：犹豫期多长？", "犹豫期多长？"),
        ('"问题：犹豫期多长？"', "犹豫期多长？"),
        ("《劳动合同法》规定的试用期多长？", "《劳动合同法》规定的试用期多长？"),
        ("我无法登录系统怎么办？", "我无法登录系统怎么办？"),  # the user's own words
        ("作为AI，我认为问题是：犹豫期多长？", None),
        ("该问题已经完整，无需改写。", None),
        ("   ", None),
    ],
)
def test_clean_rewrite(reply: str, cleaned: str | None) -> None:
    history = ["保险期间多长？", "我无法登录系统怎么办？"]
    assert clean_rewrite(reply, "犹豫期呢？", history) == cleaned


def test_the_api_reports_an_llm_rewrite(tmp_path, embed_model, stub_llm):  # type: ignore[no-untyped-def]
    from fastapi.testclient import TestClient

    from rag_app.kb import KnowledgeBase
    from rag_app.service.app import create_app
    from rag_app.service.auth import create_key
    from tests.service.conftest import Service, bearer
    from tests.service.test_chat import STOCK
    from tests.service.test_chat import _chat as post_chat

    _Stub.rewrite = "螺母（SKU-1024）的库存是多少？"
    _Stub.answer = "SKU-1024的库存为80[1]。"
    settings = Settings(kb_dir=tmp_path / "kb", llm_base_url=stub_llm, llm_model="stub-model")
    kb = KnowledgeBase(settings, embed_model=embed_model)
    with TestClient(create_app(settings, kb=kb)) as client:
        editor = bearer(create_key(kb.ledger, "acme", "editor", "test editor"))
        service = Service(client, client.app, settings.kb_dir, editor, editor, editor)
        doc_id = service.upload("库存.md", STOCK).json()["doc_id"]
        assert service.wait(doc_id)["status"] == "SUCCESS"
        first = post_chat(service, "SKU-1023的库存是多少？").json()
        assert first["followup"] == "standalone" and not _rewrites()
        second = post_chat(service, "螺母的呢？", first["conversation_id"])
    kb.close()
    assert second.status_code == 200, second.text
    body = second.json()
    assert body["followup"] == "llm"
    assert body["resolved_question"] == "螺母（SKU-1024）的库存是多少？"
    (rewrite,) = _rewrites()
    assert "SKU-1023的库存是多少？" in rewrite["prompt"]
    answered = [r for r in _Stub.requests if r["kind"] == "answer"]
    assert answered and "螺母（SKU-1024）的库存是多少？" in answered[-1]["prompt"]
