"""Table-row entries (RAG_TABLE_ROW_ENTRIES): each table row indexed on its own, naming its chunk."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from rag_app import KnowledgeBase
from rag_app.ingestion.row_entries import row_keywords, table_rows

CITIES = ["北仓", "南仓", "东仓", "西仓", "中仓"]


def table(title: str, rows: int, model: str = "K") -> str:
    lines = [f"# {title}", "", "| 仓库 | 型号 | 库存 | 负责人 |", "| --- | --- | --- | --- |"]
    for i in range(rows):
        lines.append(f"| {CITIES[i % 5]} | {model}{i} | {100 + i * 7} | 职员{i % 9} |")
    return "\n".join(lines) + "\n"


def row_count(kb: KnowledgeBase, doc_id: str | None = None) -> int:
    sql = "SELECT count(*) FROM row_fts" + (" WHERE doc_id = :d" if doc_id else "")
    with kb.ledger.engine.connect() as conn:
        return int(conn.execute(text(sql), {"d": doc_id}).scalar_one())


@pytest.fixture
def rows_kb(tmp_path: Path, embed_model) -> Iterator[KnowledgeBase]:  # type: ignore[no-untyped-def]
    kb = KnowledgeBase.open(tmp_path / "kb", embed_model=embed_model, table_row_entries=True)
    yield kb
    kb.close()


class TestRowsOfAChunk:
    def test_rows_of_a_table_chunk_leave_out_header_prefix_and_separator(self) -> None:
        header = "库存表\n| 仓库 | 型号 |\n"
        body = "| --- | --- |\n| 北仓 | K1 |\n| 南仓 | K2 |"
        chunk = {
            "text": header + body,
            "prefix_chars": len(header),
            "suffix_chars": 0,
            "block_types": "heading,table",
            "title_path": "库存表",
        }
        assert table_rows(chunk) == ["| 北仓 | K1 |", "| 南仓 | K2 |"]
        first = {**chunk, "text": "| 仓库 | 型号 |\n" + body, "prefix_chars": 0}
        assert table_rows(first) == ["| 北仓 | K1 |", "| 南仓 | K2 |"]  # its header left out
        keywords = row_keywords(chunk)
        assert len(keywords) == 2
        assert "北仓" in keywords[0].split() and "库存" in keywords[0].split()

    def test_a_chunk_without_a_table_has_no_rows(self) -> None:
        chunk = {"text": "| 不是表格 | 只是文字 |", "block_types": "paragraph", "title_path": ""}
        assert table_rows(chunk) == [] and row_keywords(chunk) == []


class TestRowEntries:
    def test_every_row_is_indexed_and_a_row_hit_returns_its_chunk_with_its_span(
        self, rows_kb: KnowledgeBase, tmp_path: Path
    ) -> None:
        source = table("库存表", 60)
        path = tmp_path / "stock.md"
        path.write_text(source, encoding="utf-8")
        (result,) = rows_kb.ingest([path]).files
        chunks = rows_kb.documents.chunks(result.doc_id or "")
        assert len(chunks) > 1  # the table is split: rows compete with other rows of a chunk
        assert row_count(rows_kb) == 60
        ret = rows_kb.retriever(top_k=3)
        ranked = ret.rows("东仓 K37 的库存是多少", 5)
        best = next(c for c in chunks if c.chunk_id == ranked[0][0])
        assert "| 东仓 | K37 | 359 |" in best.text
        hits = rows_kb.retrieve("东仓 K37 的库存是多少", top_k=3)
        top = next(h for h in hits if h.chunk_id == best.chunk_id)
        body = top.text[top.prefix_chars : len(top.text) - top.suffix_chars]
        assert body == source.strip()[top.start_char : top.end_char]
        assert "| 东仓 | K37 | 359 |" in body

    def test_off_by_default_no_row_entries_and_no_row_branch(
        self, kb: KnowledgeBase, tmp_path: Path
    ) -> None:
        path = tmp_path / "stock.md"
        path.write_text(table("库存表", 30), encoding="utf-8")
        kb.ingest([path])
        assert row_count(kb) == 0
        assert kb.retriever().weights["rows"] == 0

    def test_the_tenant_filter_holds_in_the_row_branch(
        self, rows_kb: KnowledgeBase, tmp_path: Path
    ) -> None:
        a = tmp_path / "a" / "stock.md"
        b = tmp_path / "b" / "stock.md"
        a.parent.mkdir()
        b.parent.mkdir()
        a.write_text(table("库存表", 40), encoding="utf-8")
        b.write_text(table("库存表", 40, model="Q"), encoding="utf-8")
        rows_kb.ingest([a], tenant="alpha")
        rows_kb.ingest([b], tenant="beta")
        alpha = {d.doc_id for d in rows_kb.documents.list("alpha")}
        ranked = rows_kb.retriever(tenant="alpha").rows("东仓 Q37 的库存", 30)
        assert ranked and all(c.split(":")[0] in alpha for c, _ in ranked)
        hits = rows_kb.retrieve("东仓 Q37 的库存", top_k=10, tenant="alpha")
        assert hits and all(h.tenant == "alpha" for h in hits)

    def test_reparse_and_delete_leave_no_row_entry(
        self, rows_kb: KnowledgeBase, tmp_path: Path
    ) -> None:
        path = tmp_path / "stock.md"
        path.write_text(table("库存表", 40), encoding="utf-8")
        (first,) = rows_kb.ingest([path]).files
        doc_id = first.doc_id or ""
        path.write_text(table("库存表", 25, model="V"), encoding="utf-8")
        (second,) = rows_kb.ingest([path]).files
        assert second.version == 2
        assert row_count(rows_kb, doc_id) == 25
        with rows_kb.ledger.engine.connect() as conn:
            versions = conn.execute(text("SELECT DISTINCT version FROM row_fts")).scalars().all()
        assert [int(v) for v in versions] == [2]
        assert rows_kb.retriever().rows("K37", 10) == []  # the old rows are gone
        assert rows_kb.retriever().rows("V22", 10) != []
        assert rows_kb.documents.delete(doc_id) is True
        assert row_count(rows_kb) == 0
        assert rows_kb.retriever().rows("V22", 10) == []

    def test_doctor_purges_row_entries_a_crash_left(
        self, rows_kb: KnowledgeBase, tmp_path: Path
    ) -> None:
        path = tmp_path / "stock.md"
        path.write_text(table("库存表", 20), encoding="utf-8")
        (result,) = rows_kb.ingest([path]).files
        doc_id = result.doc_id or ""
        stale = {"chunk_id": f"{doc_id}:9:0", "doc_id": doc_id, "tenant": "default", "version": 9}
        assert rows_kb.ledger.row_keywords is not None
        with rows_kb.ledger.engine.begin() as conn:  # what a crash before the flip leaves
            rows_kb.ledger.row_keywords.insert(conn, [stale | {"tokens": "东仓 k3"}])
        assert row_count(rows_kb) == 21
        report = rows_kb.doctor(sample=5)
        assert report["stale_keyword_rows"] == 1
        assert row_count(rows_kb) == 20

    def test_turning_it_on_reindexes_unchanged_files(self, tmp_path: Path, embed_model) -> None:  # type: ignore[no-untyped-def]
        path = tmp_path / "stock.md"
        path.write_text(table("库存表", 30), encoding="utf-8")
        with KnowledgeBase.open(tmp_path / "kb", embed_model=embed_model) as kb:
            kb.ingest([path])
            assert row_count(kb) == 0
        with KnowledgeBase.open(
            tmp_path / "kb", embed_model=embed_model, table_row_entries=True
        ) as kb:
            (again,) = kb.ingest([path]).files
            assert again.status == "SUCCESS" and again.version == 2
            assert row_count(kb) == 30
