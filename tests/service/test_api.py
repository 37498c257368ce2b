"""The HTTP API end to end: real app, real embedding model, real SQLite + Chroma in tmp."""

from __future__ import annotations

import io
import os
import time
import zipfile
from collections.abc import Callable
from datetime import datetime

from tests.service.conftest import OTHER, POLICY, Service, bearer


def _ingested(service: Service, name: str = "差旅管理办法.md", text: str = POLICY) -> str:
    response = service.upload(name, text)
    assert response.status_code == 202, response.text
    body = response.json()
    assert body["status"] == "PENDING" and body["filename"] == name
    assert service.wait(body["doc_id"])["status"] == "SUCCESS"
    return str(body["doc_id"])


class TestAuth:
    def test_health_needs_no_key(self, service: Service) -> None:
        body = service.client.get("/api/health").json()
        assert body["status"] == "ok" and set(body["queue"]) == {"pending", "processing"}
        # in-process worker threads: how many run; no processes, nothing restarted
        workers = body["workers"]
        assert workers["mode"] == "threads" and workers["configured"] == workers["alive"] == 1
        assert workers["restarts"] == 0 and workers["processes"] == []

    def test_health_without_workers_says_jobs_are_left_to_rag_worker(
        self, make_service: Callable[..., Service]
    ) -> None:
        workers = make_service(workers=0).client.get("/api/health").json()["workers"]
        assert workers["mode"] == "external" and workers["configured"] == workers["alive"] == 0

    def test_missing_and_invalid_keys_are_401(self, service: Service) -> None:
        assert service.client.get("/api/documents").status_code == 401
        response = service.client.get("/api/documents", headers=bearer("rk_nope_123"))
        assert response.status_code == 401
        assert "invalid" in response.json()["detail"]
        assert service.client.post("/api/ask", json={"question": "x"}).status_code == 401

    def test_me_reports_tenant_and_role(self, service: Service) -> None:
        body = service.client.get("/api/me", headers=service.reader).json()
        assert body["tenant"] == "acme" and body["role"] == "reader"

    def test_reader_cannot_upload_reparse_or_delete(self, service: Service) -> None:
        doc_id = _ingested(service)
        assert service.upload("x.md", "# 标题\n\n内容", headers=service.reader).status_code == 403
        reparse = service.client.post(f"/api/documents/{doc_id}/reparse", headers=service.reader)
        assert reparse.status_code == 403
        assert (
            service.client.delete(f"/api/documents/{doc_id}", headers=service.reader).status_code
            == 403
        )
        # but can read and ask
        assert (
            service.client.get(f"/api/documents/{doc_id}", headers=service.reader).status_code
            == 200
        )
        answer = service.client.post(
            "/api/ask", json={"question": "一线城市住宿标准是多少？"}, headers=service.reader
        )
        assert answer.status_code == 200 and "600" in answer.json()["answer"]

    def test_revoked_key_is_401(self, service: Service) -> None:
        from rag_app.service.auth import create_key, revoke_key

        ledger = service.app.state.service.kb.ledger
        key = create_key(ledger, "acme", "reader")
        assert service.client.get("/api/me", headers=bearer(key)).status_code == 200
        assert revoke_key(ledger, key.split("_")[1])
        assert service.client.get("/api/me", headers=bearer(key)).status_code == 401


class TestDocuments:
    def test_upload_list_get_chunks(self, service: Service) -> None:
        doc_id = _ingested(service)
        docs = service.client.get("/api/documents", headers=service.editor).json()["documents"]
        assert [d["doc_id"] for d in docs] == [doc_id]
        doc = docs[0]
        assert doc["filename"] == "差旅管理办法.md" and doc["version"] == 1
        assert doc["chunk_count"] >= 1 and doc["job"]["status"] == "SUCCESS"
        chunks = service.client.get(
            f"/api/documents/{doc_id}/chunks", headers=service.editor
        ).json()
        assert chunks["version"] == 1 and len(chunks["chunks"]) == doc["chunk_count"]
        assert any("住宿标准" in c["title_path"] for c in chunks["chunks"])
        assert all(c["end_char"] > c["start_char"] for c in chunks["chunks"])

    def test_document_list_pages(self, service: Service) -> None:
        names = ["c.md", "a.md", "b.md"]
        for i, name in enumerate(names):
            assert service.upload(name, f"# 文档{i}\n\n第{i}份制度的正文。").status_code == 202
        service.upload("x.md", OTHER, headers=service.other_editor)  # another tenant's

        def page(**params: int) -> dict[str, object]:
            response = service.client.get("/api/documents", headers=service.editor, params=params)
            assert response.status_code == 200, response.text
            return dict(response.json())

        full = page()
        assert full["total"] == 3 and (full["limit"], full["offset"]) == (200, 0)
        assert [d["filename"] for d in full["documents"]] == ["a.md", "b.md", "c.md"]  # type: ignore[attr-defined]
        first, rest = page(limit=2), page(limit=2, offset=2)
        assert first["total"] == rest["total"] == 3
        paged = [d["filename"] for d in first["documents"] + rest["documents"]]  # type: ignore[operator]
        assert paged == ["a.md", "b.md", "c.md"]
        assert page(offset=5)["documents"] == []
        for bad in ({"limit": 0}, {"limit": 1001}, {"offset": -1}):
            got = service.client.get("/api/documents", headers=service.editor, params=bad)
            assert got.status_code == 422, bad

    def test_unknown_document_is_404(self, service: Service) -> None:
        for method, path in (
            ("get", "/api/documents/nope"),
            ("get", "/api/documents/nope/chunks"),
            ("post", "/api/documents/nope/reparse"),
            ("delete", "/api/documents/nope"),
        ):
            assert service.client.request(method, path, headers=service.editor).status_code == 404

    def test_bad_file_fails_with_a_short_reason_and_others_still_work(
        self, service: Service
    ) -> None:
        # passes the upload sniff (text), fails in the reader: mis-encoded junk is still text-ish
        response = service.upload("空.md", "   \n\n   ")
        assert response.status_code == 422  # empty: rejected at upload already
        doc_id = _ingested(service)
        assert (
            service.client.get(f"/api/documents/{doc_id}", headers=service.editor).json()["status"]
            == "SUCCESS"
        )

    def test_failed_ingestion_is_reported_and_secret_free(self, service: Service) -> None:
        # a PDF header with garbage behind it passes the sniff and fails in the PDF reader
        response = service.upload("broken.pdf", b"%PDF-1.7\n" + b"\x00garbage" * 50)
        assert response.status_code == 202
        body = service.wait(response.json()["doc_id"])
        assert body["status"] == "FAILED" and body["job"]["status"] == "FAILED"
        assert body["error"] and len(body["error"]) <= 500
        assert str(service.kb_dir) not in body["error"]

    def test_reparse_makes_a_new_version_and_drops_the_old(self, service: Service) -> None:
        doc_id = _ingested(service)
        kb = service.app.state.service.kb
        old_ids = {c.chunk_id for c in kb.documents.chunks(doc_id)}
        response = service.client.post(f"/api/documents/{doc_id}/reparse", headers=service.editor)
        assert response.status_code == 202 and response.json()["job_id"] > 0
        body = service.wait(doc_id)
        assert body["status"] == "SUCCESS" and body["version"] == 2
        new_ids = {c.chunk_id for c in kb.documents.chunks(doc_id)}
        assert new_ids and not (new_ids & old_ids)
        assert kb.vectors.all_ids() == kb.ledger.all_active_chunk_ids() == new_ids
        assert kb.ledger.keyword_count() == len(new_ids)

    def test_delete_removes_everything(self, service: Service) -> None:
        doc_id = _ingested(service)
        kb = service.app.state.service.kb
        response = service.client.delete(f"/api/documents/{doc_id}", headers=service.editor)
        assert response.status_code == 200 and response.json() == {
            "doc_id": doc_id,
            "deleted": True,
            "removed_from": [],
        }
        assert (
            service.client.get(f"/api/documents/{doc_id}", headers=service.editor).status_code
            == 404
        )
        assert kb.vectors.all_ids() == set() and kb.ledger.keyword_count() == 0
        assert not (service.kb_dir / "uploads" / doc_id).exists()
        answer = service.client.post(
            "/api/ask", json={"question": "一线城市住宿标准是多少？"}, headers=service.editor
        ).json()
        assert answer["refused"] and answer["sources"] == []

    def test_reupload_of_same_name_with_new_content_replaces_the_document(
        self, service: Service
    ) -> None:
        doc_id = _ingested(service)
        second = _ingested(service, text=POLICY.replace("600", "800"))
        assert second == doc_id
        answer = service.client.post(
            "/api/ask", json={"question": "一线城市住宿标准是多少？"}, headers=service.editor
        ).json()
        assert "800" in answer["answer"] and "600" not in answer["answer"]

    def test_a_superseded_versions_upload_is_removed_and_times_carry_their_offset(
        self, service: Service
    ) -> None:
        doc_id = _ingested(service)
        folders = list((service.kb_dir / "uploads" / doc_id).iterdir())
        assert len(folders) == 1
        old = time.time() - 3600  # not an upload being stored right now
        os.utime(folders[0], (old, old))
        _ingested(service, text=POLICY.replace("600", "800"))
        (kept,) = (service.kb_dir / "uploads" / doc_id).iterdir()
        assert kept != folders[0] and "800" in next(kept.iterdir()).read_text()
        doc = service.client.get(f"/api/documents/{doc_id}", headers=service.editor).json()
        for field in ("created_at", "updated_at"):
            stamp = datetime.fromisoformat(doc[field])
            assert stamp.utcoffset() is not None, doc[field]  # ISO 8601 with its offset


class TestUploadSafety:
    def test_too_large_is_413(self, make_service) -> None:  # type: ignore[no-untyped-def]
        service = make_service(upload_max_mb=0.01)
        response = service.upload("big.md", "# 大文件\n\n" + "很长的内容。" * 4000)
        assert response.status_code == 413 and "too large" in response.json()["detail"]

    def test_unknown_extension_is_415(self, service: Service) -> None:
        response = service.upload("tool.exe", b"MZ\x90\x00")
        assert response.status_code == 415 and "unsupported" in response.json()["detail"]

    def test_binary_named_md_is_rejected(self, service: Service) -> None:
        png = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64
        response = service.upload("notes.md", png)
        assert response.status_code == 415 and "binary" in response.json()["detail"]
        nul = service.upload("notes.txt", b"abc\x00\x01\x02def" * 10)
        assert nul.status_code == 415

    def test_fake_pdf_and_docx_are_rejected(self, service: Service) -> None:
        assert service.upload("a.pdf", "# not a pdf").status_code == 415
        assert service.upload("a.docx", "plain text").status_code == 415
        for name in ("a.xlsx", "a.pptx"):
            rejected = service.upload(name, "plain text")
            assert rejected.status_code == 415 and "ZIP/OOXML" in rejected.json()["detail"]
        rejected = service.upload("a.xls", "plain text")
        assert rejected.status_code == 415 and "OLE2/BIFF" in rejected.json()["detail"]
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as z:
            z.writestr("word/document.xml", "<w:document/>")
        assert service.upload("a.docx", buf.getvalue()).status_code == 202  # sniff passes

    def test_path_traversal_names_are_sanitized(self, service: Service) -> None:
        response = service.upload("../../../etc/制度.md", "# 制度\n\n内容一。")
        assert response.status_code == 202
        assert response.json()["filename"] == "制度.md"
        stored = list((service.kb_dir / "uploads").rglob("制度.md"))
        assert len(stored) == 1 and service.kb_dir / "uploads" in stored[0].parents
        assert not (service.kb_dir.parent / "etc").exists()

    def test_duplicate_content_is_409_with_the_existing_id(self, service: Service) -> None:
        doc_id = _ingested(service)
        response = service.upload("副本.md", POLICY)
        assert response.status_code == 409 and response.json()["doc_id"] == doc_id
        # another tenant may hold the same content
        assert service.upload("副本.md", POLICY, headers=service.other_editor).status_code == 202


class TestTenants:
    def test_tenant_isolation(self, service: Service) -> None:
        acme_doc = _ingested(service)
        response = service.upload("值班制度.md", OTHER, headers=service.other_editor)
        globex_doc = response.json()["doc_id"]
        assert service.wait(globex_doc, headers=service.other_editor)["status"] == "SUCCESS"

        listed = service.client.get("/api/documents", headers=service.other_editor).json()
        assert [d["doc_id"] for d in listed["documents"]] == [globex_doc]
        for method, path in (
            ("get", f"/api/documents/{acme_doc}"),
            ("get", f"/api/documents/{acme_doc}/chunks"),
            ("post", f"/api/documents/{acme_doc}/reparse"),
            ("delete", f"/api/documents/{acme_doc}"),
        ):
            got = service.client.request(method, path, headers=service.other_editor)
            assert got.status_code == 404, (method, path)
        # acme's best match is never served to globex, even when asked for it by id
        for payload in (
            {"question": "一线城市住宿标准是多少？"},
            {"question": "一线城市住宿标准是多少？", "doc_ids": [acme_doc]},
        ):
            answer = service.client.post(
                "/api/ask", json=payload, headers=service.other_editor
            ).json()
            assert all(s["doc_id"] != acme_doc for s in answer["sources"])
            assert "600" not in answer["answer"]
        found = service.client.post(
            "/api/retrieve", json={"query": "住宿标准 600元"}, headers=service.other_editor
        ).json()["sources"]
        assert all(s["doc_id"] == globex_doc for s in found)
        # the tenant comes from the key: a tenant field in the body is ignored
        sneaky = service.client.post(
            "/api/retrieve",
            json={"query": "住宿标准 600元", "tenant": "acme"},
            headers=service.other_editor,
        ).json()["sources"]
        assert all(s["doc_id"] == globex_doc for s in sneaky)


class TestQuery:
    def test_ask_cites_backend_sources(self, service: Service) -> None:
        doc_id = _ingested(service)
        body = service.client.post(
            "/api/ask",
            json={"question": "一线城市住宿标准是多少？", "top_k": 3},
            headers=service.editor,
        ).json()
        assert not body["refused"] and "600" in body["answer"] and "[1]" in body["answer"]
        first = body["sources"][0]
        assert first["doc_id"] == doc_id and first["filename"] == "差旅管理办法.md"
        assert "住宿标准" in first["title_path"] and first["end_char"] > first["start_char"]
        assert "source" not in first  # server paths are not exposed
        assert body["timings"]["total_ms"] > 0
        # answered: the gate's probability reached its threshold
        assert 0 < body["threshold"] <= body["confidence"] <= 1

    def test_ask_refuses_without_evidence(self, service: Service) -> None:
        _ingested(service)
        body = service.client.post(
            "/api/ask", json={"question": "Docker 镜像的名称是什么？"}, headers=service.editor
        ).json()
        assert (
            body["refused"] and body["answer"] == "当前知识库中未找到足够依据。" and body["reason"]
        )
        assert body["explanation"] and body["citations"] == []
        assert 0 <= body["confidence"] < body["threshold"]  # refused: below the threshold
        assert body["reviewed"] is False  # no LLM read it (RAG_LLM_REVIEW, LLM mode only)
        assert all(s["filename"] for s in body["sources"])  # the closest sources, named
        # no passage mentions Docker: no unit is quoted as the closest
        assert body["reason"] == "entity_missing" and body["closest"] == []
        other = service.client.post(
            "/api/ask", json={"question": "年会在哪里举办？"}, headers=service.editor
        ).json()
        closest = other["closest"]  # refused otherwise: the closest unit, in the first source
        assert other["refused"] and other["reason"] != "entity_missing", other
        assert len(closest) == 1 and closest[0]["source"] == 1 and closest[0]["text"]

    def test_retrieve_and_validation(self, service: Service) -> None:
        doc_id = _ingested(service)
        found = service.client.post(
            "/api/retrieve", json={"query": "住宿标准", "top_k": 2}, headers=service.editor
        ).json()["sources"]
        assert 1 <= len(found) <= 2 and found[0]["doc_id"] == doc_id
        bad = service.client.post("/api/ask", json={"question": ""}, headers=service.editor)
        assert bad.status_code == 422
        too_many = service.client.post(
            "/api/retrieve", json={"query": "x", "top_k": 500}, headers=service.editor
        )
        assert too_many.status_code == 422

    def test_openapi_lists_every_route(self, service: Service) -> None:
        paths = service.client.get("/openapi.json").json()["paths"]
        for path in (
            "/api/documents",
            "/api/documents/{doc_id}",
            "/api/documents/{doc_id}/chunks",
            "/api/documents/{doc_id}/reparse",
            "/api/ask",
            "/api/retrieve",
            "/api/health",
        ):
            assert path in paths


def test_empty_doc_id_list_is_an_empty_scope(service: Service) -> None:
    _ingested(service)
    found = service.client.post(
        "/api/retrieve", json={"query": "住宿标准", "doc_ids": []}, headers=service.editor
    )
    assert found.status_code == 200 and found.json()["sources"] == []


def test_an_upload_wakes_the_idle_worker_thread(make_service: Callable[..., Service]) -> None:
    """The worker thread polls once an hour here: the upload's wake-up gets the job done."""
    service = make_service(worker_poll_seconds=3600)
    for i in range(2):  # the second one finds the worker idle in its long wait
        response = service.upload(f"第{i}号.md", f"# 通知{i}\n\n第{i}号通知的内容。")
        assert response.status_code == 202, response.text
        assert service.wait(response.json()["doc_id"])["status"] == "SUCCESS"
