"""Hostile input is a 4xx with the problem in words, never a 500 (issue 16, point 4)."""

from __future__ import annotations

import pytest

from tests.service.conftest import POLICY, Service


def _raw_json(service: Service, path: str, body: str) -> object:
    headers = {**service.editor, "Content-Type": "application/json"}
    return service.client.post(path, content=body.encode("utf-8", "surrogatepass"), headers=headers)


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity"])
@pytest.mark.parametrize("path,field", [("/api/ask", "question"), ("/api/retrieve", "query")])
def test_non_finite_top_k_is_422(service: Service, path: str, field: str, value: str) -> None:
    response = _raw_json(service, path, f'{{"{field}": "住宿标准", "top_k": {value}}}')
    assert response.status_code == 422, response.text  # type: ignore[attr-defined]
    assert "top_k" in response.text  # type: ignore[attr-defined]


@pytest.mark.parametrize("path,field", [("/api/ask", "question"), ("/api/retrieve", "query")])
def test_lone_surrogate_in_the_question_is_422(service: Service, path: str, field: str) -> None:
    # JSON's escape for a lone surrogate: valid JSON, but not encodable as UTF-8
    response = _raw_json(service, path, f'{{"{field}": "住宿\\ud800标准"}}')
    assert response.status_code == 422, response.text  # type: ignore[attr-defined]
    assert "unicode" in response.text  # type: ignore[attr-defined]


def test_a_422_echoing_a_lone_surrogate_is_still_encodable(service: Service) -> None:
    # an invalid top_k makes the handler echo the body's bad value next to the question
    response = _raw_json(service, "/api/ask", '{"question": "\\udc80", "top_k": "\\ud800"}')
    assert response.status_code == 422, response.text  # type: ignore[attr-defined]
    echoed = [e["input"] for e in response.json()["detail"]]  # type: ignore[attr-defined]
    assert echoed == ["\\udc80", "\\ud800"]


def test_huge_offset_is_422(service: Service) -> None:
    for offset in (2**63, 2**63 - 1, 10**30):
        response = service.client.get(
            "/api/documents", params={"offset": offset}, headers=service.editor
        )
        assert response.status_code == 422, (offset, response.text)
        assert "offset" in response.text


def test_offset_at_the_cap_is_answered(service: Service) -> None:
    from rag_app.service.routes_documents import MAX_OFFSET

    response = service.client.get(
        "/api/documents", params={"offset": MAX_OFFSET}, headers=service.editor
    )
    assert response.status_code == 200 and response.json()["documents"] == []


@pytest.mark.parametrize("path,field", [("/api/ask", "question"), ("/api/retrieve", "query")])
def test_too_many_doc_ids_is_422_in_words(service: Service, path: str, field: str) -> None:
    from rag_app.service.schemas import MAX_DOC_IDS

    ids = [f"{i:024x}" for i in range(MAX_DOC_IDS + 1)]
    response = service.client.post(
        path, json={field: "住宿标准", "doc_ids": ids}, headers=service.editor
    )
    assert response.status_code == 422, response.text
    assert f"at most {MAX_DOC_IDS}" in response.text
    assert len(response.content) < 10_000  # the 4,097 ids are not echoed back
    many = [f"{i:024x}" for i in range(32_766)]  # 900 KB: over RAG_JSON_MAX_KB, never parsed
    response = service.client.post(
        path, json={field: "住宿标准", "doc_ids": many}, headers=service.editor
    )
    assert response.status_code == 413 and "RAG_JSON_MAX_KB" in response.text


@pytest.mark.parametrize("path,field", [("/api/ask", "question"), ("/api/retrieve", "query")])
def test_doc_ids_at_the_cap_are_answered(service: Service, path: str, field: str) -> None:
    from rag_app.service.schemas import MAX_DOC_IDS

    doc_id = service.upload("差旅管理办法.md", POLICY).json()["doc_id"]
    assert service.wait(doc_id)["status"] == "SUCCESS"
    ids = [f"{i:024x}" for i in range(MAX_DOC_IDS - 1)] + [doc_id]
    response = service.client.post(
        path, json={field: "住宿标准", "doc_ids": ids}, headers=service.editor
    )
    assert response.status_code == 200, response.text
    assert {s["doc_id"] for s in response.json()["sources"]} == {doc_id}


def test_long_chinese_upload_name_is_cut_to_the_file_system_limit(service: Service) -> None:
    from rag_app.service.uploads import MAX_NAME_BYTES

    name = "差" * 200 + ".md"
    response = service.upload(name, "# 制度\n\n内容一。")
    assert response.status_code == 202, response.text
    stored = response.json()["filename"]
    assert stored.endswith(".md") and stored.startswith("差")
    assert len(stored.encode()) <= MAX_NAME_BYTES <= 255
    assert service.wait(response.json()["doc_id"])["status"] == "SUCCESS"


def test_long_name_with_a_long_extension_is_cut(service: Service) -> None:
    response = service.upload("文" * 100 + ".md" + "档" * 100, "# 制度\n\n内容一。")
    assert response.status_code in (202, 415), response.text


@pytest.mark.parametrize(
    "raw,stored",
    [
        ("invoice\u202efdp.md", "invoicefdp.md"),  # right-to-left override
        ("\u2067报告\u2069.md", "报告.md"),  # right-to-left isolate ... pop
        ("制\u200b度\u200f.md", "制度.md"),  # zero-width space, right-to-left mark
        ("a\x85b\u2028c.md", "a_b_c.md"),  # C1 control, line separator
    ],
)
def test_bidi_and_invisible_characters_leave_upload_names(
    service: Service, raw: str, stored: str
) -> None:
    response = service.upload(raw, "# 制度\n\n内容一。")
    assert response.status_code == 202, response.text
    assert response.json()["filename"] == stored
    assert any((service.kb_dir / "uploads").rglob(stored))
