"""/api/chat and /api/conversations: follow-ups resolved from the previous turn, kept per tenant
and key (issue 55)."""

from __future__ import annotations

from tests.service.conftest import Service

STOCK = """# 库存明细

| SKU | 名称 | 库存 |
|---|---|---|
| SKU-1023 | 螺丝 | 120 |
| SKU-1024 | 螺母 | 80 |
| SKU-1025 | 垫片 | 45 |
"""


def _chat(service: Service, question: str, conversation_id: str | None = None):  # type: ignore[no-untyped-def]
    body: dict[str, object] = {"question": question}
    if conversation_id:
        body["conversation_id"] = conversation_id
    return service.client.post("/api/chat", json=body, headers=service.editor)


def test_a_follow_up_is_answered_from_the_previous_turn_and_kept(service: Service) -> None:
    doc_id = service.upload("库存.md", STOCK).json()["doc_id"]
    assert service.wait(doc_id)["status"] == "SUCCESS"

    first = _chat(service, "SKU-1023的库存是多少？")
    assert first.status_code == 200, first.text
    turn = first.json()
    conversation = turn["conversation_id"]
    assert turn["followup"] == "standalone" and "120" in turn["answer"]
    assert turn["sources"] and turn["sources"][0]["filename"] == "库存.md"

    second = _chat(service, "那SKU-1024呢？", conversation).json()
    assert second["conversation_id"] == conversation
    assert second["resolved_question"] == "SKU-1024的库存是多少？"
    assert second["followup"] == "ellipsis" and "80" in second["answer"]

    listed = service.client.get("/api/conversations", headers=service.editor).json()
    (summary,) = listed["conversations"]
    assert summary["conversation_id"] == conversation and summary["turns"] == 2
    assert summary["title"] == "SKU-1023的库存是多少？"
    full = service.client.get(f"/api/conversations/{conversation}", headers=service.editor).json()
    assert [t["resolved_question"] for t in full["turns"]] == [
        "SKU-1023的库存是多少？",
        "SKU-1024的库存是多少？",
    ]
    assert "80" in full["turns"][1]["answer"]["answer"]
    assert full["turns"][1]["answer"]["sources"][0]["filename"] == "库存.md"  # as /api/chat gave it


def test_a_conversation_is_visible_to_its_key_only(service: Service) -> None:
    conversation = _chat(service, "一线城市住宿标准是多少？").json()["conversation_id"]
    for headers in (service.reader, service.other_editor):  # same tenant other key; other tenant
        got = service.client.get(f"/api/conversations/{conversation}", headers=headers)
        assert got.status_code == 404
        listed = service.client.get("/api/conversations", headers=headers).json()
        assert listed["conversations"] == []
        cont = service.client.post(
            "/api/chat",
            json={"conversation_id": conversation, "question": "那二线城市呢？"},
            headers=headers,
        )
        assert cont.status_code == 404
        assert (
            service.client.delete(f"/api/conversations/{conversation}", headers=headers).status_code
            == 404
        )
    gone = service.client.delete(f"/api/conversations/{conversation}", headers=service.editor)
    assert gone.status_code == 204
    again = service.client.get(f"/api/conversations/{conversation}", headers=service.editor)
    assert again.status_code == 404


def test_bad_chat_bodies_are_4xx(service: Service) -> None:
    for body in (
        {"question": ""},
        {"question": "x", "conversation_id": "../../etc"},
        {"question": "x", "top_k": True},
        {"conversation_id": "0123456789abcdef"},
    ):
        got = service.client.post("/api/chat", json=body, headers=service.editor)
        assert 400 <= got.status_code < 500, (body, got.status_code)
    unknown = service.client.post(
        "/api/chat",
        json={"question": "犹豫期呢？", "conversation_id": "0123456789abcdef"},
        headers=service.editor,
    )
    assert unknown.status_code == 404


def test_feedback_on_a_turn_and_on_an_answer_is_kept_with_what_was_answered(
    service: Service,
) -> None:
    doc_id = service.upload("库存.md", STOCK).json()["doc_id"]
    assert service.wait(doc_id)["status"] == "SUCCESS"
    first = _chat(service, "SKU-1023的库存是多少？").json()
    conversation = first["conversation_id"]
    _chat(service, "那SKU-1024呢？", conversation)
    down = service.client.post(
        "/api/feedback",
        json={"conversation_id": conversation, "rating": "down", "comment": "应列出单位"},
        headers=service.editor,
    )
    assert down.status_code == 201, down.text
    up = service.client.post(
        "/api/feedback",
        json={
            "rating": "up",
            "question": "一线城市住宿标准？",
            "answer": "600元",
            "confidence": 0.9,
        },
        headers=service.reader,
    )
    assert up.status_code == 201, up.text
    # another tenant cannot rate this conversation; a body without a subject is a 422
    stranger = service.client.post(
        "/api/feedback",
        json={"conversation_id": conversation, "rating": "down"},
        headers=service.other_editor,
    )
    assert stranger.status_code == 404
    empty = service.client.post("/api/feedback", json={"rating": "up"}, headers=service.editor)
    assert empty.status_code == 422
    assert service.client.get("/api/feedback", headers=service.reader).status_code == 403
    listed = service.client.get("/api/feedback?rating=down", headers=service.editor).json()
    (record,) = listed["feedback"]
    assert record["resolved_question"] == "SKU-1024的库存是多少？"  # the last turn, as asked
    assert record["question"] == "那SKU-1024呢？" and "80" in record["answer"]
    assert record["comment"] == "应列出单位" and record["sources"][0]["filename"] == "库存.md"
    assert record["settings"]["gate"] and record["confidence"] is not None
    both = service.client.get("/api/feedback", headers=service.editor).json()["feedback"]
    assert [f["rating"] for f in both] == ["up", "down"]
    other = service.client.get("/api/feedback", headers=service.other_editor).json()
    assert other["feedback"] == []
