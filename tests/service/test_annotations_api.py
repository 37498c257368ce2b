"""/api/annotations (issue 68, item 2): editors write, readers read, a key limited to one
collection lists and writes only that collection's annotations, oversize or hostile input is a
4xx, and a matching question gets the annotation through /api/ask and /api/chat, never one of
another collection or tenant."""

from __future__ import annotations

from typing import Any

from tests.service import test_key_scope_attacks as attacks
from tests.service.conftest import Service
from tests.service.test_key_scope_attacks import Estate

estate = attacks.estate  # the fixture: tenant acme's collections, a limited key (issue 65)

Q = "一线城市住宿标准是多少？"


def _post(service: Service, headers: dict[str, str], **body: Any) -> Any:
    return service.client.post("/api/annotations", json=body, headers=headers)


def _ask(service: Service, headers: dict[str, str], question: str = Q, **body: Any) -> Any:
    got = service.client.post("/api/ask", json={"question": question, **body}, headers=headers)
    assert got.status_code == 200, got.text
    return got.json()


def _ids(service: Service, headers: dict[str, str], query: str = "") -> list[int]:
    got = service.client.get(f"/api/annotations{query}", headers=headers)
    assert got.status_code == 200, got.text
    return [a["annotation_id"] for a in got.json()["annotations"]]


def test_editors_write_readers_read_and_questions_get_it(service: Service, estate: Estate) -> None:
    assert _post(service, service.reader, question=Q, answer="800元").status_code == 403
    made = _post(service, service.editor, question=Q, answer="每晚800元（2025年新标准）。")
    assert made.status_code == 201, made.text
    body = made.json()
    assert body["collection"] is None and body["author"] == "test editor"
    assert _ids(service, service.reader) == [body["annotation_id"]]

    answer = _ask(service, service.reader, "请问一线城市住宿标准是多少")
    assert answer["answer"] == "每晚800元（2025年新标准）。" and answer["mode"] == "annotation"
    assert answer["annotation"]["annotation_id"] == body["annotation_id"]
    assert answer["annotation"]["author"] == "test editor" and answer["annotation"]["updated_at"]
    chat = service.client.post("/api/chat", json={"question": Q}, headers=service.reader).json()
    assert chat["annotation"]["annotation_id"] == body["annotation_id"]
    # another tenant never gets it
    assert _ask(service, service.other_editor)["annotation"] is None

    edited = service.client.patch(
        f"/api/annotations/{body['annotation_id']}",
        json={"answer": "每晚900元。"},
        headers=service.editor,
    )
    assert edited.status_code == 200 and edited.json()["answer"] == "每晚900元。"
    assert _ask(service, service.reader)["answer"] == "每晚900元。"
    gone = service.client.delete(
        f"/api/annotations/{body['annotation_id']}", headers=service.editor
    )
    assert gone.status_code == 204
    after = _ask(service, service.reader)
    assert after["annotation"] is None and "600" in after["answer"]


def test_a_limited_key_sees_and_writes_only_its_collections(
    service: Service, estate: Estate
) -> None:
    # tenant-wide: refused to the limited key; its own collection: fine; another: 403
    assert _post(service, estate.limited, question=Q, answer="x").status_code == 403
    rd = _post(service, service.editor, question=Q, answer="研发手册的答案", collection="研发手册")
    assert rd.status_code == 201
    wide = _post(service, service.editor, question="值班补贴多少？", answer="全租户")
    assert _post(service, estate.limited, question=Q, answer="x", collection="研发手册").status_code == 403  # fmt: skip
    mine = _post(service, estate.limited, question=Q, answer="财务的答案", collection="财务制度")
    assert mine.status_code == 201, mine.text
    mine_id, rd_id = mine.json()["annotation_id"], rd.json()["annotation_id"]

    assert _ids(service, estate.limited) == [mine_id]
    assert _ids(service, estate.limited_reader) == [mine_id]
    assert set(_ids(service, service.editor)) == {mine_id, rd_id, wide.json()["annotation_id"]}
    assert _ids(service, service.editor, "?collection=研发手册") == [rd_id]
    assert service.client.get("/api/annotations?collection=研发手册", headers=estate.limited).status_code == 403  # fmt: skip
    for method in ("patch", "delete"):
        kwargs: dict[str, Any] = {"json": {"answer": "改"}} if method == "patch" else {}
        got = getattr(service.client, method)(
            f"/api/annotations/{rd_id}", headers=estate.limited, **kwargs
        )
        assert got.status_code == 404, (method, got.text)
    moved = service.client.patch(
        f"/api/annotations/{mine_id}", json={"tenant_wide": True}, headers=estate.limited
    )
    assert moved.status_code == 403

    # questions: each scope gets its own collection's annotation
    assert _ask(service, estate.limited_reader)["answer"] == "财务的答案"
    assert _ask(service, service.reader, collection="研发手册")["answer"] == "研发手册的答案"
    assert _ask(service, service.reader, collection="财务制度")["answer"] == "财务的答案"


def test_citing_a_chunk_out_of_reach_or_oversize_input_is_a_4xx(
    service: Service, estate: Estate
) -> None:
    kb = service.app.state.service.kb
    secret = kb.documents.chunks(estate.manual)[0].chunk_id
    travel = kb.documents.chunks(estate.travel)[-1].chunk_id
    foreign = kb.documents.chunks(estate.foreign)[0].chunk_id
    limited = estate.limited
    assert _post(service, limited, question=Q, answer="x", collection="财务制度", chunk_id=secret).status_code == 422  # fmt: skip
    assert _post(service, service.editor, question=Q, answer="x", chunk_id=foreign).status_code == 422  # fmt: skip
    assert _post(service, service.editor, question=Q, answer="x", chunk_id="nope").status_code == 422  # fmt: skip
    cited = _post(
        service, limited, question=Q, answer="600元", collection="财务制度", chunk_id=travel
    )
    assert cited.status_code == 201 and cited.json()["citation"] == "current"
    answer = _ask(service, estate.limited_reader)
    assert [s["chunk_id"] for s in answer["sources"]] == [travel]
    assert answer["sources"][0]["filename"] == "差旅.md"

    for bad in (
        {"question": "问" * 2001, "answer": "x"},
        {"question": Q, "answer": "答" * 8001},
        {"question": Q},  # neither an answer nor a refusal
        {"question": "   ", "answer": "x"},
        {"question": Q, "answer": "x", "collection": "不存在"},
        {"question": Q, "answer": "x", "chunk_id": "c" * 500},
        {"question": ["a"], "answer": "x"},
        {"question": Q, "answer": "x", "feedback_id": 999},
        {"question": "年假\x00有几天", "answer": "x"},
        {"question": Q, "answer": "十天\x00"},
    ):
        got = service.client.post("/api/annotations", json=bad, headers=service.editor)
        assert 400 <= got.status_code < 500, (bad, got.status_code, got.text)
    raw = service.client.post(
        "/api/annotations", content=b"{not json", headers={**service.editor,
        "Content-Type": "application/json"},
    )  # fmt: skip
    assert raw.status_code == 422
    assert service.client.patch("/api/annotations/abc", json={}, headers=service.editor).status_code == 422  # fmt: skip
    assert service.client.delete("/api/annotations/99999", headers=service.editor).status_code == 404  # fmt: skip


def test_annotate_from_feedback(service: Service, estate: Estate) -> None:
    given = service.client.post(
        "/api/feedback",
        json={"rating": "down", "question": Q, "answer": "每晚600元", "should_refuse": True},
        headers=service.reader,
    )
    assert given.status_code == 201, given.text
    made = _post(service, service.editor, feedback_id=given.json()["feedback_id"])
    assert made.status_code == 201, made.text
    assert made.json()["question"] == Q and made.json()["should_refuse"] is True
    answer = _ask(service, service.reader)
    assert answer["refused"] is True and answer["annotation"] is not None
    other = service.client.post("/api/annotations", json={"feedback_id": given.json()["feedback_id"]}, headers=service.other_editor)  # fmt: skip
    assert other.status_code == 404
