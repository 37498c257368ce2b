"""Generated office documents for the spreadsheet and slide reader tests (no fixture files)."""

from __future__ import annotations

import io

RATE_ROWS = [(20 + i, 1000 + 10 * i, 900 + 10 * i) for i in range(40)]


def make_xlsx(*, rows: list[tuple[int, int, int]] | None = None) -> bytes:
    """Two sheets: 费率表 (two-row header: 年龄 merged down, 年交保费（元） merged over 男 | 女)
    and 说明 (a plain key/value table)."""
    from openpyxl import Workbook

    book = Workbook()
    rates = book.active
    rates.title = "费率表"
    rates.append(["年龄", "年交保费（元）", None])
    rates.append([None, "男", "女"])
    rates.merge_cells("A1:A2")
    rates.merge_cells("B1:C1")
    for row in rows if rows is not None else RATE_ROWS:
        rates.append(list(row))
    notes = book.create_sheet("说明")
    notes.append(["项目", "内容"])
    notes.append(["犹豫期", "客户签收保单后十五日内可无条件退保"])
    notes.append(["等待期", "合同生效后九十天为疾病等待期"])
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def make_xls(*, rows: list[tuple[int, int, int]] | None = None) -> bytes:
    """The workbook of :func:`make_xlsx` as a legacy Excel 97–2003 file (xlwt), plus a date
    and a boolean on the 说明 sheet."""
    import datetime as dt

    import xlwt

    book = xlwt.Workbook(encoding="utf-8")
    rates = book.add_sheet("费率表")
    rates.write_merge(0, 1, 0, 0, "年龄")  # rows 0–1, column 0
    rates.write_merge(0, 0, 1, 2, "年交保费（元）")  # row 0, columns 1–2
    rates.write(1, 1, "男")
    rates.write(1, 2, "女")
    for r, row in enumerate(rows if rows is not None else RATE_ROWS, start=2):
        for c, value in enumerate(row):
            rates.write(r, c, value)
    notes = book.add_sheet("说明")
    date_style = xlwt.easyxf(num_format_str="YYYY-MM-DD")
    for r, (key, value) in enumerate(
        [
            ("项目", "内容"),
            ("犹豫期", "客户签收保单后十五日内可无条件退保"),
            ("等待期", "合同生效后九十天为疾病等待期"),
            ("生效日期", dt.date(2024, 3, 1)),
            ("可续保", True),
        ]
    ):
        notes.write(r, 0, key)
        if isinstance(value, dt.date):
            notes.write(r, 1, value, date_style)
        else:
            notes.write(r, 1, value)
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


CSV_TEXT = "城市,住宿标准（元/晚）,餐补（元/天）\n北京,600,100\n上海,580,100\n乌鲁木齐,420,80\n"


def make_pptx() -> bytes:
    """Two slides: 产品概览 (a sentence) and 理赔时效 (a sentence and a 3×3 table)."""
    from pptx import Presentation
    from pptx.util import Inches

    deck = Presentation()
    first = deck.slides.add_slide(deck.slide_layouts[1])  # title and content
    first.shapes.title.text = "产品概览"
    first.placeholders[1].text_frame.text = "星河安心保是一款面向中小企业员工的团体医疗保险。"
    second = deck.slides.add_slide(deck.slide_layouts[5])  # title only
    second.shapes.title.text = "理赔时效"
    box = second.shapes.add_textbox(Inches(0.5), Inches(1.5), Inches(9), Inches(0.8))
    box.text_frame.text = "资料齐全后，理赔款在五个工作日内到账。"
    shape = second.shapes.add_table(3, 3, Inches(0.5), Inches(2.5), Inches(9), Inches(1.5))
    cells = [["理赔类型", "金额上限", "到账时限"], ["门诊", "一万元", "三个工作日"]]
    for r, row in enumerate(cells):
        for c, value in enumerate(row):
            shape.table.cell(r, c).text = value
    shape.table.cell(2, 0).text = "住院"
    shape.table.cell(2, 1).merge(shape.table.cell(2, 2))
    shape.table.cell(2, 1).text = "按合同约定"
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()
