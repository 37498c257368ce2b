"""Generate the Word sample documents in data/knowledge/.

Run from the repository root:
    .venv/bin/python data/build_sample_docx.py

Produces (python-docx):

* 员工差旅报销管理办法.docx: articles typed out ("第一条 …"), bullets, a table;
* 员工考勤与休假管理制度.docx: numbered by Word, as most Chinese policies are: the chapter and
  article numbers (第一章, 第一条, （一）) are not in the text but come from word/numbering.xml
  (第%1章 linked to Heading 1, 第%1条, （%1）), with a running header and footer and a table
  with merged cells.

The text below is the single source of truth for these documents; edit here and re-run instead
of editing the .docx files by hand.
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
OUT_NUMBERED_DOCX = HERE / "员工考勤与休假管理制度.docx"

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


def _write_reproducible_zip(
    data: bytes, path: Path, replace: dict[str, bytes] | None = None
) -> None:
    """Re-pack the .docx with fixed entry timestamps so the output is byte-stable; parts named
    in ``replace`` get the given content."""
    src = zipfile.ZipFile(io.BytesIO(data))
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            fixed = zipfile.ZipInfo(info.filename, date_time=(2024, 1, 1, 0, 0, 0))
            fixed.compress_type = zipfile.ZIP_DEFLATED
            fixed.external_attr = 0o644 << 16
            content = (replace or {}).get(info.filename, src.read(info.filename))
            dst.writestr(fixed, content)


# ---------------------------------------------------------------- the Word-numbered policy

W_NS = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
CHAPTER_NUM, ARTICLE_NUM, ITEM_NUM = 21, 23, 25  # the w:num of each list

# Three lists, as such policies are often set up in Word: 第%1章 linked to Heading 1, 第%1条 on
# the articles (one list through the whole document, so chapters do not restart it) and （%1）
# on the items of an article (a new w:num with a w:startOverride for each further article
# that has items). Every viewer shows these alike; a single multi-level list whose article
# level never restarts (w:lvlRestart 0) is what Word shows too, but LibreOffice 7.4 restarts it.
NUMBERING_XML = f"""<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<w:numbering xmlns:w="{W_NS}">
<w:abstractNum w:abstractNumId="20"><w:multiLevelType w:val="singleLevel"/>
<w:lvl w:ilvl="0"><w:start w:val="1"/><w:numFmt w:val="chineseCounting"/><w:pStyle w:val="Heading1"/>
<w:suff w:val="space"/><w:lvlText w:val="第%1章"/><w:lvlJc w:val="left"/></w:lvl></w:abstractNum>
<w:abstractNum w:abstractNumId="22"><w:multiLevelType w:val="singleLevel"/>
<w:lvl w:ilvl="0"><w:start w:val="1"/><w:numFmt w:val="chineseCounting"/><w:suff w:val="space"/>
<w:lvlText w:val="第%1条"/><w:lvlJc w:val="left"/><w:pPr><w:ind w:firstLine="420"/></w:pPr></w:lvl>
</w:abstractNum>
<w:abstractNum w:abstractNumId="24"><w:multiLevelType w:val="singleLevel"/>
<w:lvl w:ilvl="0"><w:start w:val="1"/><w:numFmt w:val="chineseCounting"/><w:suff w:val="nothing"/>
<w:lvlText w:val="（%1）"/><w:lvlJc w:val="left"/><w:pPr><w:ind w:firstLine="420"/></w:pPr></w:lvl>
</w:abstractNum>
<w:num w:numId="{CHAPTER_NUM}"><w:abstractNumId w:val="20"/></w:num>
<w:num w:numId="{ARTICLE_NUM}"><w:abstractNumId w:val="22"/></w:num>
<w:num w:numId="{ITEM_NUM}"><w:abstractNumId w:val="24"/></w:num>
</w:numbering>
"""

NUMBERED_TITLE = "星河云科技有限公司员工考勤与休假管理制度"
# (chapter title, [article text or (article text, [items])])
POLICY: list[tuple[str, list[str | tuple[str, list[str]]]]] = [
    (
        "总则",
        [
            "为规范公司考勤与休假管理，维护正常工作秩序，保障员工依法享有的休息休假权利，"
            "根据《中华人民共和国劳动法》《职工带薪年休假条例》等规定，结合公司实际，制定本制度。",
            "本制度适用于与公司签订劳动合同的全体员工。劳务派遣人员和实习生参照本制度执行。",
            "人力资源部负责考勤与休假的统一管理；各部门负责人负责审核本部门员工的日常考勤。",
        ],
    ),
    (
        "工作时间与考勤",
        [
            "公司实行标准工时制，工作日为周一至周五，上班时间为上午9:00至下午6:00，"
            "其中12:00至13:30为午休时间。",
            "员工上下班须通过“星河OA”移动端或者办公区考勤机打卡。因外出办事、出差等原因无法打卡的，"
            "应当在2个工作日内在OA系统提交补卡申请，每月补卡不得超过3次。",
            (
                "考勤异常按照下列规定处理：",
                [
                    "上班时间后30分钟以内到岗的，为迟到；",
                    "下班时间前30分钟以内离岗的，为早退；",
                    "迟到或者早退超过30分钟且未办理请假手续的，按旷工半天处理；",
                    "连续旷工3个工作日或者一年内累计旷工5个工作日的，公司可以依法解除劳动合同。",
                ],
            ),
        ],
    ),
    (
        "休假",
        [
            "员工累计工作已满1年不满10年的，年休假5天；已满10年不满20年的，年休假10天；"
            "已满20年的，年休假15天。当年未休完的年休假可以顺延至次年3月31日前使用，逾期作废。",
            "员工因病需要休假的，应当提供二级以上医院出具的诊断证明。病假3天以内（含）的由部门负责人审批，"
            "超过3天的还须经人力资源部审批。",
            "员工依法办理结婚登记的，享受婚假3天；符合法定生育条件的女员工享受产假158天，"
            "男员工享受陪产假15天。",
            "员工的父母、配偶或者子女去世的，享受丧假3天。各类假期的天数和审批见下表。",
        ],
    ),
    (
        "加班",
        [
            "因工作需要安排加班的，须事先在OA系统提交加班申请并经部门负责人批准；"
            "未经批准的加班不予认定。",
            "工作日加班的，优先安排调休，调休应当在加班后3个月内使用；休息日加班且无法安排调休的，"
            "按照不低于本人工资的200%支付加班费；法定节假日加班的，按照不低于本人工资的300%支付加班费。",
        ],
    ),
    (
        "附则",
        [
            "本制度由人力资源部负责解释。",
            "本制度自2024年3月1日起施行，原《考勤管理暂行规定》同时废止。",
        ],
    ),
]
LEAVE_TABLE = [
    ["假期类型", "天数", "审批"],
    ["年休假", "5至15天", "部门负责人"],
    ["婚假", "3天", "部门负责人审批后报人力资源部备案"],
    ["产假", "158天", ""],  # the approval cell is merged down over 产假, 陪产假 and 丧假
    ["陪产假", "15天", ""],
    ["丧假", "3天", ""],
]


def _numbered(paragraph, num_id: int) -> None:  # type: ignore[no-untyped-def]
    """Number a paragraph with list ``num_id`` (w:numPr, in schema order)."""
    numpr = paragraph._p.get_or_add_pPr().get_or_add_numPr()
    numpr.get_or_add_ilvl().val = 0
    numpr.get_or_add_numId().val = num_id


def build_numbered_docx(path: Path = OUT_NUMBERED_DOCX) -> Path:
    """The attendance and leave policy whose chapter, article and item numbers Word generates."""
    doc = Document()
    _set_font(doc)
    core = doc.core_properties
    core.title = NUMBERED_TITLE
    core.author = "星河云科技有限公司人力资源部"
    fixed = _dt.datetime(2024, 3, 1, 9, 0, 0)
    core.created = fixed
    core.modified = fixed
    core.last_modified_by = core.author
    core.revision = 1
    section = doc.sections[0]
    section.header.paragraphs[0].text = "星河云科技有限公司　考勤与休假管理制度"
    section.footer.paragraphs[0].text = "内部资料　注意保密"
    # Heading 1 carries the list (level 0 through the level's pStyle)
    heading_numbering = doc.styles["Heading 1"].element.get_or_add_pPr().get_or_add_numPr()
    heading_numbering.get_or_add_numId().val = CHAPTER_NUM

    doc.add_heading(NUMBERED_TITLE, level=0)
    p = doc.add_paragraph(
        "文件编号：XH-HR-2024-006　　发布部门：人力资源部　　施行日期：2024年3月1日"
    )
    p.alignment = WD_ALIGN_PARAGRAPH.CENTER
    for chapter, articles in POLICY:
        doc.add_heading(chapter, level=1)
        for article in articles:
            text, items = (article, []) if isinstance(article, str) else article
            _numbered(doc.add_paragraph(text), ARTICLE_NUM)
            for item in items:  # only one article has items: no restart needed
                _numbered(doc.add_paragraph(item), ITEM_NUM)
        if chapter == "休假":
            table = doc.add_table(rows=len(LEAVE_TABLE), cols=3)
            table.style = "Table Grid"
            for r, row in enumerate(LEAVE_TABLE):
                for c, text in enumerate(row):
                    if text:
                        table.cell(r, c).text = text
            table.cell(2, 2).merge(table.cell(5, 2))
    buf = io.BytesIO()
    doc.save(buf)
    _write_reproducible_zip(
        buf.getvalue(), path, {"word/numbering.xml": NUMBERING_XML.encode("utf-8")}
    )
    return path


if __name__ == "__main__":
    print(build_docx())
    print(build_numbered_docx())
