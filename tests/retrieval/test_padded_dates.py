"""A question's year and month find the table of that month: written without the leading zero,
and against tables whose every row holds the year and a day of the same number."""

from __future__ import annotations

from pathlib import Path

from rag_app.retrieval.scope import Scope


def _table(month: str, rows: list[tuple[str, int]]) -> str:
    body = "\n".join(f"| {name} | 2021年{month}月 | {sold} |" for name, sold in rows)
    return (
        f"# 2021年{month}月商品房成交表\n\n| 项目名称 | 年月 | 成交套数 |\n|---|---|---|\n{body}\n"
    )


def _keyword_texts(kb, question: str) -> list[str]:  # type: ignore[no-untyped-def]
    """The texts of the keyword branch's five best chunks for ``question``, best first."""
    ranked = kb.query.engine.retriever_factory(Scope(), 10).keyword(question, 5)
    chunks = kb.ledger.active_chunks_by_id([cid for cid, _ in ranked])
    return [chunks[cid].text for cid, _ in ranked]


def test_single_digit_month_finds_the_zero_padded_table(kb, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    names = ["云溪花园", "春江山居", "翠湖名苑"]
    for month in ("05", "06", "07", "08", "03"):  # the asked month last
        doc = tmp_path / f"成交{month}.md"
        doc.write_text(_table(month, [(n, 10 + i) for i, n in enumerate(names)]), encoding="utf-8")
        kb.ingest([doc])
    texts = _keyword_texts(kb, "2021年3月春江山居成交了多少套？")
    assert texts and "2021年03月" in texts[0], texts[:2]


def test_a_year_and_month_find_that_months_table_not_one_holding_both_numbers(  # type: ignore[no-untyped-def]
    kb, tmp_path: Path
) -> None:
    # every row of May's table holds "2021" and a "03" (its day): alone, those two numbers rank
    # May's table over March's; the year and month as one token (2021年03月) find March's
    names = ["云溪花园", "春江山居", "翠湖名苑", "金桂雅苑"]
    for year, month in (("2021", "05"), ("2022", "03"), ("2021", "03")):
        rows = "\n".join(
            f"| {n} | {year}-{month}-03 | {year}-{month}-03 | {10 + i} |"
            for i, n in enumerate(names)
        )
        if month == "05":  # more rows, each with its numbers twice
            rows += "\n" + rows.replace("| 1", "| 2")
        doc = tmp_path / f"成交{year}{month}.md"
        doc.write_text(
            f"# {year}年{month}月商品房成交表\n\n| 项目名称 | 签约日 | 备案日 | 成交套数 |\n"
            f"|---|---|---|---|\n{rows}\n",
            encoding="utf-8",
        )
        kb.ingest([doc])
    texts = _keyword_texts(kb, "2021年3月春江山居成交了多少套？")
    assert texts and "2021年03月" in texts[0], texts[:2]
