""".xlsx read two ways (issue 65): a workbook without merged cells is streamed (openpyxl
read_only, rendered row by row); one with merged cells is loaded whole. Both ways give the same
text, sheet shape by sheet shape."""

from __future__ import annotations

import datetime as dt
import io
import zipfile
from collections.abc import Callable
from typing import Any

import pytest

from rag_app.readers import sheets, sheets_stream
from rag_app.readers.base import ReaderError
from rag_app.readers.sheets import read_xlsx
from tests.readers.office_files import make_xlsx

Fill = Callable[[Any], None]


def workbook(*fills: tuple[str, Fill]) -> bytes:
    from openpyxl import Workbook

    book = Workbook()
    book.remove(book.active)
    for title, fill in fills:
        fill(book.create_sheet(title))
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def rows(*values: list[Any]) -> Fill:
    def fill(sheet: Any) -> None:
        for row in values:
            sheet.append(row)

    return fill


def styled_blank_cells(sheet: Any) -> None:
    """Text in A1:B3, styled empty cells out to E5 (part of the loaded sheet's size)."""
    from openpyxl.styles import Font

    rows(["SKU", "库存"], ["SKU-1", 12], ["SKU-2", 7])(sheet)
    sheet["E5"].font = Font(bold=True)


def gaps(sheet: Any) -> None:
    """Empty leading rows, a row gap and a column gap."""
    sheet["B3"], sheet["D3"] = "项目", "金额"
    sheet["B4"], sheet["D4"] = "差旅", 600
    sheet["B9"], sheet["D9"] = "办公", 45.5


def banner_alone(sheet: Any) -> None:
    """A banner, then only a styled empty cell two rows below: no table under the caption."""
    from openpyxl.styles import Font

    rows(["标题", "标题"])(sheet)
    sheet["A3"].font = Font(bold=True)


SHAPES: dict[str, bytes] = {
    "plain": workbook(
        (
            "库存",
            rows(
                ["SKU", "名称", "库存", "到货"],
                ["SKU-1023", "螺丝 |M3|", 120, dt.datetime(2024, 3, 1)],
                ["SKU-1024", "  螺母\n 两行 ", 80.5, dt.datetime(2024, 3, 1, 9, 30)],
                ["SKU-1025", None, True, dt.date(2024, 5, 6)],
                ["# 备注", "", False, None],
            ),
        ),
        ("空表", rows()),
        ("说明", rows(["项目", "内容"], ["犹豫期", "十五日"])),
    ),  # fmt: skip
    "banner": workbook(("库存明细", rows(["2024年库存", "2024年库存"], ["SKU", "库存"], ["A", 1]))),
    "banner-then-blank": workbook(
        ("表", rows(["标题", "标题", "标题"], [None], ["SKU", "名称", "库存"], ["A", "螺丝", 1]))
    ),
    "banner-alone": workbook(("表", banner_alone)),
    "banner-echo": workbook(
        ("库存明细", rows(["库存明细", "库存明细"], ["SKU", "库存"], ["A", 1]))
    ),
    "short-rows": workbook(("表", rows(["a"], ["b", "c", "d"], [None, None, "e"], ["f", None]))),
    "styled-blanks": workbook(("库存", styled_blank_cells)),
    "gaps": workbook(("费用", gaps)),
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("dense_limit", [sheets.MAX_DENSE_CELLS, 4])
def test_a_sheet_without_merged_cells_reads_the_same_streamed_or_loaded(
    shape: str, dense_limit: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``dense_limit`` 4: every sheet is past the dense read's size, so both ways read it
    from the cells it has (the empty rows and columns between dropped)."""
    monkeypatch.setattr(sheets, "MAX_DENSE_CELLS", dense_limit)
    data = SHAPES[shape]
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        assert not sheets_stream.has_merged_cells(archive)
    streamed, loaded = outcome(data, stream=True), outcome(data, stream=False)
    assert streamed == loaded
    assert streamed[0].strip() or shape == "banner-alone"


def outcome(data: bytes, *, stream: bool) -> tuple[str, Any]:
    """The text and metadata read, or the reason refused."""
    try:
        parsed = read_xlsx(data, stream=stream)
    except ReaderError as exc:
        return "", str(exc)
    return parsed.text, parsed.metadata


def test_the_stream_renders_what_the_table_says() -> None:
    text = read_xlsx(SHAPES["plain"], stream=True).text
    assert "| SKU-1023 | 螺丝 \\|M3\\| | 120 | 2024-03-01 |" in text
    assert "| SKU-1025 |  | 是 | 2024-05-06 |" in text
    assert "## 空表" not in text and "## 说明" in text
    banner = read_xlsx(SHAPES["banner-then-blank"], stream=True).text
    assert banner.startswith("## 表\n\n标题\n\n|  |  |  |\n| --- | --- | --- |\n| SKU |"), banner
    with pytest.raises(ReaderError, match="empty workbook"):  # a banner over nothing
        read_xlsx(SHAPES["banner-alone"], stream=True)


def test_a_workbook_with_merged_cells_is_loaded_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    import openpyxl

    modes: list[bool] = []
    load = openpyxl.load_workbook

    def recording(*args: Any, **kwargs: Any) -> Any:
        modes.append(bool(kwargs.get("read_only")))
        return load(*args, **kwargs)

    monkeypatch.setattr(openpyxl, "load_workbook", recording)
    merged = make_xlsx()  # 年龄 merged down, 年交保费（元） merged over 男 | 女
    with zipfile.ZipFile(io.BytesIO(merged)) as archive:
        assert sheets_stream.has_merged_cells(archive)
    text = read_xlsx(merged).text
    assert "| 年龄 | 年交保费（元）/男 | 年交保费（元）/女 |" in text  # the folded header
    read_xlsx(SHAPES["plain"])
    assert modes == [False, True]


def test_merged_cells_are_found_across_read_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sheets_stream, "_READ", 7)  # "mergeCell" always straddles blocks
    with zipfile.ZipFile(io.BytesIO(make_xlsx())) as archive:
        assert sheets_stream.has_merged_cells(archive)
    with zipfile.ZipFile(io.BytesIO(SHAPES["plain"])) as archive:
        assert not sheets_stream.has_merged_cells(archive)


MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"


def raw_workbook(sheet_xml: str) -> bytes:
    """A workbook of one sheet whose <sheetData> is ``sheet_xml``: openpyxl's file (a date
    style, s="1"), its sheet replaced, two shared strings added (0: "共享 文本", 1: "富文本")."""
    import re

    from openpyxl import Workbook

    book = Workbook()
    sheet = book.active
    sheet["A1"], sheet["B1"], sheet["C1"] = "共享 文本", "富文本", dt.datetime(2024, 1, 1)
    saved = io.BytesIO()
    book.save(saved)
    out = io.BytesIO()
    with zipfile.ZipFile(saved) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            body = src.read(info)
            if info.filename == "xl/worksheets/sheet1.xml":
                assert re.search(rb'<c r="C1" s="1"', body), body
                body = (
                    f'<worksheet xmlns="{MAIN}"><dimension ref="A1:B2"/><sheetData>{sheet_xml}'
                    "</sheetData></worksheet>"
                ).encode()
            elif info.filename == "xl/_rels/workbook.xml.rels":
                body = body.replace(b"</Relationships>", SST_REL + b"</Relationships>")
            elif info.filename == "[Content_Types].xml":
                body = body.replace(b"</Types>", SST_TYPE + b"</Types>")
            dst.writestr(info, body)
        dst.writestr("xl/sharedStrings.xml", SST)
    return out.getvalue()


SST = (
    f'<sst xmlns="{MAIN}"><si><t>共享 文本</t></si><si><r><t>富</t></r><r><t>文本</t></r></si>'
    "</sst>"
).encode()
SST_REL = (
    b'<Relationship Id="rIdS" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
    b'relationships/sharedStrings" Target="sharedStrings.xml"/>'
)
SST_TYPE = (
    b'<Override PartName="/xl/sharedStrings.xml" ContentType="application/vnd.openxmlformats-'
    b'officedocument.spreadsheetml.sharedStrings+xml"/>'
)


CELLS = (
    '<row r="1"><c r="A1" t="s"><v>0</v></c><c r="B1" t="s"><v>1</v></c>'
    '<c r="C1" t="inlineStr"><is><t>行内</t><r><t>富</t></r><rPh sb="0" eb="1"><t>注音</t></rPh></is></c>'
    '<c r="E1" t="b"><v>1</v></c></row>'
    '<row r="2"><c r="A2"><v>42</v></c><c r="B2"><v>4.50</v></c><c r="C2"><v>1E3</v></c>'
    '<c r="D2" s="1"><v>45292</v></c><c r="E2" s="1"><v>9999999999</v></c>'
    '<c r="F2" t="e"><v>#N/A</v></c><c r="G2" t="str"><f>A1</f><v>算式 &amp; 结果</v></c>'
    '<c r="H2" t="d"><v>2024-05-06T07:08:09</v></c><c r="I2"><f>1+1</f></c>'
    '<c r="J2" t="inlineStr"/><c r="K2" t="s"><v></v></c></row>'
    '<row><c><v>1</v></c><c t="inlineStr"><is><t xml:space="preserve"> a  b </t></is></c>'
    '<c r="E3"><v>5</v></c><c><v>6</v></c></row>'
    '<row r="7" ht="20"/>'
    '<row r="9"><c r="C9"><v>9</v></c></row>'
    '<row r="8"><c r="A8"><v>8</v></c></row>'
    '<row r="10.0"><c r="B10"><v>10</v></c></row>'
)


def test_the_sheet_xml_gives_openpyxls_read_only_values() -> None:
    import warnings

    from openpyxl import load_workbook

    from rag_app.readers.sheet_xml import can_read, sheet_rows

    book = load_workbook(io.BytesIO(raw_workbook(CELLS)), read_only=True, data_only=True)
    sheet = book.worksheets[0]
    sheet.reset_dimensions()
    assert can_read(sheet)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # openpyxl warns of the date out of range
        expected = [tuple(row) for row in sheet.iter_rows(values_only=True)]  # gaps: []
    got = list(sheet_rows(sheet))
    book.close()
    assert got == expected
    assert got[0] == ("共享 文本", "富文本", "行内富", None, True)  # no 注音 (a phonetic run)
    assert got[1][3] == dt.datetime(2024, 1, 1) and got[1][4] == "#VALUE!"
    assert got[2][:6] == (1, " a  b ", None, None, 5, 6) and got[6] == ()  # row 7: no cells
    assert len(got) == 10  # row 8 came after row 9: skipped, as openpyxl skips it


@pytest.mark.parametrize(
    ("xml", "reason"),
    [
        ('<row r="1"><c r="1A"><v>1</v></c></row>', "invalid cell reference"),
        ('<row r="1"><c r="A1"><v>1</v></row>', "broken worksheet XML"),
    ],
)
def test_a_broken_sheet_is_a_reader_error(xml: str, reason: str) -> None:
    with pytest.raises(ReaderError, match=f"not a valid .xlsx file.*{reason}"):
        read_xlsx(raw_workbook(xml), stream=True)


def test_entity_declarations_are_refused() -> None:
    data = raw_workbook('<row r="1"><c r="A1" t="str"><v>&x;</v></c></row>')
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        parts = {i.filename: z.read(i) for i in z.infolist()}
    sheet = parts["xl/worksheets/sheet1.xml"].decode()
    parts["xl/worksheets/sheet1.xml"] = (
        '<?xml version="1.0"?><!DOCTYPE worksheet [<!ENTITY x "展开">]>' + sheet
    ).encode()
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for name, body in parts.items():
            z.writestr(name, body)
    with pytest.raises(ReaderError, match="not a valid .xlsx file"):  # openpyxl or expat refuses
        read_xlsx(out.getvalue(), stream=True)
