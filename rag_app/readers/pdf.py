"""PDF reader (pypdf): page-by-page text, pages joined with a blank line.

A page with no text layer (a scan, a photo) is OCR'd from its images when ``ocr`` is on (the
default; :mod:`rag_app.readers.ocr`); ``metadata["ocr_pages"]`` lists those pages (1-based).
"""

from __future__ import annotations

import io
import logging
import re
from typing import Any

from pypdf import PdfReader
from pypdf.errors import DependencyError, FileNotDecryptedError

from rag_app.readers.base import ParsedFile, ReaderError
from rag_app.readers.text import normalize_newlines

__all__ = ["PAGE_SEPARATOR", "read_pdf"]

log = logging.getLogger(__name__)

#: Inserted between the text of consecutive pages.
PAGE_SEPARATOR = "\n\n"


def _clean_page(text: str) -> str:
    return normalize_newlines(text.replace("\x00", "")).strip()


def read_pdf(data: bytes, *, ocr: bool = True) -> ParsedFile:
    """Read a PDF. ``metadata`` holds ``pages`` (count), ``page_starts`` and, when pages were
    OCR'd, ``ocr_pages`` (1-based page numbers).

    ``page_starts[i]`` is the offset in ``text`` where page ``i`` (0-based) begins, so the
    page of a character offset ``x`` is ``bisect.bisect_right(page_starts, x) - 1``.
    """
    try:
        reader = PdfReader(io.BytesIO(data))
    except Exception as exc:  # noqa: BLE001 - pypdf raises many types on bad input
        raise ReaderError(f"not a valid PDF file ({type(exc).__name__}: {exc})") from exc

    if reader.is_encrypted:
        try:
            opened = reader.decrypt("")
        except DependencyError as exc:
            raise ReaderError(
                f"encrypted PDF: cannot decrypt ({exc}); install 'cryptography'"
            ) from exc
        except Exception as exc:  # noqa: BLE001
            raise ReaderError(f"encrypted PDF: cannot decrypt ({exc})") from exc
        if not opened:
            raise ReaderError("encrypted PDF: a password is required to open it")

    try:
        pages = list(reader.pages)
    except FileNotDecryptedError as exc:
        raise ReaderError("encrypted PDF: a password is required to open it") from exc
    except Exception as exc:  # noqa: BLE001
        raise ReaderError(f"not a valid PDF file ({type(exc).__name__}: {exc})") from exc
    if not pages:
        raise ReaderError("PDF has no pages")

    texts: list[str] = []
    failed = 0
    for number, page in enumerate(pages, start=1):
        try:
            texts.append(_clean_page(page.extract_text() or ""))
        except Exception as exc:  # noqa: BLE001 - one bad page must not sink the file
            failed += 1
            log.warning("PDF page %d: text extraction failed: %s", number, exc)
            texts.append("")

    ocr_pages: list[int] = []
    ocr_error: str | None = None
    if ocr and not all(texts):
        ocr_pages, ocr_error, lost = _ocr_empty_pages(pages, texts)
        if not any(texts) and failed == len(pages):
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

    if not any(texts):
        if failed == len(pages):
            raise ReaderError("PDF text extraction failed on every page (damaged file?)")
        if not ocr:
            raise ReaderError("PDF has no extractable text (scanned or image-only?; OCR is off)")
        raise ReaderError("PDF has no extractable text (no text layer, no readable images)")

    page_starts: list[int] = []
    offset = 0
    for index, page_text in enumerate(texts):
        if index:
            offset += len(PAGE_SEPARATOR)
        page_starts.append(offset)
        offset += len(page_text)
    text = PAGE_SEPARATOR.join(texts)
    # Trailing empty pages would point past the (stripped) end; clamp them.
    stripped = text.rstrip()
    page_starts = [min(start, len(stripped)) for start in page_starts]

    metadata: dict[str, object] = {"pages": len(pages), "page_starts": page_starts}
    if failed:
        metadata["failed_pages"] = failed
    if ocr_pages:
        metadata["ocr_pages"] = ocr_pages
    title, author = _info(reader)
    if author:
        metadata["author"] = author
    return ParsedFile(
        text=stripped, doc_type="pdf", fmt="text", title=title, encoding=None, metadata=metadata
    )


def _ocr_empty_pages(
    pages: list[Any], texts: list[str]
) -> tuple[list[int], str | None, list[tuple[int, str]]]:
    """OCR the images of every page whose text is empty, in place. Returns the pages that got
    text, the reason OCR could not run at all (``None`` if it could), and the pages that stayed
    empty because their images could not be read or OCR'd (page number, reason)."""
    import rag_app.readers.ocr as ocr_module
    from rag_app.readers.ocr import OcrUnavailable

    done: list[int] = []
    lost: list[tuple[int, str]] = []
    for index, page in enumerate(pages):
        if texts[index]:
            continue
        try:
            images = list(page.images)
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


def _info(reader: PdfReader) -> tuple[str | None, str | None]:
    """Title and author from the document information dictionary, if readable."""
    try:
        info = reader.metadata
        if info is None:
            return None, None
        title = info.title
        author = info.author
    except Exception as exc:  # noqa: BLE001 - broken metadata is not worth failing over
        log.debug("PDF metadata unreadable: %s", exc)
        return None, None
    title = _clean_info(title)
    return (None if title is None or placeholder_title(title) else title), _clean_info(author)


# What authoring tools write when nobody set a title: not a heading for the document's chunks
# (the heading path then starts at the document's own first heading or line).
_PLACEHOLDER = re.compile(
    r"(?i)^(?:untitled(?:[\s-]*\d+)?|no title|title|document\s*\d*|文档\s*\d*|无标题(?:\s*\d+)?"
    r"|新建\s*\S*\s*文档(?:\s*\d+)?|slide\s*\d*|powerpoint presentation|presentation\s*\d*"
    r"|<?unknown>?|none|null|-+)$"
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
