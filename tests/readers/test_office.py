"""Spreadsheet (.xlsx, .xls, .csv) and slide (.pptx) readers: Markdown out, chunked like any table."""

from __future__ import annotations

import pytest

from rag_app.chunking import chunk_document
from rag_app.readers import ReaderError, read_bytes
from rag_app.readers.sheets import fold_header, header_depth, sheet_table
from tests.readers.office_files import CSV_TEXT, make_pptx, make_xls, make_xlsx


def test_xlsx_every_sheet_is_a_table_under_its_name_with_the_merged_header_folded() -> None:
    parsed = read_bytes(make_xlsx(rows=[(20, 1000, 900), (21, 1010, 910)]), "费率.xlsx")
    assert (parsed.doc_type, parsed.fmt) == ("xlsx", "markdown")
    assert parsed.metadata["sheets"] == ["费率表", "说明"]
    assert parsed.text.startswith(
        "## 费率表\n\n| 年龄 | 年交保费（元）/男 | 年交保费（元）/女 |\n| --- | --- | --- |\n"
        "| 20 | 1000 | 900 |\n"
    )
    assert "## 说明\n\n| 项目 | 内容 |" in parsed.text


def test_xls_is_read_like_xlsx_merged_header_dates_and_booleans() -> None:
    data = make_xls(rows=[(20, 1000, 900), (21, 1010, 910)])
    assert data.startswith(b"\xd0\xcf\x11\xe0")  # a real OLE2/BIFF file, not an .xlsx
    parsed = read_bytes(data, "费率.xls")
    assert (parsed.doc_type, parsed.fmt, parsed.title) == ("xls", "markdown", None)
    assert parsed.metadata["sheets"] == ["费率表", "说明"]
    # the same Markdown as the .xlsx with the same cells
    xlsx = read_bytes(make_xlsx(rows=[(20, 1000, 900), (21, 1010, 910)]), "费率.xlsx")
    assert parsed.text.split("## 说明")[0] == xlsx.text.split("## 说明")[0]
    assert parsed.text.startswith(
        "## 费率表\n\n| 年龄 | 年交保费（元）/男 | 年交保费（元）/女 |\n| --- | --- | --- |\n"
        "| 20 | 1000 | 900 |\n| 21 | 1010 | 910 |\n\n## 说明\n\n| 项目 | 内容 |"
    )
    assert "| 生效日期 | 2024-03-01 |" in parsed.text
    assert "| 可续保 | 是 |" in parsed.text


def test_a_long_xls_sheet_splits_by_rows_with_the_folded_header_repeated() -> None:
    parsed = read_bytes(make_xls(), "费率.xls")
    chunks = chunk_document(parsed.text, parsed.fmt, title=parsed.title, chunk_size=120)
    rate_chunks = [c for c in chunks if c.title_path == ["费率表"]]
    assert len(rate_chunks) > 2
    assert all("| 年龄 | 年交保费（元）/男 | 年交保费（元）/女 |" in c.text for c in rate_chunks)
    assert any("| 59 | 1390 | 1290 |" in c.text for c in rate_chunks)


def test_xls_rejects_what_is_not_a_legacy_workbook() -> None:
    with pytest.raises(ReaderError, match=r"^not a valid \.xls file \(looks like an \.xlsx"):
        read_bytes(make_xlsx(), "a.xls")
    with pytest.raises(ReaderError, match=r"looks like a legacy \.xls file; rename it \.xls"):
        read_bytes(make_xls(), "a.xlsx")
    with pytest.raises(ReaderError, match=r"^not a valid \.xls file"):
        read_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 600, "a.xls")
    with pytest.raises(ReaderError, match=r"^not a valid \.xls file"):
        read_bytes(make_xls()[:1500], "a.xls")


def test_a_long_sheet_splits_by_rows_with_the_folded_header_repeated() -> None:
    parsed = read_bytes(make_xlsx(), "费率.xlsx")
    chunks = chunk_document(parsed.text, parsed.fmt, title=parsed.title, chunk_size=120)
    rate_chunks = [c for c in chunks if c.title_path == ["费率表"]]
    assert len(rate_chunks) > 2
    for chunk in rate_chunks:
        assert "| 年龄 | 年交保费（元）/男 | 年交保费（元）/女 |" in chunk.text
        assert "table" in chunk.block_types
    assert any("| 59 | 1390 | 1290 |" in c.text for c in rate_chunks)


def test_header_depth_follows_merged_header_cells() -> None:
    rows = [["年龄", "保费", ""], ["", "男", "女"], ["20", "1", "2"]]
    assert header_depth(rows, []) == 1
    assert header_depth(rows, [(0, 0, 1, 0)]) == 2  # 年龄 merged down over two rows
    assert header_depth(rows, [(0, 1, 0, 2)]) == 2  # 保费 merged across 男 | 女
    assert header_depth(rows, [(2, 0, 2, 1)]) == 1  # a merge in the body is not a header
    assert fold_header([["年龄", "保费", "保费"], ["年龄", "男", "女"]]) == [
        "年龄",
        "保费/男",
        "保费/女",
    ]


def test_a_banner_row_becomes_the_caption_and_body_merges_are_filled() -> None:
    grid = [
        ["2024年费率", "", ""],
        ["类别", "项目", "金额"],
        ["门诊", "挂号", "10"],
        ["", "检查", "50"],
    ]
    table = sheet_table(grid, [(0, 0, 0, 2), (2, 0, 3, 0)])
    assert table.splitlines() == [
        "2024年费率",
        "",
        "| 类别 | 项目 | 金额 |",
        "| --- | --- | --- |",
        "| 门诊 | 挂号 | 10 |",
        "| 门诊 | 检查 | 50 |",
    ]


@pytest.mark.parametrize("encoding", ["gbk", "utf-8", "utf-8-sig"])
def test_csv_is_decoded_and_named_after_its_file(encoding: str) -> None:
    parsed = read_bytes(CSV_TEXT.encode(encoding), "差旅标准.csv")
    assert (parsed.doc_type, parsed.fmt) == ("csv", "markdown")
    assert parsed.text.splitlines()[:4] == [
        "## 差旅标准",
        "",
        "| 城市 | 住宿标准（元/晚） | 餐补（元/天） |",
        "| --- | --- | --- |",
    ]
    assert "| 乌鲁木齐 | 420 | 80 |" in parsed.text


def test_csv_delimiter_is_sniffed() -> None:
    parsed = read_bytes("名称;数量\n苹果;3\n梨;5\n".encode(), "水果.csv")
    assert "| 苹果 | 3 |" in parsed.text


def test_pptx_slide_titles_are_headings_with_text_and_tables() -> None:
    parsed = read_bytes(make_pptx(), "介绍.pptx")
    assert (parsed.doc_type, parsed.fmt) == ("pptx", "markdown")
    assert parsed.title is None  # the first slide is not a title slide
    assert parsed.metadata == {"slides": 2, "tables": 1}
    text = parsed.text
    assert text.startswith("## 产品概览\n\n星河安心保是一款")
    assert (
        text.index("## 理赔时效")
        < text.index("理赔款在五个工作日内到账")
        < text.index("| 理赔类型")
    )
    assert "| 住院 | 按合同约定 | 按合同约定 |" in text  # merged cells filled


@pytest.mark.parametrize("name", ["a.xlsx", "a.pptx"])
def test_office_formats_reject_what_is_not_a_zip_package(name: str) -> None:
    with pytest.raises(ReaderError, match="not a valid"):
        read_bytes(b"%PDF-1.4 not really", name)
    with pytest.raises(ReaderError, match="not a valid"):
        read_bytes(b"PK\x03\x04 truncated", name)


def test_a_banner_that_repeats_the_sheet_name_is_not_said_twice() -> None:
    """A merged first row holding only the sheet's name is the sheet's heading already; a banner
    that says more (a year, a unit) stays as the table's caption."""
    import io

    import openpyxl

    from rag_app.readers.sheets import read_xlsx

    def workbook(banner: str) -> bytes:
        book = openpyxl.Workbook()
        sheet = book.active
        sheet.title = "库存明细"
        sheet.append([banner, "", ""])
        sheet.merge_cells("A1:C1")
        sheet.append(["SKU", "名称", "库存"])
        sheet.append(["SKU-1023", "螺丝", 120])
        sheet.append(["SKU-1024", "螺母", 80])
        buffer = io.BytesIO()
        book.save(buffer)
        return buffer.getvalue()

    echo = read_xlsx(workbook(" 库存明细 ")).text
    assert echo.count("库存明细") == 1 and echo.startswith("## 库存明细\n\n| SKU |"), echo
    caption = read_xlsx(workbook("2024年库存明细表")).text
    assert "2024年库存明细表" in caption and "| SKU-1023 | 螺丝 | 120 |" in caption


def test_a_sheet_claiming_a_huge_range_is_read_from_the_cells_it_has() -> None:
    """Cells at A1..B3 and one at XFD1048576 span 17 billion cells: the sheet is read from the
    cells that exist (the dense read ran out of memory), values in order, nothing lost."""
    import io

    import openpyxl

    from rag_app.readers.sheets import read_xlsx

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "库存"
    for row in (["SKU", "库存"], ["SKU-1023", 120], ["SKU-1024", 80]):
        sheet.append(row)
    sheet["XFD1048576"] = "末尾"
    buffer = io.BytesIO()
    book.save(buffer)
    text = read_xlsx(buffer.getvalue()).text  # the dense read needed 17 billion cells
    assert "| SKU-1023 | 120 |" in text and "末尾" in text
    assert text.index("SKU-1024") < text.index("末尾")
