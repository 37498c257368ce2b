"""OCR of PDF pages without a text layer: the text, its page, and the OCR mark on the chunks."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_app.ingestion.pipeline import page_metadata
from rag_app.readers import ReaderError, read_bytes
from tests.readers.scans import require_cjk_font, scanned_pdf

SCAN = ["机房管理规定", "第一条　机房温度应保持在二十二摄氏度。", "第二条　进入机房须登记。"]


@pytest.fixture(scope="module")
def scan_pdf() -> bytes:
    """Page 1 has a text layer, page 2 is only an image of Chinese text."""
    return scanned_pdf(
        ["Cover page with a text layer", SCAN], require_cjk_font(), title="机房管理规定"
    )


@pytest.mark.slow
def test_image_only_page_is_ocrd_and_keeps_its_page_number(scan_pdf: bytes) -> None:
    parsed = read_bytes(scan_pdf, "scan.pdf")
    assert parsed.metadata["ocr_pages"] == [2]
    assert parsed.metadata["pages"] == 2
    starts = parsed.metadata["page_starts"]
    assert isinstance(starts, list)
    cover, scanned = parsed.text[: starts[1]], parsed.text[starts[1] :]
    assert "Cover page" in cover and "机房" not in cover
    assert "机房温度应保持在二十二摄氏度" in scanned
    assert "进入机房须登记" in scanned


def test_ocr_off_leaves_an_image_only_page_empty(scan_pdf: bytes) -> None:
    parsed = read_bytes(scan_pdf, "scan.pdf", ocr=False)
    assert "机房" not in parsed.text and "ocr_pages" not in parsed.metadata


def test_a_pdf_of_nothing_but_unreadable_images_is_a_clear_error() -> None:
    import io

    from reportlab.pdfgen import canvas

    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer)
    pdf.rect(100, 100, 200, 200, fill=1)
    pdf.showPage()
    pdf.save()
    with pytest.raises(ReaderError, match="no text layer, no readable images"):
        read_bytes(buffer.getvalue(), "blank.pdf")


def test_page_metadata_names_the_pages_of_a_span_and_the_ocr_mark() -> None:
    meta = {"page_starts": "0,100,250", "ocr_pages": "2"}
    assert page_metadata(meta, 0, 90) == {"pages": "1", "ocr": False}
    assert page_metadata(meta, 100, 200) == {"pages": "2", "ocr": True}
    assert page_metadata(meta, 50, 120) == {"pages": "1-2", "ocr": True}
    assert page_metadata(meta, 260, 300) == {"pages": "3", "ocr": False}
    assert page_metadata(meta, 90, 100) == {"pages": "1", "ocr": False}  # end is exclusive
    assert page_metadata({"title": "x"}, 0, 10) == {}


@pytest.mark.slow
def test_ocrd_sentence_is_retrieved_with_its_heading_page_and_mark(kb, scan_pdf, tmp_path: Path):
    path = tmp_path / "机房管理规定.pdf"
    path.write_bytes(scan_pdf)
    report = kb.ingest([path])
    assert report.files[0].status == "SUCCESS", report.files[0].reason
    hits = kb.retrieve("机房温度应保持在多少度？", top_k=3)
    hit = next(h for h in hits if "二十二摄氏度" in h.text)
    assert hit.title_path == "机房管理规定 > 第一条"
    stored = kb.vectors.collection.get(ids=[hit.chunk_id], include=["metadatas"])
    meta = stored["metadatas"][0]
    assert (meta["pages"], meta["ocr"]) == ("2", True)
    # the chunk viewer's chunks (GET /api/documents/{id}/chunks) carry the page and the mark
    shown = {c.chunk_id: c for c in kb.documents.chunks(report.files[0].doc_id)}
    assert (shown[hit.chunk_id].pages, shown[hit.chunk_id].ocr) == ("2", True)
    assert all(c.pages for c in shown.values())
