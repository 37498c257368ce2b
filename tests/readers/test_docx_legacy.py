"""Legacy .doc/.ppt through LibreOffice: ingested where it is installed (the .doc here is made by
LibreOffice from a .docx with Word numbering), a FAILED with the reason where it is not."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from rag_app.readers import ReaderError, read_bytes
from rag_app.readers.legacy_office import OLE2_MAGIC, convert, find_soffice
from rag_app.service.uploads import UploadRejected, check_content
from tests.readers.docx_builders import abstract, lvl, num, number, numbering_xml, save
from tests.readers.office_files import make_pptx

needs_office = pytest.mark.skipif(
    find_soffice() is None, reason="LibreOffice not installed (make office-deps)"
)

ARTICLES = ["员工每年享有带薪年假十天。", "员工请病假须提交医院证明。", "员工婚假为三天。"]


def policy_docx() -> bytes:
    from docx import Document

    document = Document()
    document.add_heading("考勤管理制度", level=1)
    for text in ARTICLES:
        number(document.add_paragraph(text), 1)
    table = document.add_table(rows=2, cols=2)
    table.cell(0, 0).text, table.cell(0, 1).text = "假期", "天数"
    table.cell(1, 0).text, table.cell(1, 1).text = "婚假", "3"
    document.add_paragraph("本制度自发布之日起施行。")  # .doc needs a paragraph after a table
    definition = numbering_xml(
        abstract(0, lvl(0, "chineseCounting", "第%1条", suff="space")), num(1, 0)
    )
    return save(document, numbering=definition)


@pytest.fixture(scope="module")
def legacy_doc() -> bytes:
    data = convert(policy_docx(), ".docx", "doc")
    assert data.startswith(OLE2_MAGIC)
    return data


def hide_office(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    empty = tmp_path / "no-office-bin"
    empty.mkdir(exist_ok=True)
    monkeypatch.setenv("PATH", str(empty))
    assert find_soffice() is None


@needs_office
def test_a_doc_is_read_through_libreoffice_with_its_word_numbering(legacy_doc: bytes) -> None:
    parsed = read_bytes(legacy_doc, "考勤管理制度.doc")
    assert (parsed.doc_type, parsed.fmt) == ("doc", "markdown")
    assert parsed.metadata["converted_by"] == "libreoffice"
    assert parsed.title == "考勤管理制度"
    assert "第二条 员工请病假须提交医院证明。" in parsed.text.split("\n\n")
    assert "| 婚假 | 3 |" in parsed.text


def test_without_libreoffice_a_doc_fails_with_the_reason(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    hide_office(monkeypatch, tmp_path)
    with pytest.raises(ReaderError, match=r"^legacy \.doc needs LibreOffice.*make office-deps"):
        read_bytes(OLE2_MAGIC + b"\x00" * 600, "旧制度.doc")
    with pytest.raises(ReaderError, match=r"^legacy \.ppt needs LibreOffice"):
        read_bytes(OLE2_MAGIC + b"\x00" * 600, "旧课件.ppt")


def test_a_doc_that_is_really_a_docx_is_read_without_libreoffice(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    hide_office(monkeypatch, tmp_path)
    parsed = read_bytes(policy_docx(), "renamed.doc")
    assert parsed.doc_type == "doc"
    assert "第一条 员工每年享有带薪年假十天。" in parsed.text


def test_what_is_not_an_office_97_file_is_refused() -> None:
    with pytest.raises(ReaderError, match=r"^not a legacy \.doc file"):
        read_bytes(b"just some text" * 10, "notes.doc")


@needs_office
def test_a_damaged_doc_fails_with_libreoffice_s_reason() -> None:
    with pytest.raises(ReaderError, match=r"^LibreOffice could not convert the legacy \.doc file"):
        read_bytes(OLE2_MAGIC + b"\x00" * 600, "broken.doc")


@needs_office
def test_a_ppt_is_read_through_libreoffice() -> None:
    parsed = read_bytes(convert(make_pptx(), ".pptx", "ppt"), "deck.ppt")
    assert parsed.doc_type == "ppt"
    assert "## 理赔时效" in parsed.text
    assert "资料齐全后，理赔款在五个工作日内到账。" in parsed.text


def test_uploads_sniff_office_97_files() -> None:
    assert check_content("制度.doc", OLE2_MAGIC + b"\x00" * 100) == "doc"
    assert check_content("课件.ppt", OLE2_MAGIC + b"\x00" * 100) == "ppt"
    assert check_content("制度.doc", b"{\\rtf1\\ansi hello}") == "doc"  # RTF saved as .doc
    for name in ("制度.doc", "课件.ppt"):
        with pytest.raises(UploadRejected, match="not an OLE2 Office 97-2003 file") as info:
            check_content(name, b"plain text, not a document")
        assert info.value.status_code == 415


@needs_office
@pytest.mark.parametrize("in_process", [False, True])
def test_a_doc_is_ingested_in_the_bounded_parse_and_in_process(
    tmp_path: Path,
    embed_model,  # type: ignore[no-untyped-def]
    legacy_doc: bytes,
    in_process: bool,
) -> None:
    results, docs = _ingest(tmp_path, embed_model, {"考勤管理制度.doc": legacy_doc}, in_process)
    assert results["考勤管理制度.doc"].status == "SUCCESS", results["考勤管理制度.doc"].reason
    assert docs["考勤管理制度.doc"].status == "SUCCESS"


def test_without_libreoffice_the_doc_fails_and_the_rest_is_ingested(
    tmp_path: Path,
    embed_model,  # type: ignore[no-untyped-def]
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    hide_office(monkeypatch, tmp_path)
    files = {
        "旧制度.doc": OLE2_MAGIC + b"\x00" * 600,
        "新制度.md": "# 年假\n\n年假十天。\n".encode(),
    }
    results, docs = _ingest(tmp_path, embed_model, files, True)
    assert results["旧制度.doc"].status == "FAILED"
    assert "legacy .doc needs LibreOffice" in (results["旧制度.doc"].reason or "")
    assert docs["旧制度.doc"].error is not None and "make office-deps" in docs["旧制度.doc"].error
    assert results["新制度.md"].status == "SUCCESS"


def _ingest(tmp_path: Path, embed_model, files: dict[str, bytes], in_process: bool):  # type: ignore[no-untyped-def]
    from rag_app import KnowledgeBase

    folder = tmp_path / "in"
    folder.mkdir()
    for name, data in files.items():
        (folder / name).write_bytes(data)
    with KnowledgeBase.open(
        tmp_path / "kb", embed_model=embed_model, parse_in_process=in_process
    ) as kb:
        report = kb.ingest([folder])
        docs = {Path(d.rel_path).name: d for d in kb.documents.list()}
    return {Path(f.path).name: f for f in report.files}, docs


def test_pptx_helper_still_builds() -> None:  # the .ppt test's source deck
    from pptx import Presentation

    assert len(Presentation(io.BytesIO(make_pptx())).slides) == 2
