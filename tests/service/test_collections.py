"""/api/collections: named groups of a tenant's documents, questions asked within them, keys
limited to some of them (issue 55)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from tests.service.conftest import OTHER, POLICY, Service, bearer


def _collection(service: Service, name: str, headers: dict[str, str] | None = None) -> Any:
    return service.client.post(
        "/api/collections", json={"name": name}, headers=headers or service.editor
    )


def _upload_into(service: Service, name: str, text: str, collection: str) -> str:
    got = service.client.post(
        f"/api/documents?collection={collection}",
        files={"file": (name, text.encode(), "application/octet-stream")},
        headers=service.editor,
    )
    assert got.status_code == 202, got.text
    assert got.json()["collection"] == collection
    doc_id: str = got.json()["doc_id"]
    assert service.wait(doc_id)["status"] == "SUCCESS"
    return doc_id


def _two_collections(service: Service) -> tuple[str, str]:
    assert _collection(service, "财务制度").status_code == 201
    assert _collection(service, "研发手册").status_code == 201
    travel = _upload_into(service, "差旅.md", POLICY, "财务制度")
    duty = _upload_into(service, "值班.md", OTHER, "研发手册")
    return travel, duty


def _ask(service: Service, question: str, headers: dict[str, str], **body: Any) -> Any:
    return service.client.post("/api/ask", json={"question": question, **body}, headers=headers)


def test_a_question_within_a_collection_reads_only_its_documents(service: Service) -> None:
    travel, duty = _two_collections(service)
    question = "周末值班补贴是多少？"
    everywhere = _ask(service, question, service.reader).json()
    assert "300" in everywhere["answer"]
    assert everywhere["sources"][0]["doc_id"] == duty

    finance = _ask(service, question, service.reader, collection="财务制度").json()
    assert "300" not in finance["answer"]
    assert {s["doc_id"] for s in finance["sources"]} <= {travel}

    both = _ask(service, question, service.reader, collection=["财务制度", "研发手册"]).json()
    assert "300" in both["answer"]

    found = service.client.post(
        "/api/retrieve", json={"query": "值班", "collection": "财务制度"}, headers=service.reader
    ).json()
    assert {s["doc_id"] for s in found["sources"]} <= {travel}

    chat = service.client.post(
        "/api/chat", json={"question": question, "collection": "研发手册"}, headers=service.reader
    ).json()
    assert "300" in chat["answer"]

    missing = _ask(service, question, service.reader, collection="没有这个")
    assert missing.status_code == 404 and "没有这个" in missing.json()["detail"]


def test_collections_are_listed_renamed_and_documents_filtered(service: Service) -> None:
    travel, duty = _two_collections(service)
    listed = service.client.get("/api/collections", headers=service.reader).json()
    assert [(c["name"], c["documents"]) for c in listed["collections"]] == [
        ("研发手册", 1),
        ("财务制度", 1),
    ]
    docs = service.client.get("/api/documents?collection=财务制度", headers=service.reader).json()
    assert [d["doc_id"] for d in docs["documents"]] == [travel] and docs["total"] == 1
    assert docs["documents"][0]["collections"] == ["财务制度"]

    renamed = service.client.patch(
        "/api/collections/财务制度", json={"name": "财务"}, headers=service.editor
    )
    assert renamed.status_code == 200 and renamed.json()["documents"] == 1
    assert _ask(service, "住宿标准", service.reader, collection="财务").status_code == 200
    assert _ask(service, "住宿标准", service.reader, collection="财务制度").status_code == 404
    taken = service.client.patch(
        "/api/collections/财务", json={"name": "研发手册"}, headers=service.editor
    )
    assert taken.status_code == 409
    assert _collection(service, "研发手册").status_code == 409
    assert _collection(service, "a/b").status_code == 422
    assert _collection(service, "x", headers=service.reader).status_code == 403

    # another tenant sees none of it
    other = service.client.get("/api/collections", headers=service.other_editor).json()
    assert other["collections"] == []
    assert _ask(service, "住宿标准", service.other_editor, collection="财务").status_code == 404


def test_documents_are_put_in_and_taken_out(service: Service) -> None:
    travel, duty = _two_collections(service)
    add = service.client.post(
        "/api/collections/财务制度/documents", json={"doc_ids": [duty]}, headers=service.editor
    )
    assert add.status_code == 200 and add.json()["changed"] == 1
    assert (
        "300"
        in _ask(service, "周末值班补贴是多少？", service.reader, collection="财务制度").json()[
            "answer"
        ]
    )
    remove = service.client.request(
        "DELETE",
        "/api/collections/财务制度/documents",
        json={"doc_ids": [duty]},
        headers=service.editor,
    )
    assert remove.json()["changed"] == 1
    other_tenant_doc = service.upload("x.md", "# 其他\n\n其他租户的文件。", service.other_editor)
    foreign = service.client.post(
        "/api/collections/财务制度/documents",
        json={"doc_ids": [other_tenant_doc.json()["doc_id"]]},
        headers=service.editor,
    )
    assert foreign.status_code == 404


def test_deleting_a_collection_keeps_or_deletes_its_documents_as_asked(service: Service) -> None:
    travel, duty = _two_collections(service)
    kept = service.client.delete("/api/collections/研发手册", headers=service.editor).json()
    assert kept["documents_kept"] == [duty] and kept["documents_deleted"] == []
    assert service.client.get(f"/api/documents/{duty}", headers=service.reader).status_code == 200

    # in two collections: deleting one of them with documents=delete keeps it
    assert _collection(service, "全部").status_code == 201
    service.client.post(
        "/api/collections/全部/documents", json={"doc_ids": [travel]}, headers=service.editor
    )
    gone = service.client.delete(
        "/api/collections/财务制度?documents=delete", headers=service.editor
    ).json()
    assert gone == {"name": "财务制度", "documents_deleted": [], "documents_kept": [travel]}
    gone = service.client.delete(
        "/api/collections/全部?documents=delete", headers=service.editor
    ).json()
    assert gone["documents_deleted"] == [travel]
    assert service.client.get(f"/api/documents/{travel}", headers=service.reader).status_code == 404
    uploads = service.app.state.service.upload_dir
    assert not (uploads / travel).exists()  # its stored file too, as DELETE /api/documents does
    assert (uploads / duty).is_dir()
    found = service.client.post(
        "/api/retrieve", json={"query": "住宿标准"}, headers=service.reader
    ).json()
    assert all(s["doc_id"] != travel for s in found["sources"])


def test_a_key_limited_to_a_collection_sees_only_it(service: Service) -> None:
    from rag_app.service.auth import create_key

    travel, duty = _two_collections(service)
    kb = service.app.state.service.kb
    limited = bearer(create_key(kb.ledger, "acme", "editor", "finance", collections=["财务制度"]))

    names = service.client.get("/api/collections", headers=limited).json()["collections"]
    assert [c["name"] for c in names] == ["财务制度"]
    docs = service.client.get("/api/documents", headers=limited).json()
    assert [d["doc_id"] for d in docs["documents"]] == [travel] and docs["total"] == 1
    assert service.client.get(f"/api/documents/{duty}", headers=limited).status_code == 404
    assert service.client.delete(f"/api/documents/{duty}", headers=limited).status_code == 404

    answer = _ask(service, "周末值班补贴是多少？", limited).json()  # no collection named: its own
    assert "300" not in answer["answer"]
    assert {s["doc_id"] for s in answer["sources"]} <= {travel}
    assert _ask(service, "值班", limited, collection="研发手册").status_code == 403
    assert _ask(service, "值班", limited, doc_ids=[duty]).json()["sources"] == []
    assert _collection(service, "新的", headers=limited).status_code == 403

    # its uploads go into its collection
    up = service.upload("报销.md", "# 报销\n\n报销须在30天内提交。", limited)
    assert up.status_code == 202 and up.json()["collection"] == "财务制度"


def test_old_knowledge_bases_gain_collections_and_unknown_names_fail_clearly(
    service: Service,
) -> None:
    kb = service.app.state.service.kb
    try:
        kb.ask("住宿标准", tenant="acme", collections=["没有"])
    except LookupError as exc:
        assert "没有" in str(exc)
    else:
        raise AssertionError("an unknown collection must fail")
    kb.collections.create("acme", "空的")
    answer = kb.ask("住宿标准", tenant="acme", collections=["空的"])
    assert answer.sources == []


def test_a_collections_recent_thumbs_down_are_listed(service: Service) -> None:
    travel, duty = _two_collections(service)
    for question, collection, doc_id in (
        ("住宿标准？", "财务制度", travel),
        ("值班补贴？", "研发手册", duty),
    ):
        sent = service.client.post(
            "/api/feedback",
            json={
                "rating": "down",
                "comment": "不对",
                "question": question,
                "answer": "…",
                "sources": [{"doc_id": doc_id, "chunk_id": f"{doc_id}:1:0"}],
                "collection": collection,
            },
            headers=service.editor,
        )
        assert sent.status_code == 201, sent.text
    got = service.client.get(
        "/api/feedback?rating=down&collection=研发手册", headers=service.editor
    ).json()
    assert [f["question"] for f in got["feedback"]] == ["值班补贴？"]
    assert got["feedback"][0]["settings"]["collections"] == ["研发手册"]
    every = service.client.get("/api/feedback?rating=down", headers=service.editor).json()
    assert len(every["feedback"]) == 2


def test_a_conversation_stays_in_the_collection_it_was_started_in(service: Service) -> None:
    travel, duty = _two_collections(service)
    first = service.client.post(
        "/api/chat",
        json={"question": "周末值班补贴是多少？", "collection": "财务制度"},
        headers=service.reader,
    ).json()
    assert first["collections"] == ["财务制度"] and "300" not in first["answer"]
    service.client.patch(  # renamed meanwhile: the conversation follows it
        "/api/collections/财务制度", json={"name": "财务"}, headers=service.editor
    )
    second = service.client.post(
        "/api/chat",
        json={"question": "值班补贴是多少？", "conversation_id": first["conversation_id"]},
        headers=service.reader,
    ).json()
    assert second["collections"] == ["财务"] and "300" not in second["answer"]
    assert {s["doc_id"] for s in second["sources"]} <= {travel}
    stored = service.client.get(
        f"/api/conversations/{first['conversation_id']}", headers=service.reader
    ).json()
    assert stored["collections"] == ["财务"]
    elsewhere = service.client.post(  # named in the turn: that one
        "/api/chat",
        json={
            "question": "周末值班补贴是多少？",
            "conversation_id": first["conversation_id"],
            "collection": "研发手册",
        },
        headers=service.reader,
    ).json()
    assert "300" in elsewhere["answer"]


def test_me_names_the_collections_a_key_is_limited_to(service: Service) -> None:
    from rag_app.service.auth import create_key

    _two_collections(service)
    kb = service.app.state.service.kb
    limited = bearer(create_key(kb.ledger, "acme", "reader", collections=["研发手册"]))
    assert service.client.get("/api/me", headers=limited).json()["collections"] == ["研发手册"]
    assert service.client.get("/api/me", headers=service.reader).json()["collections"] is None


def test_a_ledger_made_before_collections_gains_them(tmp_path: Path) -> None:
    import sqlite3

    from rag_app.store.ledger import Ledger

    path = tmp_path / "old.db"
    with sqlite3.connect(path) as conn:  # the conversations table as the previous release made it
        conn.execute(
            "CREATE TABLE conversations (conversation_id VARCHAR(32) PRIMARY KEY, tenant "
            "VARCHAR(128) NOT NULL, key_id VARCHAR(32) NOT NULL, title TEXT NOT NULL, "
            "created_at FLOAT NOT NULL, updated_at FLOAT NOT NULL)"
        )
        now = time.time()  # a conversation idle past its keep-days would be gone
        conn.execute("INSERT INTO conversations VALUES ('c1', 'acme', 'k', 't', ?, ?)", (now, now))
    ledger = Ledger(f"sqlite:///{path}")
    try:
        from rag_app.store.conversations import ConversationStore

        store = ConversationStore(ledger.engine)
        assert store.collections_of("acme", "k", "c1") == []
        new = store.create("acme", "k", "q", collections=["x1"])
        assert store.collections_of("acme", "k", new) == ["x1"]
    finally:
        ledger.close()


def test_a_conversation_whose_collection_was_deleted_asks_everywhere(service: Service) -> None:
    _two_collections(service)
    first = service.client.post(
        "/api/chat",
        json={"question": "住宿标准是多少？", "collection": "财务制度"},
        headers=service.editor,
    ).json()
    service.client.delete("/api/collections/财务制度", headers=service.editor)
    stored = service.client.get(
        f"/api/conversations/{first['conversation_id']}", headers=service.editor
    ).json()
    assert stored["collections"] == []  # what the next turn reads: all the documents
    second = service.client.post(
        "/api/chat",
        json={"question": "周末值班补贴是多少？", "conversation_id": first["conversation_id"]},
        headers=service.editor,
    ).json()
    assert second["collections"] == [] and "300" in second["answer"]
