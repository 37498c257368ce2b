from __future__ import annotations

import pytest

from rag_app.chunking import count_tokens, parse_blocks
from rag_app.chunking.block import Block
from rag_app.chunking.lists import ListSplitter, lead_in_prefix
from rag_app.chunking.pieces import Piece
from rag_app.chunking.tables import TableSplitter, table_prefix

from .samples import (
    EXCLUSION_ITEMS,
    EXCLUSION_LEAD_IN,
    INSURANCE_CLAUSE,
    PREMIUM_CAPTION,
    PREMIUM_HEADER,
    PREMIUM_ROWS,
    PREMIUM_SEPARATOR,
)


def only(blocks: list[Block], kind: str) -> Block:
    found = [b for b in blocks if b.kind == kind]
    assert len(found) == 1
    return found[0]


def piece_text(text: str, p: Piece) -> str:
    return p.prefix + text[p.start : p.end] + p.suffix


class TestTableSplitter:
    def test_premium_table_split_by_rows_with_header_repeated(self) -> None:
        table = only(parse_blocks(INSURANCE_CLAUSE, "markdown"), "table")
        pieces = TableSplitter(200).split(INSURANCE_CLAUSE, table)
        assert pieces is not None and len(pieces) > 3
        head = f"{PREMIUM_CAPTION}\n{PREMIUM_HEADER}\n{PREMIUM_SEPARATOR}\n"
        assert table_prefix(INSURANCE_CLAUSE, table) == head
        seen_rows: list[str] = []
        for i, p in enumerate(pieces):
            body = INSURANCE_CLAUSE[p.start : p.end]
            if i == 0:
                assert p.prefix == "" and body.startswith(PREMIUM_CAPTION)
            else:
                assert p.prefix == head
            assert count_tokens(piece_text(INSURANCE_CLAUSE, p)) <= 200
            assert not p.oversized
            seen_rows += [line for line in body.splitlines() if line in PREMIUM_ROWS]
            # rows are whole lines: a piece never ends or starts inside a row
            lines = [ln for ln in body.splitlines() if ln.startswith("| ") and "岁" in ln]
            assert all(ln in PREMIUM_ROWS for ln in lines)
        assert seen_rows == PREMIUM_ROWS  # every row exactly once, in order

    def test_row_longer_than_the_budget_is_split_by_cells_with_header(self) -> None:
        long_cell = "，".join(["本项目由多家开发商联合开发"] * 12)
        long_row = f"| 甲 | {long_cell} | 43506 |"
        text = (
            "| 项目 | 开发商 | 均价 |\n| --- | --- | --- |\n| 丙 | 绿地 | 40247 |\n"
            f"{long_row}\n| 乙 | 万科 | 31777 |\n"
        )
        table = only(parse_blocks(text, "markdown"), "table")
        pieces = TableSplitter(60).split(text, table)
        assert pieces is not None
        for p in pieces[1:]:
            assert p.prefix == "| 项目 | 开发商 | 均价 |\n| --- | --- | --- |\n"
        for p in pieces:
            assert count_tokens(piece_text(text, p)) <= 60
        flagged = [p for p in pieces if p.oversized]
        assert len(flagged) >= 2
        # the flagged pieces are exactly the long row, cut between cells / inside the cell
        assert "".join("".join(text[p.start : p.end] for p in flagged).split()) == "".join(
            long_row.split()
        )
        assert text[pieces[0].start : pieces[0].end].endswith("| 丙 | 绿地 | 40247 |")
        assert text[pieces[-1].start : pieces[-1].end] == "| 乙 | 万科 | 31777 |"
        assert not pieces[0].oversized and not pieces[-1].oversized

    def test_first_piece_into_a_small_remaining_budget(self) -> None:
        table = only(parse_blocks(INSURANCE_CLAUSE, "markdown"), "table")
        head_t = count_tokens(INSURANCE_CLAUSE[table.start : table.separator_span[1]])  # type: ignore[index]
        row_t = count_tokens(PREMIUM_ROWS[0])
        splitter = TableSplitter(200)
        assert splitter.split(INSURANCE_CLAUSE, table, head_t + row_t - 1, fresh=False) is None
        pieces = splitter.split(INSURANCE_CLAUSE, table, head_t + row_t, fresh=False)
        assert pieces is not None
        assert INSURANCE_CLAUSE[pieces[0].start : pieces[0].end].endswith(PREMIUM_ROWS[0])
        assert count_tokens(piece_text(INSURANCE_CLAUSE, pieces[0])) <= head_t + row_t

    def test_invalid_budget(self) -> None:
        with pytest.raises(ValueError, match="chunk_size must be > 0"):
            TableSplitter(0)


class TestListSplitter:
    def test_lead_in_repeated_in_every_piece_items_whole(self) -> None:
        lst = only(parse_blocks(INSURANCE_CLAUSE, "markdown"), "list")
        assert INSURANCE_CLAUSE[lst.start : lst.start + len(EXCLUSION_LEAD_IN)] == EXCLUSION_LEAD_IN
        pieces = ListSplitter(180).split(INSURANCE_CLAUSE, lst)
        assert pieces is not None and len(pieces) >= 2
        items_seen: list[str] = []
        for i, p in enumerate(pieces):
            full = piece_text(INSURANCE_CLAUSE, p)
            assert full.startswith(EXCLUSION_LEAD_IN)
            assert (p.prefix == "") == (i == 0)
            assert count_tokens(full) <= 180 and not p.oversized
            items_seen += [ln for ln in full.splitlines() if ln in EXCLUSION_ITEMS]
        assert items_seen == EXCLUSION_ITEMS

    def test_item_longer_than_the_budget_is_split_at_sentences_and_flagged(self) -> None:
        long_item = "（一）" + "".join(f"第{i}种情形下被保险人故意造成的损失。" for i in range(12))
        text = f"有下列情形之一的，我们不承担责任：\n{long_item}\n（二）战争。\n"
        lst = only(parse_blocks(text, "text"), "list")
        pieces = ListSplitter(60).split(text, lst)
        assert pieces is not None
        for p in pieces:
            full = piece_text(text, p)
            assert full.startswith("有下列情形之一的，我们不承担责任：")
            assert count_tokens(full) <= 60
        flagged = [p for p in pieces if p.oversized]
        assert len(flagged) >= 2
        for p in flagged:
            body = text[p.start : p.end]
            assert body.endswith("。"), body  # cut at sentence ends
        assert text[pieces[-1].start : pieces[-1].end] == "（二）战争。"

    def test_long_lead_in_repeats_only_its_last_clause(self) -> None:
        lead = "根据本合同约定，" * 8 + "有下列情形之一的："
        text = f"{lead}\n（一）甲；\n（二）乙。\n"
        lst = only(parse_blocks(text, "text"), "list")
        assert lead_in_prefix(text, lst, 120) == "有下列情形之一的：\n"
        assert lead_in_prefix(text, lst, 600) == lead + "\n"
