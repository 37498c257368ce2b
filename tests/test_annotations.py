"""Annotations (issue 68, item 2): stored, matched first (the same question or a light
paraphrase, never another entity), within tenant and collection, and an annotation citing a
chunk that was re-parsed or deleted says so."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rag_app.annotations import key_terms, same_question, swaps_a_slot
from rag_app.store.annotations import Annotation, AnnotationChange, normalize_question

STOCK = "# 库存明细\n\n| SKU | 名称 | 库存 |\n|---|---|---|\n| SKU-1023 | 螺栓 | 1277 |\n| SKU-1024 | 螺母 | 80 |\n"
LEAVE = "# 休假制度\n\n## 年假\n\n员工工作满一年后享有带薪年假{days}。\n"


def note(kb: Any, question: str, answer: str = "", **fields: Any) -> Annotation:
    return kb.annotations.add(
        Annotation(
            tenant=fields.pop("tenant", "default"), question=question, answer=answer,
            author="审核员", **fields,
        )
    )  # fmt: skip


@pytest.fixture
def stocked(kb: Any, tmp_path: Path) -> Any:
    (tmp_path / "库存.md").write_text(STOCK, encoding="utf-8")
    (tmp_path / "休假.md").write_text(LEAVE.format(days="五天"), encoding="utf-8")
    assert kb.ingest([tmp_path / "库存.md", tmp_path / "休假.md"]).failed == 0
    return kb


def test_key_terms_and_slot_swaps_tell_entities_apart() -> None:
    assert key_terms("SKU-1023的库存？") != key_terms("那SKU-1024的库存呢")
    assert key_terms("第二条规定了什么") != key_terms("第三条规定了什么")
    assert key_terms("出差三天以上") == key_terms("出差3天以上")
    assert key_terms("2023年的年假") != key_terms("2024年的年假")
    assert key_terms("《员工手册》第十条") != key_terms("《财务手册》第十条")
    assert swaps_a_slot("中危漏洞应当在多少日内修复？", "高危漏洞应当在多少日内修复？")
    assert swaps_a_slot("30岁男性年交保费是多少？", "30岁女性年交保费是多少？")
    assert not swaps_a_slot("年假有几天？", "请问年假有几天呢")
    assert same_question("SKU-1023的库存是多少？", "请问SKU-1023的库存是多少")
    assert normalize_question("年假 有几天？") == normalize_question("年假有几天")


def test_store_lists_edits_and_deletes(kb: Any) -> None:
    first = note(kb, "年假有几天？", "十天")
    second = note(kb, "SKU-1024还有货吗？", should_refuse=True, collection_id="c1")
    assert first.annotation_id != second.annotation_id and first.author == "审核员"
    assert first.created_at > 0 and first.updated_at == first.created_at
    listed = kb.annotations.store.list("default")
    assert [a.annotation_id for a in listed] == [second.annotation_id, first.annotation_id]
    assert [a.annotation_id for a in kb.annotations.store.list("default", collections=["c1"],
            tenant_wide=False)] == [second.annotation_id]  # fmt: skip
    assert kb.annotations.store.list("other") == []
    edited = kb.annotations.edit("default", first.annotation_id, AnnotationChange(answer="十二天"))
    assert (
        edited is not None and edited.answer == "十二天" and edited.updated_at >= first.updated_at
    )
    assert kb.annotations.edit("other", first.annotation_id, AnnotationChange(answer="x")) is None
    assert kb.annotations.delete("default", first.annotation_id)
    assert not kb.annotations.delete("default", first.annotation_id)
    assert [a.annotation_id for a in kb.annotations.store.list(None)] == [second.annotation_id]


def test_an_annotated_question_and_its_paraphrase_get_the_annotation(stocked: Any) -> None:
    kb = stocked
    before = kb.ask("年假有几天？")
    assert before.annotation is None and "五天" in before.answer
    annotation = note(kb, "年假有几天？", "年假为十天（2025年起）。")
    for asked in ("年假有几天？", "请问年假有几天呢", "年假 有几天"):
        answer = kb.ask(asked)
        assert answer.answer == "年假为十天（2025年起）。" and answer.mode == "annotation"
        assert answer.annotation is not None
        assert answer.annotation.annotation_id == annotation.annotation_id
        assert answer.annotation.author == "审核员" and answer.outcome == "answered"
    assert kb.ask("请问年假有几天呢").annotation.match == "similar"  # type: ignore[union-attr]
    assert kb.ask("年假有几天？").annotation.match == "exact"  # type: ignore[union-attr]


def test_another_entity_never_gets_the_annotation(stocked: Any) -> None:
    kb = stocked
    note(kb, "SKU-1023的库存是多少？", "SKU-1023 已停产，库存以仓库盘点为准。")
    assert kb.ask("SKU-1023的库存是多少？").annotation is not None
    other = kb.ask("SKU-1024的库存是多少？")
    assert other.annotation is None and "80" in other.answer


def test_scope_other_tenant_and_other_collection_never_match(stocked: Any) -> None:
    kb = stocked
    note(kb, "年假有几天？", "别的租户的答案", tenant="globex")
    note(kb, "年假有几天？", "研发手册里的答案", collection_id="rd")
    assert kb.ask("年假有几天？", collection_ids=["finance"]).annotation is None
    assert kb.ask("年假有几天？", tenant="globex").answer == "别的租户的答案"
    assert kb.ask("年假有几天？", collection_ids=["rd"]).answer == "研发手册里的答案"
    assert kb.ask("年假有几天？").answer == "研发手册里的答案"  # the whole tenant: any collection
    tenant_wide = note(kb, "年假有几天？", "全租户的答案")
    assert kb.ask("年假有几天？", collection_ids=["finance"]).annotation.annotation_id == (  # type: ignore[union-attr]
        tenant_wide.annotation_id
    )


def test_a_refusal_annotation_refuses(stocked: Any) -> None:
    kb = stocked
    note(kb, "SKU-1024的库存是多少？", should_refuse=True)
    answer = kb.ask("SKU-1024的库存是多少？")
    assert answer.refused and answer.outcome == "refused" and answer.reason == "annotated_refusal"
    assert answer.annotation is not None and answer.sources == []


def test_a_cited_chunk_is_the_source_until_reparsed_or_deleted(
    stocked: Any, tmp_path: Path
) -> None:
    kb = stocked
    leave = next(d for d in kb.documents.list() if d.rel_path.endswith("休假.md"))
    chunk = kb.documents.chunks(leave.doc_id)[-1]
    cited = kb.annotations.store.cite("default", chunk.chunk_id)
    assert cited is not None and kb.annotations.store.cite("globex", chunk.chunk_id) is None
    note(kb, "年假有几天？", "年假为五天。", cited=cited)
    answer = kb.ask("年假有几天？")
    assert answer.annotation.citation == "current"  # type: ignore[union-attr]
    assert [s.chunk_id for s in answer.sources] == [chunk.chunk_id]
    assert "已更新" not in answer.answer

    (tmp_path / "休假.md").write_text(LEAVE.format(days="十天"), encoding="utf-8")
    assert (
        kb.ingestion.ingest_one(tmp_path / "休假.md", rel_path=leave.rel_path).status == "SUCCESS"
    )
    answer = kb.ask("年假有几天？")
    assert answer.annotation.citation == "updated" and answer.sources == []  # type: ignore[union-attr]
    assert "标注引用的段落已更新" in answer.answer and answer.answer.startswith("年假为五天。")

    kb.documents.delete(leave.doc_id)
    answer = kb.ask("年假有几天？")
    assert answer.annotation.citation == "deleted" and "标注引用的段落已删除" in answer.answer  # type: ignore[union-attr]


def test_writes_by_another_process_are_seen(stocked: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import rag_app.annotations as module

    kb = stocked
    assert kb.ask("年假有几天？").annotation is None  # the (empty) index is loaded
    monkeypatch.setattr(module, "STAMP_SECONDS", 0.0)
    kb.annotations.store.add(Annotation(tenant="default", question="年假有几天？", answer="十天"))
    assert kb.ask("年假有几天？").answer == "十天"  # written beside the index, still seen


def test_rag_migrate_copies_annotations_with_their_ids_and_vectors(tmp_path: Path) -> None:
    from rag_app.store.annotations import AnnotationStore
    from rag_app.store.ledger import Ledger
    from rag_app.store.migrate import copy_ledger

    source = Ledger(f"sqlite:///{tmp_path / 'a.db'}")
    target = Ledger(f"sqlite:///{tmp_path / 'b.db'}")
    try:
        store = AnnotationStore(source.engine)
        store.add(Annotation(tenant="t", question="旧问题", answer="旧"))
        store.delete("t", 1)
        kept = store.add(Annotation(tenant="t", question="年假有几天？", answer="十天"),
                         ("usem3", b"\x00" * 8))  # fmt: skip
        counts = copy_ledger(source, target)
        assert counts["annotations"] == 1
        copied = AnnotationStore(target.engine)
        assert copied.list("t") == [kept]
        assert copied.vectors("t", [kept.annotation_id]) == {
            kept.annotation_id: ("usem3", b"\x00" * 8)
        }
    finally:
        source.close()
        target.close()
