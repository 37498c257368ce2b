"""Every route tried as an attacker with a key limited to one collection, and with keys of the
whole tenant and of another tenant (issue 65): a limited key writes, reads and names only the
documents of its collections; nothing reveals a document outside them (id, name, existence)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest

from tests.service.conftest import OTHER, POLICY, Service, bearer

SECRET = "# 研发手册\n\n## 服务器\n\n生产数据库的管理员密码是 Tiger-7788。\n"


@dataclass
class Estate:
    """Tenant acme: 财务制度 (travel), 研发手册 (duty, manual), a document in no collection
    (loose); tenant globex: one document. ``limited``: an editor key of 财务制度 only."""

    travel: str
    duty: str
    manual: str
    loose: str
    foreign: str
    limited: dict[str, str]
    limited_reader: dict[str, str]


def _upload(service: Service, name: str, text: str, headers: dict[str, str], into: str = "") -> Any:
    query = f"?collection={into}" if into else ""
    return service.client.post(
        f"/api/documents{query}",
        files={"file": (name, text.encode(), "application/octet-stream")},
        headers=headers,
    )


def _ingested(service: Service, got: Any, headers: dict[str, str] | None = None) -> str:
    assert got.status_code == 202, got.text
    doc_id: str = got.json()["doc_id"]
    assert service.wait(doc_id, headers)["status"] == "SUCCESS"
    return doc_id


@pytest.fixture
def estate(service: Service) -> Estate:
    from rag_app.service.auth import create_key

    for name in ("财务制度", "研发手册"):
        got = service.client.post("/api/collections", json={"name": name}, headers=service.editor)
        assert got.status_code == 201
    kb = service.app.state.service.kb
    return Estate(
        travel=_ingested(service, _upload(service, "差旅.md", POLICY, service.editor, "财务制度")),
        duty=_ingested(service, _upload(service, "值班.md", OTHER, service.editor, "研发手册")),
        manual=_ingested(
            service, _upload(service, "manual.md", SECRET, service.editor, "研发手册")
        ),
        loose=_ingested(
            service, _upload(service, "散件.md", "# 散件\n\n散件库存为12件。", service.editor)
        ),
        foreign=_ingested(
            service,
            _upload(service, "globex.md", "# 格洛\n\n格洛公司的暗号是蓝鲸。", service.other_editor),
            service.other_editor,
        ),
        limited=bearer(
            create_key(kb.ledger, "acme", "editor", "finance", collections=["财务制度"])
        ),
        limited_reader=bearer(
            create_key(kb.ledger, "acme", "reader", "finance-r", collections=["财务制度"])
        ),
    )


def _text_of(service: Service, doc_id: str) -> str:
    """What the tenant's whole-tenant editor reads of the document's chunks."""
    got = service.client.get(f"/api/documents/{doc_id}/chunks", headers=service.editor)
    assert got.status_code == 200, got.text
    return "".join(c["text"] for c in got.json()["chunks"])


def _outside(estate: Estate) -> list[str]:
    return [estate.duty, estate.manual, estate.loose, estate.foreign]


def test_same_name_upload_by_a_limited_key_is_a_document_of_its_own(
    service: Service, estate: Estate
) -> None:
    got = _upload(service, "manual.md", "# 我的手册\n\n报销单据须贴好。", estate.limited)
    mine = _ingested(service, got, estate.limited)
    assert mine != estate.manual and got.json()["collection"] == "财务制度"
    assert "Tiger-7788" in _text_of(service, estate.manual)  # the other collection's is untouched
    manual = service.client.get(f"/api/documents/{estate.manual}", headers=service.editor).json()
    assert manual["version"] == 1 and manual["collections"] == ["研发手册"]
    chunks = service.client.get(f"/api/documents/{mine}/chunks", headers=estate.limited).json()
    assert "Tiger-7788" not in json.dumps(chunks, ensure_ascii=False)
    # its second upload of that name is a new version of its own document
    again = _upload(service, "manual.md", "# 我的手册\n\n报销单据须贴好，并签字。", estate.limited)
    assert _ingested(service, again, estate.limited) == mine
    assert "Tiger-7788" in _text_of(service, estate.manual)
    # a name in no collection at all (not the key's to read) is not overwritten either
    loose = _upload(service, "散件.md", "# 散件\n\n散件库存为0件。", estate.limited)
    assert _ingested(service, loose, estate.limited) != estate.loose
    assert "12件" in _text_of(service, estate.loose)


def test_same_bytes_outside_the_keys_reach_are_not_named(service: Service, estate: Estate) -> None:
    got = _upload(service, "copy.md", SECRET, estate.limited)
    assert got.status_code == 202, got.text  # not 409 with the manual's id
    assert estate.manual not in got.text
    copy = _ingested(service, got, estate.limited)
    assert copy != estate.manual
    # within its reach the same bytes are still a duplicate (409 naming its own copy)
    again = _upload(service, "copy2.md", SECRET, estate.limited)
    assert again.status_code == 409 and again.json()["doc_id"] == copy
    # a whole-tenant key still finds the first copy it may read
    whole = _upload(service, "copy3.md", SECRET, service.editor)
    assert whole.status_code == 409 and whole.json()["doc_id"] in {estate.manual, copy}


def test_no_route_reads_or_writes_a_document_outside_the_keys_collections(
    service: Service, estate: Estate
) -> None:
    client = service.client
    for key in (estate.limited, estate.limited_reader):
        for doc_id in _outside(estate):
            assert client.get(f"/api/documents/{doc_id}", headers=key).status_code == 404
            assert client.get(f"/api/documents/{doc_id}/chunks", headers=key).status_code == 404
        listed = client.get("/api/documents", headers=key).json()
        assert [d["doc_id"] for d in listed["documents"]] == [estate.travel]
        answer = client.post(
            "/api/ask", json={"question": "生产数据库的管理员密码是什么？"}, headers=key
        )
        assert "Tiger" not in answer.text and estate.manual not in answer.text
        scoped = client.post(
            "/api/retrieve",
            json={"query": "管理员密码", "doc_ids": _outside(estate)},
            headers=key,
        )
        assert scoped.status_code == 200 and scoped.json()["sources"] == []
    for doc_id in _outside(estate):
        reparse = client.post(f"/api/documents/{doc_id}/reparse", headers=estate.limited)
        assert reparse.status_code == 404
        assert client.delete(f"/api/documents/{doc_id}", headers=estate.limited).status_code == 404
        member = client.post(
            "/api/collections/财务制度/documents",
            json={"doc_ids": [doc_id]},
            headers=estate.limited,
        )
        assert member.status_code == 404 and doc_id in member.text  # the id it sent, no more
        assert "manual.md" not in member.text and "研发手册" not in member.text
    names = client.get("/api/collections", headers=estate.limited)
    assert "研发手册" not in names.text
    out = client.request(
        "DELETE",
        "/api/collections/研发手册/documents",
        json={"doc_ids": [estate.duty]},
        headers=estate.limited,
    )
    assert out.status_code == 403
    # every one of them is still whole
    for doc_id in (estate.duty, estate.manual, estate.loose):
        got = client.get(f"/api/documents/{doc_id}", headers=service.editor).json()
        assert got["status"] == "SUCCESS" and got["version"] == 1
    assert (
        client.get(f"/api/documents/{estate.foreign}", headers=service.other_editor).json()[
            "status"
        ]
        == "SUCCESS"
    )
    # writes within its collection still work
    reparse = client.post(f"/api/documents/{estate.travel}/reparse", headers=estate.limited)
    assert reparse.status_code == 202
    assert client.post(f"/api/documents/{estate.travel}/reparse", headers=estate.limited_reader).status_code == 403  # fmt: skip


def test_a_shared_document_shows_and_loses_only_the_keys_collections(
    service: Service, estate: Estate
) -> None:
    client = service.client
    put = client.post(
        "/api/collections/财务制度/documents",
        json={"doc_ids": [estate.duty]},
        headers=service.editor,
    )
    assert put.status_code == 200
    seen = client.get(f"/api/documents/{estate.duty}", headers=estate.limited).json()
    assert seen["collections"] == ["财务制度"]  # not the other collection's name
    listed = client.get("/api/documents", headers=estate.limited).json()["documents"]
    assert all(d["collections"] == ["财务制度"] for d in listed)
    gone = client.delete(f"/api/documents/{estate.duty}", headers=estate.limited)
    assert gone.status_code == 200
    assert gone.json() == {"doc_id": estate.duty, "deleted": False, "removed_from": ["财务制度"]}
    whole = client.get(f"/api/documents/{estate.duty}", headers=service.editor).json()
    assert whole["status"] == "SUCCESS" and whole["collections"] == ["研发手册"]
    assert client.get(f"/api/documents/{estate.duty}", headers=estate.limited).status_code == 404
    # a document of its collection alone is deleted outright
    alone = client.delete(f"/api/documents/{estate.travel}", headers=estate.limited)
    assert alone.json() == {"doc_id": estate.travel, "deleted": True, "removed_from": []}
    assert client.get(f"/api/documents/{estate.travel}", headers=service.editor).status_code == 404


def _feedback(service: Service, key: dict[str, str], doc_ids: list[str]) -> Any:
    return service.client.post(
        "/api/feedback",
        json={
            "rating": "down",
            "question": "密码是什么？",
            "answer": "不知道",
            "sources": [{"doc_id": d, "chunk_id": f"{d}:0"} for d in doc_ids],
        },
        headers=key,
    )


def test_feedback_citing_documents_out_of_reach_is_refused(
    service: Service, estate: Estate
) -> None:
    for doc_id in _outside(estate):
        got = _feedback(service, estate.limited, [estate.travel, doc_id])
        assert got.status_code == 422, got.text
        assert doc_id not in got.text and "manual.md" not in got.text
    refused = _feedback(service, service.editor, [estate.foreign])  # another tenant's
    assert refused.status_code == 422 and estate.foreign not in refused.text
    assert _feedback(service, service.editor, ["no-such-document"]).status_code == 422
    assert _feedback(service, estate.limited, [estate.travel]).status_code == 201
    assert _feedback(service, service.editor, [estate.manual]).status_code == 201
    listed = service.client.get("/api/feedback", headers=estate.limited).json()["feedback"]
    cited = {s["doc_id"] for record in listed for s in record["sources"]}
    assert cited == {estate.travel}
    assert "manual.md" not in json.dumps(listed, ensure_ascii=False)


def test_a_reviewer_says_what_the_answer_should_have_been(service: Service, estate: Estate) -> None:
    client = service.client
    got = client.post(
        "/api/feedback",
        json={
            "rating": "down",
            "question": "一线城市住宿标准是多少？",
            "answer": "每晚400元",
            "sources": [{"doc_id": estate.travel, "chunk_id": f"{estate.travel}:0"}],
            "expected_answer": " 每晚600元 ",
        },
        headers=estate.limited,
    )
    assert got.status_code == 201, got.text
    mine = got.json()["feedback_id"]
    other = _feedback(service, service.editor, [estate.manual]).json()["feedback_id"]
    listed = client.get("/api/feedback", headers=estate.limited).json()["feedback"]
    assert [r["expected"] for r in listed] == [{"answer": "每晚600元", "refuse": False}]
    refuse = {"expected_answer": "", "should_refuse": True}
    patched = client.patch(f"/api/feedback/{mine}", json=refuse, headers=estate.limited)
    assert patched.status_code == 200 and patched.json()["expected"] == {
        "answer": "",
        "refuse": True,
    }
    # another collection's feedback is not the limited key's to correct (nor a reader's)
    assert (
        client.patch(f"/api/feedback/{other}", json=refuse, headers=estate.limited).status_code
        == 404
    )
    assert (
        client.patch(f"/api/feedback/{mine}", json=refuse, headers=service.reader).status_code
        == 403
    )
    assert (
        client.patch(f"/api/feedback/{mine}", json=refuse, headers=service.other_editor).status_code
        == 404
    )
    cleared = client.patch(f"/api/feedback/{other}", json={}, headers=service.editor)
    assert cleared.status_code == 200 and cleared.json()["expected"] is None
