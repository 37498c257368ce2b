"""PDF reader: layout-aware text through PDFium (pypdfium2), scanned pages through OCR.

Every page's characters (with positions, sizes and weights) and ruling lines are read
(:mod:`rag_app.readers.pdf_chars`); ruled tables become GFM tables (:mod:`.pdf_tables`), the other
characters lines and paragraphs in reading order, two-column pages included (:mod:`.pdf_layout`);
running headers, footers and page numbers are dropped (:mod:`.pdf_running`); headings from font
size and weight become ``#`` headings and the document is assembled with tables and paragraphs
continued over page breaks joined (:mod:`.pdf_structure`). ``fmt`` stays ``"text"``: the chunker
reads its ``#`` headings and pipe tables there too, and the Chinese numbering of plain text
(第X条, 一、, 1.) as it always did for PDFs.

A page with no text layer (a scan, a photo) is OCR'd from its images when ``ocr`` is on (the
default; :mod:`rag_app.readers.ocr`); ``metadata["ocr_pages"]`` lists those pages (1-based).

Bounded: at most :data:`MAX_PAGES` pages; a page of more than :data:`MAX_PAGE_CHARS` characters
is read as PDFium's plain text without layout (``metadata["plain_pages"]``); a page whose
rulings are over the table limits keeps its text without tables (``metadata["no_table_pages"]``).
"""

from __future__ import annotations

import io
import logging
import re
from typing import Any

from rag_app.readers.base import ParsedFile, ReaderError
from rag_app.readers.pdf_borderless import find_borderless
from rag_app.readers.pdf_chars import PDFIUM_LOCK, read_page
from rag_app.readers.pdf_layout import Line, build_lines, rejoin
from rag_app.readers.pdf_structure import PageLayout, assemble
from rag_app.readers.pdf_tables import Table, TableLimit, fill_tables, find_tables
from rag_app.readers.text import normalize_newlines

__all__ = ["MAX_PAGES", "MAX_PAGE_CHARS", "MAX_PAGE_SEGMENTS", "PAGE_SEPARATOR", "read_pdf"]

log = logging.getLogger(__name__)

#: Inserted between the text of consecutive pages (OCR'd pages and plain-text pages).
PAGE_SEPARATOR = "\n\n"
MAX_PAGES = 5_000
MAX_PAGE_CHARS = 20_000
MAX_PAGE_SEGMENTS = 20_000

_PDFIUM_PASSWORD = 4  # FPDF_ERR_PASSWORD
_PDFIUM_SECURITY = 5  # FPDF_ERR_SECURITY


def _clean_page(text: str) -> str:
    return normalize_newlines(text.replace("\x00", "")).strip()


def _open(data: bytes) -> Any:
    import pypdfium2 as pdfium

    try:
        return pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        code = getattr(exc, "err_code", None)
        if code == _PDFIUM_PASSWORD:
            raise ReaderError("encrypted PDF: a password is required to open it") from exc
        if code == _PDFIUM_SECURITY:
            raise ReaderError(f"encrypted PDF: cannot decrypt ({exc})") from exc
        raise ReaderError(f"not a valid PDF file ({type(exc).__name__}: {exc})") from exc
    except Exception as exc:  # noqa: BLE001 - anything else from the binding: a bad file
        raise ReaderError(f"not a valid PDF file ({type(exc).__name__}: {exc})") from exc


def _layout(content: Any, notes: dict[str, list[int]]) -> PageLayout:
    """A page's :class:`PageLayout` from its characters and rulings (imported at the top: the
    parse server imports this module once, its forked children then parse at once)."""
    if content.dense:
        notes["plain_pages"].append(content.number)
        return PageLayout(content.number, content.height, text=_clean_page(content.plain))
    tables: list[Table] = []
    if content.too_many_segments:
        notes["no_table_pages"].append(content.number)
    elif content.segments:
        try:
            tables = find_tables(content.segments)
        except TableLimit as exc:
            log.info("PDF page %d: no table finding (%s)", content.number, exc)
            notes["no_table_pages"].append(content.number)
    chars = fill_tables(tables, content.chars, content.number)
    # cut finely for borderless tables' narrow gutters, then joined again outside them
    borderless, lines = find_borderless(build_lines(chars, split=0.25), content.number)
    lines = rejoin(lines)
    tables.extend(borderless)
    lines.extend(Line("", t.x0, t.top, t.x1, t.bottom, 0.0, False, table=t) for t in tables)
    return PageLayout(content.number, content.height, lines)


def read_pdf(data: bytes, *, ocr: bool = True) -> ParsedFile:
    """Read a PDF. ``metadata`` holds ``pages`` (count), ``page_starts`` and, when pages were
    OCR'd, ``ocr_pages`` (1-based page numbers); ``running_header``/``running_footer`` (the
    text dropped from every page), ``tables`` (how many tables), and the pages read without
    layout or tables (see the module docstring).

    ``page_starts[i]`` is the offset in ``text`` where page ``i`` (0-based) begins, so the
    page of a character offset ``x`` is ``bisect.bisect_right(page_starts, x) - 1``.
    """
    notes: dict[str, list[int]] = {"plain_pages": [], "no_table_pages": []}
    layouts: list[PageLayout] = []
    failed = 0
    with PDFIUM_LOCK:
        document = _open(data)
        try:
            count = len(document)
            if count == 0:
                raise ReaderError("PDF has no pages")
            if count > MAX_PAGES:
                raise ReaderError(f"PDF has {count} pages (limit {MAX_PAGES})")
            for index in range(count):
                try:
                    content = read_page(
                        document, index, max_chars=MAX_PAGE_CHARS, max_segments=MAX_PAGE_SEGMENTS
                    )
                except MemoryError:
                    raise
                except Exception as exc:  # noqa: BLE001 - one bad page must not sink the file
                    failed += 1
                    log.warning("PDF page %d: text extraction failed: %s", index + 1, exc)
                    layouts.append(PageLayout(index + 1, 842.0, text=""))
                    continue
                try:
                    layouts.append(_layout(content, notes))
                except MemoryError:
                    raise
                except Exception as exc:  # noqa: BLE001 - a layout bug: the page's text as it is
                    log.warning("PDF page %d: layout failed, plain text: %r", index + 1, exc)
                    notes["plain_pages"].append(index + 1)
                    plain = "".join((" " if c.space else "") + c.text for c in content.chars)
                    layouts.append(PageLayout(index + 1, content.height, text=plain.strip()))
            title, author = _info(document)
        finally:
            document.close()

    texts = ["" if not (p.lines or p.text) else "x" for p in layouts]
    ocr_pages: list[int] = []
    ocr_error: str | None = None
    if ocr and not all(texts):
        pypdf_pages = _pypdf_pages(data)
        ocr_pages, ocr_error, lost = _ocr_empty_pages(pypdf_pages, texts)
        if not any(texts) and failed == len(layouts):
            raise ReaderError("PDF text extraction failed on every page (damaged file?)")
        # a scanned page that couldn't be read is a FAILED file, not a silently empty page
        if ocr_error:
            empty = ", ".join(str(i + 1) for i, t in enumerate(texts) if not t)
            raise ReaderError(
                f"PDF page {empty} has no text layer and OCR is unavailable ({ocr_error}): "
                "install it (`make ocr-deps`), or set RAG_PDF_OCR=false to ingest only the "
                "pages with text"
            )
        if lost:
            raise ReaderError(
                "OCR failed on PDF page "
                + "; page ".join(f"{number} ({why})" for number, why in lost)
            )
        for number in ocr_pages:
            layouts[number - 1] = PageLayout(number, 842.0, text=texts[number - 1])

    if not any(texts):
        if failed == len(layouts):
            raise ReaderError("PDF text extraction failed on every page (damaged file?)")
        if not ocr:
            raise ReaderError("PDF has no extractable text (scanned or image-only?; OCR is off)")
        raise ReaderError("PDF has no extractable text (no text layer, no readable images)")

    try:
        doc = assemble(layouts, title)
    except MemoryError:
        raise
    except Exception as exc:  # noqa: BLE001 - a layout bug is the file's FAILED, not a 500
        log.exception("PDF layout failed")
        raise ReaderError(f"PDF layout analysis failed ({type(exc).__name__}: {exc})") from exc
    if not doc.text.strip():
        raise ReaderError("PDF has no extractable text (no text layer, no readable images)")
    metadata: dict[str, object] = {"pages": len(layouts), "page_starts": doc.page_starts}
    if failed:
        metadata["failed_pages"] = failed
    if ocr_pages:
        metadata["ocr_pages"] = ocr_pages
    if author:
        metadata["author"] = author
    if doc.running_header:
        metadata["running_header"] = doc.running_header
    if doc.running_footer:
        metadata["running_footer"] = doc.running_footer
    if doc.tables:
        metadata["tables"] = doc.tables
    for key, pages in notes.items():
        if pages:
            metadata[key] = pages
    return ParsedFile(
        text=doc.text, doc_type="pdf", fmt="text", title=doc.title, encoding=None, metadata=metadata
    )


def _pypdf_pages(data: bytes) -> list[Any] | None:
    """pypdf's pages, for the images of the pages without text; None if pypdf can't read it."""
    try:
        from pypdf import PdfReader

        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            reader.decrypt("")
        return list(reader.pages)
    except Exception as exc:  # noqa: BLE001 - PDFium read it; its images are then unreadable
        log.warning("PDF images unreadable (pypdf): %s", exc)
        return None


def _ocr_empty_pages(
    pages: list[Any] | None, texts: list[str]
) -> tuple[list[int], str | None, list[tuple[int, str]]]:
    """OCR the images of every page whose text is empty, in place. Returns the pages that got
    text, the reason OCR could not run at all (``None`` if it could), and the pages that stayed
    empty because their images could not be read or OCR'd (page number, reason)."""
    import rag_app.readers.ocr as ocr_module
    from rag_app.readers.ocr import OcrUnavailable

    done: list[int] = []
    lost: list[tuple[int, str]] = []
    for index in range(len(texts)):
        if texts[index]:
            continue
        try:
            if pages is None:
                raise ValueError("pypdf cannot read the file")
            images = list(pages[index].images)
        except Exception as exc:  # noqa: BLE001 - an undecodable image: the page is lost
            log.warning("PDF page %d: images unreadable: %s", index + 1, exc)
            lost.append((index + 1, f"images unreadable: {type(exc).__name__}: {exc}"[:200]))
            continue
        parts: list[str] = []
        errors: list[str] = []
        for image in images:
            try:
                parts.append(ocr_module.ocr_image(image.image))
            except OcrUnavailable as exc:
                return done, str(exc), lost
            except Exception as exc:  # noqa: BLE001 - reported below if the page stays empty
                log.warning("PDF page %d: OCR failed: %s", index + 1, exc)
                errors.append(f"{type(exc).__name__}: {exc}"[:200])
        text = _clean_page("\n".join(p for p in parts if p))
        if text:
            texts[index] = text
            done.append(index + 1)
        elif errors:
            lost.append((index + 1, errors[0]))
    if done:
        log.info("OCR'd %d PDF page(s) without a text layer: %s", len(done), done)
    return done, None, lost


def _info(document: Any) -> tuple[str | None, str | None]:
    """Title and author from the document information dictionary, if readable."""
    try:
        info = document.get_metadata_dict(skip_empty=True)
    except Exception as exc:  # noqa: BLE001 - broken metadata is not worth failing over
        log.debug("PDF metadata unreadable: %s", exc)
        return None, None
    title = _clean_info(info.get("Title"))
    return (None if title is None or placeholder_title(title) else title), _clean_info(
        info.get("Author")
    )


# What authoring tools write when nobody set a title: not a heading for the document's chunks
# (the heading path then starts at the document's own first heading or line).
_PLACEHOLDER = re.compile(
    r"(?i)^(?:untitled(?:[\s-]*\d+)?|no title|title|document\s*\d*|文档\s*\d*|无标题(?:\s*\d+)?"
    r"|新建\s*\S*\s*文档(?:\s*\d+)?|slide\s*\d*|powerpoint presentation|presentation\s*\d*"
    r"|<?unknown>?|none|null|-+|about:blank|data:.*|(?:https?|file)://\S*)$"
)
_TOOL_PREFIX = re.compile(r"(?i)^(?:microsoft (?:word|excel|powerpoint)|wps(?: 文字)?)\s*-\s*")
_FILE_NAME = re.compile(r"(?i)\.(?:docx?|xlsx?|pptx?|pdf|txt|rtf|odt|wps)$")


def placeholder_title(title: str) -> bool:
    """Whether a PDF's metadata title is a tool's placeholder ("untitled", "Microsoft Word -
    报告.docx", a bare file name) rather than a title someone gave it."""
    text = title.strip()
    return bool(_PLACEHOLDER.match(text) or _TOOL_PREFIX.match(text) or _FILE_NAME.search(text))


def _clean_info(value: object) -> str | None:
    if not isinstance(value, str):
        return None
    cleaned = " ".join(value.replace("\x00", "").split())
    return cleaned or None
