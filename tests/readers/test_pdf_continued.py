"""A table continued on the next page (rag_app/readers/pdf_tables.py ``merge_continued``): its
repeated header dropped, and a row the page break cut joined back — also when the cut falls in
the first column (LibreOffice's "扬州经济技术开发区开发（集团）有" | "限公司"), but not when the
next page opens with a group label or a sparse row of its own."""

from __future__ import annotations

from rag_app.readers.pdf_tables import Table, merge_continued

XS = [50.0, 200.0, 260.0, 330.0, 400.0]
HEADER = ["企业名称", "年份", "营业总收入", "是否国有"]


def _table(rows: list[list[str]]) -> Table:
    return Table(x0=XS[0], top=0.0, x1=XS[-1], bottom=100.0, xs=XS,
                 ys=[float(i) for i in range(len(rows) + 1)], grid=rows)  # fmt: skip


def test_a_row_cut_in_its_first_column_is_joined_back() -> None:
    first = _table([HEADER, ["扬州经济技术开发区开发（集团）有", "2020", "20.1", "是"]])
    second = _table(
        [HEADER, ["限公司", "", "", ""], ["浙江永强实业有限公司", "2020", "49.55", "否"]]
    )
    assert merge_continued(first, second) == 1
    assert first.grid == [
        HEADER,
        ["扬州经济技术开发区开发（集团）有限公司", "2020", "20.1", "是"],
        ["浙江永强实业有限公司", "2020", "49.55", "否"],
    ]


def test_a_row_cut_in_a_later_column_is_joined_back() -> None:
    first = _table([HEADER, ["某某公司", "2020", "20.1", "是（2019年改"]])
    second = _table([["", "", "", "制）"], ["乙公司", "2020", "4.1", "否"]])
    merge_continued(first, second)
    assert first.grid[1] == ["某某公司", "2020", "20.1", "是（2019年改制）"]
    assert len(first.grid) == 3


def test_a_group_label_or_a_row_of_its_own_stays_a_row() -> None:
    label = _table([HEADER, ["甲公司", "2020", "20.1", "是"]])
    merge_continued(label, _table([["二、民营企业", "", "", ""], ["乙公司", "2020", "4.1", "否"]]))
    assert [r[0] for r in label.grid] == ["企业名称", "甲公司", "二、民营企业", "乙公司"]
    # the last row on the page was not full: the next page's row is no rest of it
    sparse = _table([HEADER, ["甲公司", "2020", "", "是"]])
    merge_continued(sparse, _table([["乙公司", "2021", "", ""]]))
    assert [r[0] for r in sparse.grid] == ["企业名称", "甲公司", "乙公司"]
