"""Generate the PDF sample document in data/knowledge/ the way most company PDFs are made: a Word
document saved as PDF by an office suite (here LibreOffice, headless).

Run from the repository root (needs LibreOffice: ``make office-deps``; the CJK font: ``make
ocr-deps``):
    .venv/bin/python data/build_sample_pdf.py

Produces 办公设备采购目录与价格标准.pdf: a purchasing standard of three pages with articles
typed out (第一条 …), a ruled catalogue table of 36 items that runs over a page break with its
header row repeated (Word's "repeat as header row"), long cells that wrap inside their column,
an approval-limit table, a running header (the company and document name) and a "第 N 页"
footer on every page. The text below is the single source of truth; edit here and re-run
instead of editing the PDF.
"""

from __future__ import annotations

import datetime as _dt
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from docx import Document
from docx.enum.text import WD_ALIGN_PARAGRAPH
from docx.oxml import OxmlElement
from docx.oxml.ns import qn
from docx.shared import Mm, Pt

HERE = Path(__file__).resolve().parent / "knowledge"
OUT_PDF = HERE / "办公设备采购目录与价格标准.pdf"
FONT = "WenQuanYi Zen Hei"
TITLE = "星河云科技有限公司办公设备采购目录与价格标准（2026年版）"
HEADER = "星河云科技有限公司　办公设备采购目录与价格标准"

CHAPTERS: list[tuple[str, list[str]]] = [
    (
        "第一章 总则",
        [
            "第一条 为规范公司办公设备的采购行为，控制采购成本，保证设备质量和售后服务，"
            "根据公司《采购管理制度》和《固定资产管理办法》，制定本标准。",
            "第二条 本标准适用于公司总部及各分公司采购本目录所列的办公设备，包括计算机、"
            "显示器、打印及复印设备、会议设备、网络设备和办公家具。",
            "第三条 目录内设备按本标准所列的单价上限和指定供应商采购；实际采购价格不得高于"
            "单价上限，确需超出的，须经财务部审核并由分管副总裁批准。",
            "第四条 目录外设备或单笔金额超过50万元的采购，按《采购管理制度》组织招标或比选，"
            "不适用本目录价格。",
        ],
    ),
    (
        "第二章 采购目录与单价上限",
        [
            "第五条 下表为2026年度办公设备采购目录。单价上限均为含税价（增值税税率13%），"
            "包含运输、安装和质保期内的上门服务费用。",
        ],
    ),
    (
        "第三章 审批权限与采购流程",
        [
            "第六条 采购申请由使用部门在OA系统提交，写明设备名称、规格型号、数量、用途和预算，"
            "按下表的审批权限逐级审批。",
            "第七条 采购部在审批通过后5个工作日内向指定供应商下单；供应商缺货超过10个工作日的，"
            "采购部可以在同等价格内选择替代型号，并报信息技术部确认兼容性。",
            "第八条 设备到货后，由信息技术部会同使用部门在3个工作日内完成验收，验收合格后"
            "由行政部登记固定资产编号并贴标。",
            "第九条 质保期内设备出现故障的，由使用部门通过IT服务台报修，信息技术部联系供应商"
            "在48小时内上门维修；同一设备质保期内维修三次仍不能正常使用的，要求供应商更换。",
        ],
    ),
    (
        "第四章 附则",
        [
            "第十条 本标准由采购部负责解释，每年第四季度根据市场价格修订一次。",
            "第十一条 本标准自2026年1月1日起施行，原《办公设备采购价格标准（2024年版）》同时废止。",
        ],
    ),
]

CATALOGUE_HEADER = ["编号", "设备名称", "规格型号", "单价上限（元）", "指定供应商", "质保期"]
CATALOGUE: list[list[str]] = [
    ["BG-001", "标准办公笔记本电脑", "联想ThinkPad E14 Gen 6（i5/16G/512G SSD）", "5299", "北京联创信息技术有限公司", "3年"],
    ["BG-002", "高性能笔记本电脑", "联想ThinkPad X1 Carbon Gen 12（Ultra 7/32G/1T SSD）", "12999", "北京联创信息技术有限公司", "3年"],
    ["BG-003", "设计用笔记本电脑", "Apple MacBook Pro 14英寸（M4 Pro/24G/1T）", "16999", "上海苹动数码科技有限公司", "1年（另购延保2年）"],
    ["BG-004", "标准台式电脑", "戴尔OptiPlex 7020 MT（i5/16G/512G SSD）", "4599", "杭州德信电脑系统有限公司", "3年"],
    ["BG-005", "图形工作站", "戴尔Precision 3680（i9/64G/2T SSD/RTX 4000 Ada）", "32800", "杭州德信电脑系统有限公司", "3年"],
    ["BG-006", "开发用服务器", "华为FusionServer 2288H V7（2×Xeon Gold/256G/4×1.92T SSD）", "68000", "深圳华信通网络技术有限公司", "5年"],
    ["BG-007", "23.8英寸显示器", "戴尔P2425H（1920×1080，IPS）", "1099", "杭州德信电脑系统有限公司", "3年"],
    ["BG-008", "27英寸4K显示器", "戴尔U2724D（2560×1440，IPS Black，Type-C 90W）", "2999", "杭州德信电脑系统有限公司", "3年"],
    ["BG-009", "设计用专业显示器", "明基SW272U（27英寸4K，99% Adobe RGB，含遮光罩）", "6999", "上海苹动数码科技有限公司", "3年"],
    ["BG-010", "黑白激光打印机", "惠普LaserJet Pro 4004dn（A4，自动双面，网络）", "2599", "广州惠达办公设备有限公司", "1年"],
    ["BG-011", "彩色激光多功能一体机", "惠普Color LaserJet Pro MFP 4303fdw（打印/复印/扫描/传真）", "5899", "广州惠达办公设备有限公司", "1年"],
    ["BG-012", "A3彩色数码复合机", "理光IM C3010（A3，30页/分钟，含双面输稿器和装订器）", "38500", "广州惠达办公设备有限公司", "1年（含每月上门保养）"],
    ["BG-013", "高速文档扫描仪", "富士通fi-8170（70页/分钟，双面，ADF 80页）", "7980", "广州惠达办公设备有限公司", "1年"],
    ["BG-014", "便携式投影仪", "爱普生CB-FH52（1080P，4000流明）", "5499", "南京视讯会议系统有限公司", "2年"],
    ["BG-015", "会议室激光投影仪", "爱普生CB-L730U（WUXGA，7000流明，激光光源）", "21800", "南京视讯会议系统有限公司", "3年"],
    ["BG-016", "65英寸会议平板", "MAXHUB V6 经典款 CA65CA（4K触控，含移动支架）", "9999", "南京视讯会议系统有限公司", "3年"],
    ["BG-017", "86英寸会议平板", "MAXHUB V6 科技款 TA86（4K触控，内置摄像头和阵列麦克风）", "23999", "南京视讯会议系统有限公司", "3年"],
    ["BG-018", "视频会议摄像头", "罗技Rally Bar Mini（4K，自动取景）", "14500", "南京视讯会议系统有限公司", "2年"],
    ["BG-019", "会议全向麦克风", "宝利通Sync 20+（蓝牙/USB，6米拾音）", "1699", "南京视讯会议系统有限公司", "2年"],
    ["BG-020", "24口千兆交换机", "华为S5735-L24T4S-A1（24千兆电口+4万兆光口）", "3680", "深圳华信通网络技术有限公司", "3年"],
    ["BG-021", "48口万兆核心交换机", "华为CE6881-48S6CQ（48万兆光口+6个100G口）", "46000", "深圳华信通网络技术有限公司", "5年"],
    ["BG-022", "企业级无线AP", "华为AirEngine 5773-21（Wi-Fi 7，吸顶安装）", "2380", "深圳华信通网络技术有限公司", "3年"],
    ["BG-023", "下一代防火墙", "华为USG6525F（吞吐量8Gbps，含三年特征库升级）", "18600", "深圳华信通网络技术有限公司", "3年"],
    ["BG-024", "网络存储NAS", "群晖DS1823xs+（8盘位，不含硬盘）", "13200", "深圳华信通网络技术有限公司", "3年"],
    ["BG-025", "企业级机械硬盘", "希捷银河Exos X20（20TB，SATA，7200转）", "3150", "深圳华信通网络技术有限公司", "5年"],
    ["BG-026", "不间断电源UPS", "山特C3KS（3kVA在线式，含2小时电池组）", "6200", "深圳华信通网络技术有限公司", "2年"],
    ["BG-027", "无线键鼠套装", "罗技MK470（超薄静音）", "199", "北京联创信息技术有限公司", "1年"],
    ["BG-028", "降噪耳机", "索尼WH-1000XM5（蓝牙，主动降噪）", "2299", "上海苹动数码科技有限公司", "1年"],
    ["BG-029", "扩展坞", "联想ThinkPad雷电4扩展坞（含135W电源，双4K输出）", "1599", "北京联创信息技术有限公司", "3年"],
    ["BG-030", "人体工学办公椅", "西昊M57（网背，可调头枕和扶手）", "1180", "苏州立方办公家具有限公司", "5年"],
    ["BG-031", "电动升降办公桌", "乐歌E5（1.4米×0.7米桌板，双电机）", "2680", "苏州立方办公家具有限公司", "5年"],
    ["BG-032", "文件柜", "钢制四门文件柜（1.85米×0.9米，带锁）", "860", "苏州立方办公家具有限公司", "3年"],
    ["BG-033", "碎纸机", "得力9916（保密等级P-4，单次12张）", "799", "广州惠达办公设备有限公司", "1年"],
    ["BG-034", "标签打印机", "兄弟PT-P910BT（蓝牙，36毫米色带）", "1290", "广州惠达办公设备有限公司", "1年"],
    ["BG-035", "移动硬盘（加密型）", "希捷Backup Plus 2TB（硬件加密，USB 3.0）", "720", "北京联创信息技术有限公司", "2年"],
    ["BG-036", "固定资产标签", "亚银铝箔资产标签（50毫米×30毫米，每卷500张）", "95", "苏州立方办公家具有限公司", "无"],
]  # fmt: skip

APPROVAL_HEADER = ["单笔采购金额", "审批人", "办理时限"]
APPROVAL = [
    ["1万元以下（含）", "使用部门负责人", "1个工作日"],
    ["1万元至5万元（含）", "使用部门负责人、采购部经理", "2个工作日"],
    ["5万元至20万元（含）", "使用部门负责人、采购部经理、财务总监", "3个工作日"],
    ["20万元至50万元（含）", "以上人员及分管副总裁", "5个工作日"],
]


def _font(doc: Document) -> None:  # type: ignore[no-any-unimported]
    for name in ("Normal", "Title", "Heading 1"):
        style = doc.styles[name]
        style.font.name = FONT
        style.element.get_or_add_rPr().get_or_add_rFonts().set(qn("w:eastAsia"), FONT)
    doc.styles["Normal"].font.size = Pt(10.5)


def _repeat_header(row) -> None:  # type: ignore[no-untyped-def]
    """Word's "repeat as header row at the top of each page" (w:tblHeader)."""
    tr_pr = row._tr.get_or_add_trPr()
    flag = OxmlElement("w:tblHeader")
    flag.set(qn("w:val"), "true")
    tr_pr.append(flag)


def _table(doc, header: list[str], rows: list[list[str]], widths: list[float]) -> None:  # type: ignore[no-untyped-def]
    table = doc.add_table(rows=1 + len(rows), cols=len(header))
    table.style = "Table Grid"
    for r, row in enumerate([header, *rows]):
        for c, text in enumerate(row):
            cell = table.cell(r, c)
            cell.width = Pt(widths[c])
            run = cell.paragraphs[0].add_run(text)
            run.font.size = Pt(9)
            run.bold = r == 0
    _repeat_header(table.rows[0])


def _page_field(paragraph) -> None:  # type: ignore[no-untyped-def]
    """ "第 N 页" with N a PAGE field, as Word inserts a page number."""
    paragraph.add_run("第 ")
    for kind, text in (("begin", None), (None, " PAGE "), ("separate", None), (None, "1"), ("end", None)):  # fmt: skip
        run = paragraph.add_run()
        if kind:
            char = OxmlElement("w:fldChar")
            char.set(qn("w:fldCharType"), kind)
            run._r.append(char)
        elif text == " PAGE ":
            instr = OxmlElement("w:instrText")
            instr.set(qn("xml:space"), "preserve")
            instr.text = text
            run._r.append(instr)
        else:
            run.text = text
    paragraph.add_run(" 页")
    paragraph.alignment = WD_ALIGN_PARAGRAPH.CENTER


def build_docx(path: Path) -> Path:
    doc = Document()
    _font(doc)
    core = doc.core_properties
    core.title, core.author = TITLE, "星河云科技有限公司采购部"
    core.created = core.modified = _dt.datetime(2025, 12, 15, 9, 0, 0)
    section = doc.sections[0]
    section.page_width, section.page_height = Mm(210), Mm(297)  # A4
    section.left_margin = section.right_margin = Mm(20)
    section.header.paragraphs[0].text = HEADER
    _page_field(section.footer.paragraphs[0])
    title = doc.add_heading(TITLE, level=0)
    title.alignment = WD_ALIGN_PARAGRAPH.CENTER
    meta = doc.add_paragraph(
        "文件编号：XH-CG-2025-012　　发布部门：采购部　　施行日期：2026年1月1日"
    )
    meta.alignment = WD_ALIGN_PARAGRAPH.CENTER
    for chapter, articles in CHAPTERS:
        doc.add_heading(chapter, level=1)
        for article in articles:
            doc.add_paragraph(article).paragraph_format.first_line_indent = Pt(21)
        if chapter.startswith("第二章"):
            _table(doc, CATALOGUE_HEADER, CATALOGUE, [44, 80, 150, 56, 96, 48])
    # the approval table goes right after 第六条
    sixth = next(p for p in doc.paragraphs if p.text.startswith("第六条"))
    holder = Document()
    _font(holder)
    _table(holder, APPROVAL_HEADER, APPROVAL, [150, 220, 100])
    sixth._p.addnext(holder.tables[0]._tbl)
    doc.save(str(path))
    return path


def build_pdf(out: Path = OUT_PDF) -> Path:
    soffice = shutil.which("soffice") or shutil.which("libreoffice")
    if soffice is None:
        sys.exit("LibreOffice is not installed: run `make office-deps` first")
    with tempfile.TemporaryDirectory(prefix="sample-pdf-") as tmp:
        source = build_docx(Path(tmp) / (out.stem + ".docx"))
        subprocess.run(
            [soffice, f"-env:UserInstallation=file://{tmp}/profile", "--headless",
             "--convert-to", "pdf", "--outdir", tmp, str(source)],
            check=True, capture_output=True, timeout=180,
        )  # fmt: skip
        shutil.copyfile(Path(tmp) / (out.stem + ".pdf"), out)
    return out


if __name__ == "__main__":
    print(build_pdf())
