"""Tests for rag_app.readers: real files written to tmp_path, no mocks."""

from __future__ import annotations

import io
import os
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag_app.config import Settings
from rag_app.readers import (
    DEFAULT_MAX_FILE_MB,
    SUPPORTED_EXTENSIONS,
    ParsedFile,
    ReaderError,
    read_bytes,
    read_file,
)

CHINESE = "检索增强生成（RAG）系统说明\n第一行：密码每九十天修改一次。\n第二行：Hello, 世界！\n"
PNG_BYTES = (
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00"
    b"\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N\x00"
    b"\x00\x00\x00IEND\xaeB`\x82"
)


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


# --------------------------------------------------------------------------- dispatch


def test_supported_extensions_mapping() -> None:
    assert SUPPORTED_EXTENSIONS == {
        ".md": "markdown",
        ".markdown": "markdown",
        ".txt": "text",
        ".pdf": "pdf",
        ".docx": "docx",
        ".html": "html",
        ".htm": "html",
        ".xlsx": "xlsx",
        ".xlsm": "xlsx",
        ".xls": "xls",
        ".csv": "csv",
        ".pptx": "pptx",
        ".doc": "doc",
        ".ppt": "ppt",
    }


def test_unknown_extension_rejected(tmp_path: Path) -> None:
    path = write(tmp_path, "notes.xyz", b"hello")
    with pytest.raises(
        ReaderError, match=r"^unsupported file type '\.xyz' \(supported: \.csv, \.doc, \.docx, "
    ):
        read_file(path)
    with pytest.raises(ReaderError, match=r"unsupported file type \(no extension"):
        read_bytes(b"hello", "README")


def test_extension_is_case_insensitive(tmp_path: Path) -> None:
    parsed = read_file(write(tmp_path, "NOTES.TXT", b"hello"))
    assert (parsed.doc_type, parsed.fmt, parsed.text) == ("text", "text", "hello")


def test_missing_path() -> None:
    with pytest.raises(ReaderError, match=r"^file not found: .*nope\.txt$"):
        read_file("/definitely/not/here/nope.txt")


def test_directory_rejected(tmp_path: Path) -> None:
    folder = tmp_path / "folder.txt"
    folder.mkdir()
    with pytest.raises(ReaderError, match=r"^not a file \(a directory\)"):
        read_file(folder)


def test_size_limit_small_max_bytes(tmp_path: Path) -> None:
    path = write(tmp_path, "big.txt", b"x" * 100)
    with pytest.raises(ReaderError, match=r"^file too large: 100 bytes > limit 10 bytes"):
        read_file(path, max_bytes=10)
    with pytest.raises(ReaderError, match=r"^file too large: 100 bytes > limit 10 bytes"):
        read_bytes(b"x" * 100, "big.txt", max_bytes=10)
    assert read_file(path, max_bytes=100).text == "x" * 100
    assert read_file(path, max_bytes=0).text == "x" * 100  # <= 0 disables the limit


def test_size_limit_from_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """RAG_MAX_FILE_MB reaches the readers through Settings (the caller passes the limit)."""
    path = write(tmp_path, "big.md", b"# t\n" + b"y" * 2000)
    monkeypatch.setenv("RAG_MAX_FILE_MB", "0.001")  # 1048 bytes
    with pytest.raises(
        ReaderError, match=r"file too large: 2\.0 KB > limit 1\.0 KB \(set RAG_MAX_FILE_MB\)"
    ):
        read_file(path, max_bytes=Settings().max_file_bytes)
    monkeypatch.setenv("RAG_MAX_FILE_MB", "1")
    assert read_file(path, max_bytes=Settings().max_file_bytes).title == "t"


def test_readers_read_no_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without ``max_bytes`` the limit is DEFAULT_MAX_FILE_MB (Settings' default), whatever the
    environment says."""
    path = write(tmp_path, "big.md", b"# t\n" + b"y" * 2000)
    monkeypatch.setenv("RAG_MAX_FILE_MB", "0.001")
    assert read_file(path).title == "t"
    assert read_bytes(path.read_bytes(), "big.md").title == "t"
    assert Settings.model_fields["max_file_mb"].default == DEFAULT_MAX_FILE_MB


def test_size_message_in_megabytes() -> None:
    data = b"a" * (3 * 1024 * 1024)
    with pytest.raises(
        ReaderError, match=r"^file too large: 3\.0 MB > limit 2 MB \(set RAG_MAX_FILE_MB\)$"
    ):
        read_bytes(data, "a.txt", max_bytes=2 * 1024 * 1024)


def test_reader_error_is_one_line() -> None:
    err = ReaderError("first line\nsecond   line\n")
    assert str(err) == "first line second line"
    assert "\n" not in str(ReaderError("x" * 1000)) and len(str(ReaderError("x" * 1000))) <= 300


# --------------------------------------------------------------------------- text / markdown


@pytest.mark.parametrize(
    ("encode", "expected_encoding"),
    [
        (lambda s: s.encode("utf-8"), "utf-8"),
        (lambda s: s.encode("utf-8-sig"), "utf-8-sig"),
        (lambda s: s.encode("gb18030"), "gb18030"),
        (lambda s: b"\xff\xfe" + s.encode("utf-16-le"), "utf-16-le"),
        (lambda s: b"\xfe\xff" + s.encode("utf-16-be"), "utf-16-be"),
        (lambda s: s.encode("utf-32"), "utf-32-le"),
    ],
    ids=["utf8", "utf8-bom", "gb18030", "utf16le-bom", "utf16be-bom", "utf32-bom"],
)
def test_chinese_text_encodings_round_trip(tmp_path: Path, encode, expected_encoding: str) -> None:  # type: ignore[no-untyped-def]
    parsed = read_file(write(tmp_path, "doc.txt", encode(CHINESE)))
    assert parsed.text == CHINESE.rstrip()
    assert parsed.encoding == expected_encoding
    assert (parsed.doc_type, parsed.fmt, parsed.title) == ("text", "text", None)
    assert not parsed.text.startswith("\ufeff")


def test_gbk_subset_is_read_as_gb18030(tmp_path: Path) -> None:
    text = "中华人民共和国网络安全法\n第一条 为了保障网络安全。"
    parsed = read_file(write(tmp_path, "law.txt", text.encode("gbk")))
    assert parsed.text == text
    assert parsed.encoding == "gb18030"


def test_utf16_without_bom_detected_from_nul_pattern(tmp_path: Path) -> None:
    text = "Password policy 密码策略\nrotate every 90 days\n"
    le = read_file(write(tmp_path, "le.txt", text.encode("utf-16-le")))
    be = read_file(write(tmp_path, "be.txt", text.encode("utf-16-be")))
    assert le.text == be.text == text.rstrip()
    assert (le.encoding, be.encoding) == ("utf-16-le", "utf-16-be")


def test_crlf_and_cr_normalized() -> None:
    parsed = read_bytes("第一行\r\n第二行\r第三行\n\n  缩进  保留\r\n".encode(), "a.txt")
    assert parsed.text == "第一行\n第二行\n第三行\n\n  缩进  保留"
    assert "\r" not in parsed.text


def test_internal_whitespace_kept_trailing_stripped() -> None:
    text = "  leading kept\n\tTab\tand  double  spaces\n\n\n  "
    assert read_bytes(text.encode(), "a.txt").text == "  leading kept\n\tTab\tand  double  spaces"


@pytest.mark.parametrize(
    "data", [b"", b"   \n\t\r\n  ", "\ufeff".encode("utf-8-sig"), " \u3000\n".encode()]
)
def test_empty_and_whitespace_only_rejected(tmp_path: Path, data: bytes) -> None:
    with pytest.raises(ReaderError, match=r"^empty file$"):
        read_file(write(tmp_path, "empty.txt", data))


def test_empty_markdown_rejected() -> None:
    with pytest.raises(ReaderError, match=r"^empty file$"):
        read_bytes(b"\n\n", "a.md")


def test_png_renamed_txt_rejected(tmp_path: Path) -> None:
    with pytest.raises(
        ReaderError, match=r"^binary content in a \.txt file \(looks like PNG image\)$"
    ):
        read_file(write(tmp_path, "image.txt", PNG_BYTES))


@pytest.mark.parametrize(
    ("data", "kind"),
    [
        (b"\xff\xd8\xff\xe0\x00\x10JFIF", "JPEG image"),
        (b"GIF89a\x01\x00\x01\x00", "GIF image"),
        (b"PK\x03\x04\x14\x00\x00\x00", "ZIP archive or Office document"),
        (b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n", "PDF document"),
        (b"\x7fELF\x02\x01\x01\x00", "ELF executable"),
        (b"\x1f\x8b\x08\x00\x00\x00\x00\x00", "gzip archive"),
    ],
)
def test_known_binary_magic_rejected(data: bytes, kind: str) -> None:
    with pytest.raises(ReaderError, match=rf"binary content in a \.md file \(looks like {kind}\)"):
        read_bytes(data + b"padding text", "notes.md")


def test_random_binary_renamed_md_rejected(tmp_path: Path) -> None:
    data = random.Random(1234).randbytes(4096)
    with pytest.raises(
        ReaderError, match=r"^binary content in a \.md file \(contains NUL bytes\)$"
    ):
        read_file(write(tmp_path, "random.md", data))


def test_control_characters_rejected() -> None:
    data = bytes(range(1, 9)) * 20 + b"some text"
    with pytest.raises(
        ReaderError, match=r"binary content in a \.txt file \(too many control characters\)"
    ):
        read_bytes(data, "a.txt")


def test_few_control_characters_allowed() -> None:
    text = "log line \x1b[1mbold\x1b[0m and a form feed\f" + "x" * 200
    assert read_bytes(text.encode(), "a.txt").text == text


def test_undecodable_text_rejected() -> None:
    with pytest.raises(ReaderError, match=r"^cannot decode text \(tried UTF-8, GB18030, UTF-16\)$"):
        read_bytes(b"\x80\x81\xfe\xff" * 20, "a.txt")


def test_non_chinese_legacy_encoding_falls_back_to_charset_normalizer() -> None:
    # Not UTF-8 and not valid GB18030 (0xEF followed by the end of data).
    data = "Ünïcödé façade, crème brûlée et naïveté résumé".encode("cp1252")
    parsed = read_bytes(data, "a.txt")
    assert parsed.encoding not in ("utf-8", "gb18030")
    assert parsed.text.startswith("Ü") and "façade" in parsed.text


def test_markdown_title_and_format(tmp_path: Path) -> None:
    md = "前言文字\n\n```\n# 代码里的注释\n```\n\n# 信息安全管理办法 #\n\n## 第一章\n\n正文\n"
    parsed = read_file(write(tmp_path, "policy.markdown", md.encode()))
    assert (parsed.doc_type, parsed.fmt, parsed.encoding) == ("markdown", "markdown", "utf-8")
    assert parsed.title == "信息安全管理办法"
    assert parsed.text == md.rstrip()


def test_markdown_setext_title_and_no_title() -> None:
    assert read_bytes("员工手册\n====\n\n正文".encode(), "a.md").title == "员工手册"
    assert read_bytes("## 只有二级标题\n\n正文".encode(), "a.md").title is None
    assert read_bytes("#hashtag 不是标题".encode(), "a.md").title is None


@settings(max_examples=200, deadline=None)
@given(
    st.text(
        alphabet=st.characters(
            blacklist_categories=("Cc", "Cs", "Co", "Cn"), blacklist_characters="\ufeff"
        )
        | st.sampled_from(["\n", "\r", "\t", " "]),
        max_size=200,
    )
)
def test_utf8_text_round_trips_normalized(text: str) -> None:
    expected = text.replace("\r\n", "\n").replace("\r", "\n").rstrip()
    for data in (text.encode("utf-8"), b"\xff\xfe" + text.encode("utf-16-le")):
        if not expected.strip():
            with pytest.raises(ReaderError, match="empty file"):
                read_bytes(data, "t.txt")
        else:
            parsed = read_bytes(data, "t.txt")
            assert parsed.text == expected
            assert "\x00" not in parsed.text and "\r" not in parsed.text


# --------------------------------------------------------------------------- PDF


def make_pdf(pages: list[str], *, title: str | None = None, font: str = "Helvetica") -> bytes:
    from reportlab.pdfgen import canvas

    if font == "STSong-Light":
        from reportlab.pdfbase import pdfmetrics
        from reportlab.pdfbase.cidfonts import UnicodeCIDFont

        pdfmetrics.registerFont(UnicodeCIDFont("STSong-Light"))
    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer)
    if title:
        pdf.setTitle(title)
    for page in pages:
        pdf.setFont(font, 12)
        for number, line in enumerate(page.split("\n")):
            pdf.drawString(72, 720 - 18 * number, line)
        pdf.showPage()
    pdf.save()
    return buffer.getvalue()


def test_pdf_pages_and_offsets(tmp_path: Path) -> None:
    data = make_pdf(
        ["Password policy", "", "Rotate every 90 days\nUse 12 characters"], title="Policy"
    )
    parsed = read_file(write(tmp_path, "policy.pdf", data))
    assert (parsed.doc_type, parsed.fmt, parsed.encoding) == ("pdf", "text", None)
    assert parsed.title == "Policy"
    assert parsed.metadata["pages"] == 3
    starts = parsed.metadata["page_starts"]
    assert isinstance(starts, list) and len(starts) == 3 and starts[0] == 0
    assert parsed.text.startswith("Password policy")
    assert parsed.text[starts[2] :].startswith("Rotate every 90 days")
    assert "Use 12 characters" in parsed.text[starts[2] :]
    assert "Rotate" not in parsed.text[: starts[2]]
    assert "\x00" not in parsed.text and "\r" not in parsed.text


@pytest.mark.parametrize(
    "placeholder", ["untitled", "Microsoft Word - Policy.docx", "Document1", "policy-v2.pdf"]
)
def test_a_placeholder_pdf_title_is_not_the_documents_title(
    tmp_path: Path, placeholder: str
) -> None:
    """A tool's placeholder is no title: the chunks' heading path then starts at the document's
    own first line, not at "Microsoft Word - …"."""
    from rag_app.chunking.parser import StructureAwareNodeParser

    data = make_pdf(["Password policy", "Rotate every 90 days"], title=placeholder)
    parsed = read_file(write(tmp_path, "policy.pdf", data))
    assert parsed.title is None
    chunks = StructureAwareNodeParser().chunk(parsed.text, parsed.fmt, parsed.title)
    assert chunks and all(placeholder not in " ".join(c.title_path) for c in chunks)
    kept = read_file(write(tmp_path, "named.pdf", make_pdf(["x"], title="2023 Annual Report")))
    assert kept.title == "2023 Annual Report"


def test_pdf_chinese_cid_font_extracts() -> None:
    # reportlab's built-in (non-embedded) CID font; pypdf maps it back to Unicode.
    data = make_pdf(
        ["中文检索增强生成测试。第一页", "第二页：密码策略"], title="中文标题", font="STSong-Light"
    )
    parsed = read_bytes(data, "zh.pdf")
    assert "中文检索增强生成测试。第一页" in parsed.text
    assert parsed.text[parsed.metadata["page_starts"][1] :].startswith("第二页：密码策略")  # type: ignore[index]
    assert parsed.title == "中文标题"


def test_pdf_without_text_rejected() -> None:
    from reportlab.pdfgen import canvas

    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer)
    pdf.rect(100, 100, 200, 200, fill=1)  # drawing, no text
    pdf.showPage()
    pdf.save()
    with pytest.raises(
        ReaderError, match=r"^PDF has no extractable text \(no text layer, no readable images\)$"
    ):
        read_bytes(buffer.getvalue(), "blank.pdf")
    with pytest.raises(ReaderError, match=r"\(scanned or image-only\?; OCR is off\)$"):
        read_bytes(buffer.getvalue(), "blank.pdf", ocr=False)


@pytest.mark.parametrize(
    "data",
    [b"%PDF-1.4\nthis is garbage", b"not a pdf at all, just words", None],
    ids=["garbage", "plain-text", "truncated"],
)
def test_corrupt_pdf_rejected(tmp_path: Path, data: bytes | None) -> None:
    if data is None:
        data = make_pdf(["Hello"])[:300]
    with pytest.raises(ReaderError, match=r"^not a valid PDF file \("):
        read_file(write(tmp_path, "broken.pdf", data))


def _encrypt(data: bytes, user_password: str) -> bytes:
    from pypdf import PdfWriter

    writer = PdfWriter(clone_from=io.BytesIO(data))
    writer.encrypt(user_password=user_password, owner_password="owner", algorithm="RC4-128")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def test_encrypted_pdf_with_password_rejected() -> None:
    data = _encrypt(make_pdf(["Top secret"]), "secret")
    with pytest.raises(ReaderError, match=r"^encrypted PDF: a password is required"):
        read_bytes(data, "secret.pdf")


def test_encrypted_pdf_with_empty_user_password_is_read() -> None:
    data = _encrypt(make_pdf(["Owner-locked but readable"]), "")
    assert read_bytes(data, "locked.pdf").text == "Owner-locked but readable"


# --------------------------------------------------------------------------- DOCX


def make_docx() -> bytes:
    from docx import Document

    document = Document()
    document.add_heading("信息安全管理制度", level=1)
    document.add_paragraph("表格之前的段落：总则说明。")
    table = document.add_table(rows=3, cols=3)
    cells = [["项目", "要求", "备注"], ["密码", "12位|以上", "每90天\n修改"], ["账号", "实名", "—"]]
    for r, row in enumerate(cells):
        for c, text in enumerate(row):
            table.cell(r, c).text = text
    document.add_paragraph("表格之后的段落：细则说明。")
    document.add_heading("第二章 账号管理", level=2)
    document.add_paragraph("禁止共享账号", style="List Bullet")
    document.add_paragraph("离职当天注销", style="List Bullet")
    document.add_paragraph("最后一段。")
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def test_docx_structure_and_order(tmp_path: Path) -> None:
    parsed = read_file(write(tmp_path, "policy.docx", make_docx()))
    assert (parsed.doc_type, parsed.fmt, parsed.encoding) == ("docx", "markdown", None)
    assert parsed.title == "信息安全管理制度"
    text = parsed.text
    table = (
        "| 项目 | 要求 | 备注 |\n"
        "| --- | --- | --- |\n"
        "| 密码 | 12位\\|以上 | 每90天 修改 |\n"
        "| 账号 | 实名 | — |"
    )
    assert text == (
        "# 信息安全管理制度\n\n"
        "表格之前的段落：总则说明。\n\n"
        f"{table}\n\n"
        "表格之后的段落：细则说明。\n\n"
        "## 第二章 账号管理\n\n"
        "- 禁止共享账号\n- 离职当天注销\n\n"
        "最后一段。"
    )
    before = text.index("表格之前的段落")
    inside = text.index("| 项目 | 要求 | 备注 |")
    after = text.index("表格之后的段落")
    assert before < inside < after
    assert parsed.metadata == {"tables": 1, "headings": 2}


def test_docx_title_style_merged_cells_and_escapes() -> None:
    from docx import Document

    document = Document()
    document.add_heading("员工手册", level=0)  # "Title" style -> level 1
    document.add_heading("三级标题", level=3)
    document.add_paragraph("# 正文里的井号")
    table = document.add_table(rows=2, cols=2)
    table.cell(0, 0).text = "合并表头"
    table.cell(0, 0).merge(table.cell(0, 1))
    table.cell(1, 0).text = "a"
    table.cell(1, 1).text = "b"
    buffer = io.BytesIO()
    document.save(buffer)
    parsed = read_bytes(buffer.getvalue(), "handbook.docx")
    assert parsed.title == "员工手册"
    assert parsed.text.startswith("# 员工手册\n\n### 三级标题\n\n\\# 正文里的井号\n\n")
    assert "| 合并表头 | 合并表头 |\n| --- | --- |\n| a | b |" in parsed.text


def test_docx_chinese_style_names() -> None:
    from docx import Document
    from docx.enum.style import WD_STYLE_TYPE

    document = Document()
    document.styles.add_style("标题 2", WD_STYLE_TYPE.PARAGRAPH)
    document.add_paragraph("中文样式名的标题", style="标题 2")
    document.add_paragraph("正文")
    buffer = io.BytesIO()
    document.save(buffer)
    parsed = read_bytes(buffer.getvalue(), "zh.docx")
    assert parsed.text == "## 中文样式名的标题\n\n正文"
    assert parsed.title == "中文样式名的标题"


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"this is not a zip file at all", r"not a ZIP/Office package"),
        (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 100, r"looks like a legacy \.doc file"),
        (None, r"not a ZIP/Office package|missing part|KeyError"),
    ],
    ids=["text", "ole-doc", "truncated-zip"],
)
def test_corrupt_docx_rejected(tmp_path: Path, data: bytes | None, reason: str) -> None:
    if data is None:
        data = make_docx()[:2000]
    with pytest.raises(ReaderError, match=rf"^not a valid \.docx file \(({reason})"):
        read_file(write(tmp_path, "broken.docx", data))


def test_zip_that_is_not_a_word_document_rejected(tmp_path: Path) -> None:
    import zipfile

    path = tmp_path / "fake.docx"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("hello.txt", "hi")
    with pytest.raises(ReaderError, match=r"^not a valid \.docx file \("):
        read_file(path)


def test_docx_without_text_rejected() -> None:
    from docx import Document

    buffer = io.BytesIO()
    Document().save(buffer)
    with pytest.raises(ReaderError, match=r"^empty document"):
        read_bytes(buffer.getvalue(), "empty.docx")


# --------------------------------------------------------------------------- HTML

HTML_GB = """<!DOCTYPE html>
<html><head>
<meta http-equiv="Content-Type" content="text/html; charset=gb2312">
<title>  密码管理  规定 </title>
<style>p { color: red }</style>
<script>var secret = "不应出现";</script>
</head>
<body>
<nav><a href="/">首页</a> 导航栏</nav>
<h1>第一章 总则</h1>
<p>本规定适用于
   全体员工。<br>第二行</p>
<h2>密码要求</h2>
<table>
  <tr><th>项目</th><th>要求</th></tr>
  <tr><td>长度</td><td>至少 12 位 | 含符号</td></tr>
  <tr><td>周期</td><td>90 天</td></tr>
</table>
<ul><li>禁止共享<ul><li>包括家人</li></ul></li><li>定期修改</li></ul>
<ol><li>登录</li><li>修改</li></ol>
<pre><code class="language-bash">passwd   user
echo done</code></pre>
<script>document.write("也不应出现")</script>
<div hidden>隐藏内容</div>
</body></html>
"""


def test_html_gb18030_structure(tmp_path: Path) -> None:
    parsed = read_file(write(tmp_path, "policy.html", HTML_GB.encode("gb18030")))
    assert (parsed.doc_type, parsed.fmt) == ("html", "markdown")
    assert parsed.encoding == "gb18030"
    assert parsed.title == "密码管理 规定"
    assert parsed.text == (
        "# 第一章 总则\n\n"
        "本规定适用于 全体员工。\n第二行\n\n"
        "## 密码要求\n\n"
        "| 项目 | 要求 |\n| --- | --- |\n| 长度 | 至少 12 位 \\| 含符号 |\n| 周期 | 90 天 |\n\n"
        "- 禁止共享\n  - 包括家人\n- 定期修改\n\n"
        "1. 登录\n2. 修改\n\n"
        "```bash\npasswd   user\necho done\n```"
    )
    for dropped in ("不应出现", "导航栏", "隐藏内容", "color: red"):
        assert dropped not in parsed.text


def test_html_title_falls_back_to_h1_and_first_row_header() -> None:
    page = (
        "<html><body><div><h1>Heading One</h1><p>Text <b>bold</b> and <code>x|y</code>.</p>"
        "<table><tbody><tr><td>a</td><td>b</td></tr><tr><td colspan='2'>wide</td></tr></tbody></table>"
        "</div></body></html>"
    )
    parsed = read_bytes(page.encode(), "page.htm")
    assert parsed.title == "Heading One"
    assert parsed.encoding == "utf-8"
    assert "Text bold and `x|y`." in parsed.text
    assert "| a | b |\n| --- | --- |\n| wide | wide |" in parsed.text


def test_html_rowspan_and_layout_table() -> None:
    page = (
        "<table><tr><th>部门</th><th>岗位</th></tr>"
        "<tr><td rowspan='2'>技术部</td><td>开发</td></tr><tr><td>测试</td></tr></table>"
        "<table><tr><td><h2>布局表格里的标题</h2><p>布局段落</p></td></tr></table>"
    )
    text = read_bytes(page.encode(), "t.html").text
    assert "| 部门 | 岗位 |\n| --- | --- |\n| 技术部 | 开发 |\n| 技术部 | 测试 |" in text
    assert text.endswith("## 布局表格里的标题\n\n布局段落")


def test_html_utf8_meta_but_gbk_bytes_still_decodes() -> None:
    page = '<html><head><meta charset="utf-8"><title>标题</title></head><body><p>正文内容</p></body></html>'
    parsed = read_bytes(page.encode("gbk"), "wrong.html")
    assert parsed.encoding == "gb18030"
    assert parsed.text == "正文内容"


def test_xhtml_with_xml_declaration() -> None:
    page = (
        '<?xml version="1.0" encoding="utf-8"?>\n'
        '<html xmlns="http://www.w3.org/1999/xhtml"><head><title>X</title></head>'
        "<body><p>内容</p></body></html>"
    )
    parsed = read_bytes(page.encode(), "x.html")
    assert (parsed.title, parsed.text) == ("X", "内容")


def test_html_deeply_nested_falls_back_to_plain_text() -> None:
    # Deeper than libxml2's default limit (256) and than the recursive renderer handles.
    n = 1500
    page = "<p>开头</p><script>x()</script>" + "<div>" * n + "深处<br>内容" + "</div>" * n + "结尾"
    assert read_bytes(page.encode(), "deep.html").text == "开头\n\n深处\n\n内容\n\n结尾"


def test_html_without_text_rejected() -> None:
    page = "<html><head><title>T</title><script>x()</script></head><body>  </body></html>"
    with pytest.raises(ReaderError, match=r"^HTML has no text content$"):
        read_bytes(page.encode(), "empty.html")


def test_html_binary_rejected() -> None:
    with pytest.raises(
        ReaderError, match=r"binary content in a \.html file \(looks like PNG image\)"
    ):
        read_bytes(PNG_BYTES, "x.html")


# --------------------------------------------------------------------------- all formats


def test_every_format_returns_nul_free_normalized_text(tmp_path: Path) -> None:
    files = {
        "a.txt": "文本\r\n内容".encode(),
        "a.md": "# 标题\r\n内容".encode("gb18030"),
        "a.pdf": make_pdf(["PDF text"]),
        "a.docx": make_docx(),
        "a.html": b"<p>html\r\ntext</p>",
    }
    for name, data in files.items():
        parsed = read_file(write(tmp_path, name, data))
        assert isinstance(parsed, ParsedFile)
        assert parsed.text and "\x00" not in parsed.text and "\r" not in parsed.text, name
        assert parsed.doc_type == SUPPORTED_EXTENSIONS[os.path.splitext(name)[1]]
        assert parsed.fmt == ("text" if parsed.doc_type in ("text", "pdf") else "markdown")
        import json

        json.dumps(parsed.metadata)


def test_html_nested_beyond_the_parsers_depth_keeps_its_text() -> None:
    """libxml2 drops what lies deeper than about 2,000 levels: 100k nested divs read as text
    (not "no text content"), scripts still dropped, entities decoded."""
    from rag_app.readers.html import read_html

    depth = 100_000
    page = ("<html><body><h1>标题</h1>" + "<div>" * depth + "深处的内容。<script>x=1</script>&amp;"
            + "</div>" * depth + "<p>结尾</p></body></html>")  # fmt: skip
    text = read_html(page.encode()).text
    assert "深处的内容。" in text and "结尾" in text and "&" in text
    assert "x=1" not in text and "<div>" not in text
