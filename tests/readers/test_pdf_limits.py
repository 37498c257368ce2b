"""Hostile and broken PDFs: a clear FAILED reason or a page read without the costly analysis
(and a note saying so), never an unbounded parse."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

from rag_app.readers import ReaderError, read_bytes
from rag_app.readers import pdf as pdf_reader


def _canvas(size: tuple[float, float] = (595, 842)) -> tuple[io.BytesIO, object]:
    from reportlab.pdfgen import canvas

    buffer = io.BytesIO()
    return buffer, canvas.Canvas(buffer, pagesize=size)


def _blank_pages(count: int) -> bytes:
    """A PDF of ``count`` empty pages, written directly (reportlab takes seconds for 10,000)."""
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Count %d /Kids [%s] >>"
        % (count, b" ".join(b"%d 0 R" % (3 + k) for k in range(count))),
    ]
    objects += [b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] >>"] * count
    out = bytearray(b"%PDF-1.7\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def test_ten_thousand_pages_fail_with_the_page_limit() -> None:
    with pytest.raises(ReaderError, match=r"^PDF has 10000 pages \(limit 5000\)$"):
        read_bytes(_blank_pages(10_000), "many.pdf")
    with pytest.raises(ReaderError, match=r"^PDF has no extractable text"):
        read_bytes(_blank_pages(3), "blank.pdf")  # the writer makes valid PDFs


def test_a_page_of_fifty_thousand_tiny_characters_is_read_without_layout() -> None:
    buffer, c = _canvas()
    c.setFont("Helvetica", 1)  # type: ignore[attr-defined]
    for row in range(500):
        c.drawString(10, 830 - row * 1.6, "x" * 100)  # type: ignore[attr-defined]
    c.showPage()  # type: ignore[attr-defined]
    c.setFont("Helvetica", 12)  # type: ignore[attr-defined]
    c.drawString(72, 700, "A normal second page.")  # type: ignore[attr-defined]
    c.showPage()  # type: ignore[attr-defined]
    c.save()  # type: ignore[attr-defined]
    parsed = read_bytes(buffer.getvalue(), "tiny.pdf")
    assert parsed.metadata["plain_pages"] == [1]
    assert parsed.text.count("x") == 50_000
    assert "A normal second page." in parsed.text


def test_a_grid_of_a_hundred_thousand_cells_keeps_its_text_without_table_finding() -> None:
    buffer, c = _canvas((1700, 1700))
    n, step = 317, 5  # 317 x 317 = 100,489 cells of 5 x 5 pt
    for k in range(n + 1):
        c.line(40, 40 + k * step, 40 + n * step, 40 + k * step)  # type: ignore[attr-defined]
        c.line(40 + k * step, 40, 40 + k * step, 40 + n * step)  # type: ignore[attr-defined]
    c.setFont("Helvetica", 12)  # type: ignore[attr-defined]
    c.drawString(72, 1660, "Text above the grid.")  # type: ignore[attr-defined]
    c.showPage()  # type: ignore[attr-defined]
    c.save()  # type: ignore[attr-defined]
    parsed = read_bytes(buffer.getvalue(), "grid.pdf")
    assert parsed.metadata["no_table_pages"] == [1]
    assert "Text above the grid." in parsed.text and "|" not in parsed.text


def test_too_many_ruling_segments_skip_table_finding(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pdf_reader, "MAX_PAGE_SEGMENTS", 50)
    buffer, c = _canvas()
    for k in range(60):
        c.line(40, 40 + k * 5, 100, 40 + k * 5)  # type: ignore[attr-defined]
    c.setFont("Helvetica", 12)  # type: ignore[attr-defined]
    c.drawString(72, 700, "Ruled notes.")  # type: ignore[attr-defined]
    c.showPage()  # type: ignore[attr-defined]
    c.save()  # type: ignore[attr-defined]
    parsed = read_bytes(buffer.getvalue(), "lines.pdf")
    assert parsed.metadata["no_table_pages"] == [1] and parsed.text == "Ruled notes."


def _valid_pdf() -> bytes:
    buffer, c = _canvas()
    c.setFont("Helvetica", 12)  # type: ignore[attr-defined]
    c.drawString(72, 700, "Survives a broken cross-reference table.")  # type: ignore[attr-defined]
    c.showPage()  # type: ignore[attr-defined]
    c.save()  # type: ignore[attr-defined]
    return buffer.getvalue()


def test_a_bad_xref_is_repaired_or_fails_with_a_reason() -> None:
    data = _valid_pdf()
    broken = re.sub(rb"startxref\s+\d+", b"startxref\n999999", data)
    broken = re.sub(rb"\d{10} 00000 n", b"0000000001 00000 n", broken)
    assert broken != data
    try:
        parsed = read_bytes(broken, "xref.pdf")
    except ReaderError as exc:
        assert str(exc).startswith("not a valid PDF file")
    else:  # PDFium rebuilds the table from the objects themselves
        assert parsed.text == "Survives a broken cross-reference table."


def test_a_pdf_with_no_objects_at_all_fails_with_a_reason() -> None:
    with pytest.raises(ReaderError, match=r"^not a valid PDF file \("):
        read_bytes(b"%PDF-1.7\n" + b"0" * 5000 + b"\n%%EOF\n", "empty.pdf")


def test_hostile_pdfs_fail_in_the_parse_child_and_the_good_one_ingests(
    tmp_path: Path,
    embed_model,  # type: ignore[no-untyped-def]
) -> None:
    """Through the parse child (forked from the parse server that imported PDFium): the
    10,000-page file FAILS with its reason, a garbage file too, the good PDF's chunks have no
    running header and carry their pages."""
    from rag_app import KnowledgeBase
    from tests.readers.pdf_samples import Doc

    good = Doc(header="某某公司 报销制度").heading("报销制度", 18)
    rule = "员工因公出差发生的交通、住宿费用，凭有效票据在出差结束后十五个工作日内报销。"
    for n in "一二三四五六七八九十":
        good.para(f"第{n}条 {rule * 4}")
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "many.pdf").write_bytes(_blank_pages(10_000))
    (folder / "garbage.pdf").write_bytes(b"%PDF-1.7\n" + b"0" * 5000 + b"\n%%EOF\n")
    (folder / "good.pdf").write_bytes(good.pdf())
    with KnowledgeBase.open(tmp_path / "kb", embed_model=embed_model) as kb:
        report = kb.ingest([folder])
        results = {Path(f.path).name: f for f in report.files}
        docs = {Path(d.rel_path).name: d for d in kb.documents.list()}
        chunks = kb.documents.chunks(docs["good.pdf"].doc_id)
    assert results["many.pdf"].status == "FAILED"
    assert results["many.pdf"].reason == "PDF has 10000 pages (limit 5000)"
    assert results["garbage.pdf"].status == "FAILED"
    assert str(results["garbage.pdf"].reason).startswith("not a valid PDF file")
    assert results["good.pdf"].status == "SUCCESS" and results["good.pdf"].chunks >= 2
    assert len(chunks) >= 2 and not any("某某公司" in c.text for c in chunks)
    assert any(c.pages.endswith("2") for c in chunks) and all(c.title_path for c in chunks)


def test_too_many_ruled_tables_on_a_page_skip_table_finding(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from rag_app.readers import pdf_tables

    monkeypatch.setattr(pdf_tables, "MAX_PAGE_TABLES", 50)
    buffer, c = _canvas()
    c.setFont("Helvetica", 4)  # type: ignore[attr-defined]
    for i in range(60):  # 60 separate 2 x 2 grids
        x, y = 40 + (i % 10) * 50, 100 + (i // 10) * 50
        for k in range(3):
            c.line(x, y + 15 * k, x + 30, y + 15 * k)  # type: ignore[attr-defined]
            c.line(x + 15 * k, y, x + 15 * k, y + 30)  # type: ignore[attr-defined]
        c.drawString(x + 2, y + 2, f"c{i}")  # type: ignore[attr-defined]
    c.showPage()  # type: ignore[attr-defined]
    c.save()  # type: ignore[attr-defined]
    parsed = read_bytes(buffer.getvalue(), "grids.pdf")
    assert parsed.metadata["no_table_pages"] == [1] and "c59" in parsed.text
