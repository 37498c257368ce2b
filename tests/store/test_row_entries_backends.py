"""Table-row entries live in the SQLite ledger only: PostgreSQL refuses them with a clear error."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_app import KnowledgeBase
from rag_app.kb import KnowledgeBaseError
from rag_app.store.ledger import Ledger
from rag_app.store.migrate import MigrationError, copy_ledger

TABLE = "# 库存表\n\n| 仓库 | 型号 | 库存 |\n| --- | --- | --- |\n| 北仓 | K1 | 120 |\n| 南仓 | K2 | 80 |\n"


def test_postgres_ledger_with_row_entries_is_a_clear_error(
    tmp_path: Path, pg_url: str, embed_model
) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(KnowledgeBaseError, match="RAG_TABLE_ROW_ENTRIES needs the SQLite ledger"):
        KnowledgeBase.open(
            tmp_path / "kb", embed_model=embed_model, database_url=pg_url, table_row_entries=True
        )


def test_migrating_row_entries_to_postgres_is_refused(
    tmp_path: Path, pg_url: str, embed_model
) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "stock.md"
    path.write_text(TABLE, encoding="utf-8")
    with KnowledgeBase.open(tmp_path / "kb", embed_model=embed_model, table_row_entries=True) as kb:
        kb.ingest([path])
        assert kb.ledger.row_keywords is not None and kb.ledger.row_keywords.count() == 2
        source_url = kb.ledger.url
    source, target = Ledger(source_url), Ledger(pg_url)
    try:
        with pytest.raises(MigrationError, match="table row entries"):
            copy_ledger(source, target)
        assert target.count_documents(None) == 0  # one transaction: nothing was copied
    finally:
        source.close()
        target.close()


def test_migrating_row_entries_between_sqlite_ledgers_keeps_them(
    tmp_path: Path, embed_model
) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "stock.md"
    path.write_text(TABLE, encoding="utf-8")
    with KnowledgeBase.open(tmp_path / "kb", embed_model=embed_model, table_row_entries=True) as kb:
        kb.ingest([path])
        source_url = kb.ledger.url
    source, target = Ledger(source_url), Ledger(f"sqlite:///{tmp_path / 'copy.db'}")
    try:
        counts = copy_ledger(source, target)
        assert counts["row_keywords"] == 2
        assert (
            [
                c
                for c, _ in target.row_keyword_search_ranked(
                    ["北仓"], tenant="default", doc_ids=None, limit=5
                )
            ]
            == [
                c
                for c, _ in source.row_keyword_search_ranked(
                    ["北仓"], tenant="default", doc_ids=None, limit=5
                )
            ]
            != []
        )
    finally:
        source.close()
        target.close()
