"""Generate the binary sample documents in data/knowledge/.

Run from the repository root:
    .venv/bin/python data/knowledge/_build_binary.py

Produces 员工差旅报销管理办法.docx (python-docx). The text below is the single
source of truth for that document; edit here and re-run instead of editing the
.docx by hand.
"""

import datetime as _dt
import io
import zipfile
from pathlib import Path

from docx import Document
from docx.enum.text import WD_ALIGN_PARAGRAPH
from docx.oxml.ns import qn
from docx.shared import Pt

HERE = Path(__file__).resolve().parent / "knowledge"
OUT_DOCX = HERE / "员工差旅报销管理办法.docx"

FONT = "宋体"

ALLOWANCE_HEADER = ["城市类别", "住宿标准（元/晚）", "伙食补助（元/天）", "交通补助（元/天）"]
ALLOWANCE_ROWS = [
    ["一类城市（北京、上海、广州、深圳）", "600", "120", "80"],
    ["二类城市（省会城市、计划单列市）", "450", "100", "60"],
    ["三类城市（其他地级市）", "350", "80", "50"],
    ["四类地区（县级市、县及以下）", "260", "70", "40"],
    ["港澳台地区", "900", "200", "120"],
]


def _set_font(doc: Document) -> None:
    for name in ("Normal", "Title", "Heading 1", "Heading 2", "List Bullet"):
        style = doc.styles[name]
        style.font.name = FONT
        rpr = style.element.get_or_add_rPr()
        rfonts = rpr.find(qn("w:rFonts"))
        if rfonts is None:
            rfonts = rpr.makeelement(qn("w:rFonts"), {})
            rpr.append(rfonts)
        rfonts.set(qn("w:eastAsia"), FONT)
    doc.styles["Normal"].font.size = Pt(11)


def build_docx(path: Path = OUT_DOCX) -> Path:
    doc = Document()
    _set_font(doc)
    core = doc.core_properties
    core.title = "星河云科技有限公司员工差旅报销管理办法"
    core.author = "星河云科技有限公司财务部"
    # fixed metadata so that re-running the script yields identical document properties
    fixed = _dt.datetime(2024, 1, 1, 9, 0, 0)
    core.created = fixed
    core.modified = fixed
    core.last_modified_by = core.author
    core.revision = 1

    doc.add_heading("星河云科技有限公司员工差旅报销管理办法", level=0)
    p = doc.add_paragraph("文件编号：XH-FIN-2024-011　　发布部门：财务部　　施行日期：2024年1月1日")
    p.alignment = WD_ALIGN_PARAGRAPH.CENTER

    doc.add_heading("第一章 总则", level=1)
    doc.add_paragraph(
        "第一条 为规范公司员工差旅费用的管理，合理控制费用支出，提高报销效率，"
        "根据国家有关财务规定，结合公司实际情况，制定本办法。"
    )
    doc.add_paragraph(
        "第二条 本办法适用于公司全体正式员工及试用期员工。实习生因公出差的，参照本办法执行，"
        "住宿标准按同城市类别标准的80%执行。"
    )
    doc.add_paragraph(
        "第三条 本办法所称差旅费，是指员工因公临时到常驻工作地以外的地区出差所发生的城市间交通费、"
        "住宿费、伙食补助费和市内交通补助费。"
    )

    doc.add_heading("第二章 出差审批", level=1)
    doc.add_paragraph(
        "第四条 员工出差前应当通过OA系统提交《出差申请单》，写明出差事由、目的地、起止日期和费用预算。"
        "出差3天以内（含）的，由部门负责人审批；超过3天或者出境出差的，还须经分管副总经理审批。"
    )
    doc.add_paragraph(
        "第五条 未经审批擅自出差的，所发生的费用不予报销。因紧急情况无法事先审批的，"
        "应当在出发后2个工作日内补办审批手续。"
    )

    doc.add_heading("第三章 费用标准", level=1)
    doc.add_heading("一、城市间交通", level=2)
    doc.add_paragraph("员工乘坐城市间交通工具，应当遵守以下标准：")
    for item in [
        "乘坐火车的，普通员工可乘坐高铁或动车二等座，部门经理及以上人员可乘坐一等座；",
        "乘坐飞机的，一律乘坐经济舱，单程飞行时间超过6小时的国际航班经批准可乘坐超级经济舱；",
        "原则上应当通过公司差旅平台“星河商旅”统一预订机票和火车票，由公司与平台月结；",
        "因个人原因改签或者退票产生的手续费，由员工个人承担。",
    ]:
        doc.add_paragraph(item, style="List Bullet")

    doc.add_heading("二、住宿及补助标准", level=2)
    doc.add_paragraph(
        "员工出差的住宿费在下表标准以内凭发票据实报销，超出部分由个人承担；"
        "伙食补助和交通补助按出差自然天数包干发放，无需提供发票。"
    )
    table = doc.add_table(rows=1, cols=len(ALLOWANCE_HEADER))
    table.style = "Table Grid"
    for cell, text in zip(table.rows[0].cells, ALLOWANCE_HEADER, strict=True):
        cell.text = text
    for row in ALLOWANCE_ROWS:
        cells = table.add_row().cells
        for cell, text in zip(cells, row, strict=True):
            cell.text = text
    doc.add_paragraph(
        "副总经理及以上人员的住宿标准按上表标准上浮50%执行。两名同性别员工同行出差的，原则上合住一间标准间。"
        "出差期间由接待单位或者会议主办方提供免费餐饮的，不再发放当天的伙食补助。"
    )

    doc.add_heading("第四章 报销流程", level=1)
    doc.add_paragraph(
        "第六条 报销须在出差结束后30日内提交，逾期未提交的，须经财务总监审批后方可报销；"
        "超过90日未提交的，视为自动放弃报销。"
    )
    doc.add_paragraph("第七条 员工提交差旅报销申请时，应当提供下列材料：")
    for item in [
        "经审批的《出差申请单》；",
        "城市间交通票据（含电子行程单或者电子发票）；",
        "住宿费增值税发票及酒店水单；",
        "因公产生的会议费、资料费等其他费用的有效票据。",
    ]:
        doc.add_paragraph(item, style="List Bullet")
    doc.add_paragraph(
        "第八条 财务部在收到完整报销材料后5个工作日内完成审核，审核通过的款项于每周三统一支付至员工工资卡。"
    )
    doc.add_paragraph(
        "第九条 员工申请差旅借款的，借款金额不得超过预计差旅费的80%，并应当在出差结束后30日内办理冲账。"
    )

    doc.add_heading("第五章 附则", level=1)
    doc.add_paragraph(
        "第十条 虚报、冒领差旅费用的，除追回全部款项外，视情节给予警告直至解除劳动合同的处分。"
    )
    doc.add_paragraph("第十一条 本办法由财务部负责解释，自2024年1月1日起施行。")

    buf = io.BytesIO()
    doc.save(buf)
    _write_reproducible_zip(buf.getvalue(), path)
    return path


def _write_reproducible_zip(data: bytes, path: Path) -> None:
    """Re-pack the .docx with fixed entry timestamps so the output is byte-stable."""
    src = zipfile.ZipFile(io.BytesIO(data))
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            fixed = zipfile.ZipInfo(info.filename, date_time=(2024, 1, 1, 0, 0, 0))
            fixed.compress_type = zipfile.ZIP_DEFLATED
            fixed.external_attr = 0o644 << 16
            dst.writestr(fixed, src.read(info.filename))


if __name__ == "__main__":
    print(build_docx())
