"""A scanned page whose OCR can't run or fails is a FAILED file with the reason (issue 16), not
a silently empty page. The OCR engine is replaced, so no CJK font or OCR model is needed."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from rag_app.readers import ReaderError, read_bytes
from rag_app.readers.ocr import OcrUnavailable


def _pdf_with_a_scanned_page() -> bytes:
    """Page 1 has a text layer, page 2 is only an image."""
    from PIL import Image
    from reportlab.lib.utils import ImageReader
    from reportlab.pdfgen import canvas

    png = io.BytesIO()
    Image.new("L", (400, 200), 200).save(png, format="PNG")
    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer, pagesize=(595, 842))
    pdf.setFont("Helvetica", 12)
    pdf.drawString(72, 770, "Cover page with a text layer")
    pdf.showPage()
    pdf.drawImage(ImageReader(io.BytesIO(png.getvalue())), 48, 400, 400, 200)
    pdf.showPage()
    pdf.save()
    return buffer.getvalue()


def _ocr_raising(exc: Exception) -> Any:
    def ocr_image(image: Any) -> str:
        raise exc

    return ocr_image


def test_unavailable_ocr_fails_the_file_naming_the_page(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        "rag_app.readers.ocr.ocr_image", _ocr_raising(OcrUnavailable("rapidocr not importable"))
    )
    with pytest.raises(ReaderError, match=r"page 2.*OCR is unavailable.*rapidocr not importable"):
        read_bytes(_pdf_with_a_scanned_page(), "scan.pdf")


def test_an_ocr_error_fails_the_file_naming_the_page(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("rag_app.readers.ocr.ocr_image", _ocr_raising(ValueError("bad pixels")))
    with pytest.raises(ReaderError, match=r"OCR failed on PDF page 2 \(ValueError: bad pixels\)"):
        read_bytes(_pdf_with_a_scanned_page(), "scan.pdf")


def test_ocr_that_reads_nothing_is_no_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("rag_app.readers.ocr.ocr_image", lambda image: "")  # a blank scan
    parsed = read_bytes(_pdf_with_a_scanned_page(), "scan.pdf")
    assert parsed.text == "Cover page with a text layer"


def test_ocr_off_still_ingests_the_text_pages() -> None:
    parsed = read_bytes(_pdf_with_a_scanned_page(), "scan.pdf", ocr=False)
    assert parsed.text == "Cover page with a text layer"


def test_the_ingest_report_and_document_carry_the_reason(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, embed_model: Any
) -> None:
    from rag_app import KnowledgeBase

    monkeypatch.setattr(
        "rag_app.readers.ocr.ocr_image", _ocr_raising(OcrUnavailable("rapidocr not importable"))
    )
    path = tmp_path / "scan.pdf"
    path.write_bytes(_pdf_with_a_scanned_page())
    # parse in this process: the replaced OCR engine is this process's
    with KnowledgeBase.open(tmp_path / "kb", embed_model=embed_model, parse_in_process=True) as kb:
        report = kb.ingest([path])
        (result,) = report.files
        assert result.status == "FAILED"
        assert result.reason and "page 2" in result.reason and "OCR" in result.reason
        assert result.doc_id is not None
        document = kb.documents.get(result.doc_id)
        assert document is not None and document.status == "FAILED"
        assert document.error and "OCR is unavailable" in document.error
