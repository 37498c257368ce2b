"""A keyword index written by another tokenizer version is rewritten from the chunk rows, once,
on both backends; a knowledge base reopened after such a change holds what ingestion would have
written, table-row entries included."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from rag_app import KnowledgeBase
from rag_app.store.ledger import Ledger, chunks
from rag_app.store.retokenize import TOKENS_META, keyword_text, retokenize_keywords
from rag_app.store.schema import set_meta
from rag_app.text.tokenizer import TOKENS_VERSION, query_tokens, tokenize
from tests.store.test_ledger import begin, commit, make_rows


@pytest.fixture
def ledger(ledger_url: str) -> Iterator[Ledger]:
    led = Ledger(ledger_url)
    yield led
    led.close()


def _keyword_rows(ledger: Ledger) -> dict[str, str]:
    with ledger.engine.connect() as conn:
        return {r["chunk_id"]: r["tokens"] for b in ledger.keywords.active_rows(conn) for r in b}


def _stale(ledger: Ledger, rows: dict[str, str], version: str = "0") -> None:
    """Write ``rows`` (chunk id -> tokens) as an older tokenizer would have, version ``version``."""
    with ledger.engine.connect() as conn:
        keys = [r for b in ledger.keywords.active_rows(conn) for r in b]
    with ledger.engine.begin() as conn:
        ledger.keywords.delete_all(conn)
        ledger.insert_keywords(conn, [k | {"tokens": rows[k["chunk_id"]]} for k in keys])
        set_meta(conn, TOKENS_META, version)
    ledger.keywords_changed()


def test_an_index_of_another_tokenizer_version_is_rewritten_once(ledger: Ledger) -> None:
    texts = ["2021年3月的销售报表由财务部汇总", "报销单据须在三十日内提交"]
    version = begin(ledger, "d1")
    rows = make_rows("d1", version, texts)
    rows[0]["title_path"] = "财务制度 > 报表"
    commit(ledger, "d1", version, [], rows=rows)
    _stale(ledger, {r["chunk_id"]: "旧词" for r in rows})
    assert ledger.keyword_search(["汇总"], tenant="default") == []

    assert retokenize_keywords(ledger, version="new", tokenize=tokenize) == 2
    expected = {
        str(r["chunk_id"]): " ".join(tokenize(keyword_text(str(r["title_path"]), str(r["text"]))))
        for r in rows
    }
    assert _keyword_rows(ledger) == expected
    assert "2021年03月" in expected["d1:1:0"] and "报表" in expected["d1:1:0"]  # heading words
    assert [c for c, _ in ledger.keyword_search(["汇总"], tenant="default")] == ["d1:1:0"]
    assert ledger.keyword_search(["旧词"], tenant="default") == []
    assert ledger.get_meta(TOKENS_META) == "new"
    # once: a second opener finds the version written and leaves the index alone
    _stale(ledger, {r["chunk_id"]: "旧词" for r in rows}, version="new")
    assert retokenize_keywords(ledger, version="new", tokenize=tokenize) is None
    assert ledger.keyword_search(["旧词"], tenant="default")


def test_an_empty_ledger_only_records_the_version(ledger: Ledger) -> None:
    assert retokenize_keywords(ledger, version="new", tokenize=tokenize) == 0
    assert ledger.get_meta(TOKENS_META) == "new"


STOCK = (
    "# 2021年3月库存表\n\n| 仓库 | 型号 | 入库日期 | 库存 |\n| --- | --- | --- | --- |\n"
    "| 北仓 | K1 | 2021-03-05 | 120 |\n| 南仓 | K2 | 2021-03-09 | 80 |\n"
)


def test_reopening_a_kb_after_a_tokenizer_change_restores_what_ingestion_wrote(
    tmp_path: Path, embed_model
) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "stock.md").write_text(STOCK, encoding="utf-8")
    (tmp_path / "docs" / "policy.md").write_text(
        "# 仓储制度\n\n## 盘点\n\n每月最后一个工作日盘点库存，差异超过2%须上报。\n",
        encoding="utf-8",
    )
    path = tmp_path / "kb"
    with KnowledgeBase.open(path, embed_model=embed_model, table_row_entries=True) as kb:
        kb.ingest([tmp_path / "docs"])
        assert kb.ledger.get_meta(TOKENS_META) == TOKENS_VERSION
        ingested = _keyword_rows(kb.ledger)
        assert kb.ledger.row_keywords is not None
        entries_before = kb.ledger.row_keywords.count()
        stale = {c: " ".join(t for t in v.split() if "月" not in t) for c, v in ingested.items()}
        _stale(kb.ledger, stale)
        with kb.ledger.engine.begin() as conn:  # a row entry lost, as an older release had none
            kb.ledger.row_keywords.delete_all(conn)
            kb.ledger.row_keywords.insert(
                conn,
                [
                    {"chunk_id": c, "doc_id": c.split(":")[0], "tenant": "default"}
                    | {"version": int(c.split(":")[1]), "tokens": "旧词"}
                    for c in ingested
                    if "北仓" in kb.ledger.active_chunks_by_id([c])[c].text
                ],
            )
        assert not kb.ledger.keyword_search(["2021年03月"], tenant="default")

    with KnowledgeBase.open(path, embed_model=embed_model, table_row_entries=True) as kb:
        assert _keyword_rows(kb.ledger) == ingested
        assert kb.ledger.row_keywords is not None
        assert kb.ledger.row_keywords.count() == entries_before
        hits = kb.ledger.row_keyword_search_ranked(
            list(query_tokens("北仓")), tenant="default", doc_ids=None, limit=5
        )
        assert hits
        assert not kb.ledger.row_keyword_search_ranked(
            ["旧词"], tenant="default", doc_ids=None, limit=5
        )
        assert kb.ledger.keyword_search(["2021年03月"], tenant="default")


def test_a_read_only_open_leaves_the_index_as_it_is(tmp_path: Path, embed_model) -> None:  # type: ignore[no-untyped-def]
    doc = tmp_path / "policy.md"
    doc.write_text("# 仓储制度\n\n每月最后一个工作日盘点库存。\n", encoding="utf-8")
    with KnowledgeBase.open(tmp_path / "kb", embed_model=embed_model) as kb:
        kb.ingest([doc])
        _stale(kb.ledger, {c: "旧词" for c in _keyword_rows(kb.ledger)})
    with KnowledgeBase.open(tmp_path / "kb", embed_model=embed_model, read_only=True) as kb:
        assert set(_keyword_rows(kb.ledger).values()) == {"旧词"}
        assert kb.ledger.get_meta(TOKENS_META) == "0"


def test_inactive_chunk_rows_get_no_keyword_rows(ledger: Ledger) -> None:
    version = begin(ledger, "d1")
    rows = make_rows("d1", version, ["仓库盘点每月一次"])
    commit(ledger, "d1", version, [], rows=rows)
    with ledger.engine.begin() as conn:  # a crash's leftover: chunks of a version never active
        conn.execute(
            chunks.insert(),
            [
                {k: v for k, v in r.items() if k != "keywords"}
                | {"chunk_id": "d1:9:0", "doc_id": "d1", "tenant": "default", "version": 9}
                for r in rows
            ],
        )
    assert retokenize_keywords(ledger, version="new", tokenize=tokenize) == 1
    assert set(_keyword_rows(ledger)) == {"d1:1:0"}
