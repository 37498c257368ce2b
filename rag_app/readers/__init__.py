"""Document readers: bytes or a path in, :class:`ParsedFile` (text + format + title) out.

Dispatch is on the lower-cased file extension (see :data:`SUPPORTED_EXTENSIONS`). Every
failure is a :class:`ReaderError` whose message is one line meant for the user.

The size limit: ``max_bytes`` if given (a value <= 0 disables the limit), else
:data:`DEFAULT_MAX_FILE_MB`. The readers read no settings themselves: ingestion passes
``Settings.max_file_bytes`` (``RAG_MAX_FILE_MB``).
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Callable
from pathlib import Path, PurePath

from rag_app.readers.archive import ARCHIVE_TYPES, DEFAULT_UNPACKED_MAX_MB, check_archive
from rag_app.readers.base import ParsedFile, ReaderError

__all__ = [
    "DEFAULT_MAX_FILE_MB",
    "SUPPORTED_EXTENSIONS",
    "ParsedFile",
    "ReaderError",
    "read_bytes",
    "read_file",
]

log = logging.getLogger(__name__)

SUPPORTED_EXTENSIONS: dict[str, str] = {
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

DEFAULT_MAX_FILE_MB = 50.0  # the default of Settings.max_file_mb
_MB = 1024 * 1024


def _read_markdown(data: bytes, ext: str, name: str) -> ParsedFile:
    from rag_app.readers.text import read_markdown

    return read_markdown(data, ext)


def _read_text(data: bytes, ext: str, name: str) -> ParsedFile:
    from rag_app.readers.text import read_text

    return read_text(data, ext)


def _read_pdf(data: bytes, ext: str, name: str, *, ocr: bool = True) -> ParsedFile:
    from rag_app.readers.pdf import read_pdf

    return read_pdf(data, ocr=ocr)


def _read_docx(data: bytes, ext: str, name: str) -> ParsedFile:
    from rag_app.readers.docx import read_docx

    return read_docx(data)


def _read_html(data: bytes, ext: str, name: str) -> ParsedFile:
    from rag_app.readers.html import read_html

    return read_html(data, ext)


def _read_xlsx(data: bytes, ext: str, name: str) -> ParsedFile:
    from rag_app.readers.sheets import read_xlsx

    return read_xlsx(data, name)


def _read_xls(data: bytes, ext: str, name: str) -> ParsedFile:
    from rag_app.readers.sheets import read_xls

    return read_xls(data, name)


def _read_csv(data: bytes, ext: str, name: str) -> ParsedFile:
    from rag_app.readers.sheets import read_csv

    return read_csv(data, name)


def _read_pptx(data: bytes, ext: str, name: str) -> ParsedFile:
    from rag_app.readers.slides import read_pptx

    return read_pptx(data)


def _read_doc(data: bytes, ext: str, name: str) -> ParsedFile:
    from rag_app.readers.legacy_office import read_doc

    return read_doc(data)


def _read_ppt(data: bytes, ext: str, name: str) -> ParsedFile:
    from rag_app.readers.legacy_office import read_ppt

    return read_ppt(data)


# Readers are imported lazily so that e.g. a text-only run never imports pypdf or lxml.
# Each gets the bytes, the lower-cased extension and the file name (a CSV's table is named
# after its file).
_READERS: dict[str, Callable[[bytes, str, str], ParsedFile]] = {
    "markdown": _read_markdown,
    "text": _read_text,
    "pdf": _read_pdf,
    "docx": _read_docx,
    "html": _read_html,
    "xlsx": _read_xlsx,
    "xls": _read_xls,
    "csv": _read_csv,
    "pptx": _read_pptx,
    "doc": _read_doc,
    "ppt": _read_ppt,
}


def _extension(filename: str | os.PathLike[str]) -> str:
    return PurePath(filename).suffix.lower()


def _unsupported(ext: str) -> ReaderError:
    supported = ", ".join(sorted(SUPPORTED_EXTENSIONS))
    if not ext:
        return ReaderError(f"unsupported file type (no extension; supported: {supported})")
    return ReaderError(f"unsupported file type '{ext}' (supported: {supported})")


def _resolve_limit(max_bytes: int | None) -> int | None:
    """The size limit in bytes: ``max_bytes``, :data:`DEFAULT_MAX_FILE_MB` when it is None, no
    limit (None) when it is <= 0."""
    if max_bytes is None:
        return int(DEFAULT_MAX_FILE_MB * _MB)
    return max_bytes if max_bytes > 0 else None


def _human_size(size: float) -> str:
    if size >= _MB:
        return f"{size / _MB:.1f} MB"
    if size >= 1024:
        return f"{size / 1024:.1f} KB"
    return f"{int(size)} bytes"


def _human_limit(limit: int) -> str:
    if limit >= _MB and limit % _MB == 0:
        return f"{limit // _MB} MB"
    return _human_size(limit)


def _check_size(size: int, limit: int | None) -> None:
    if limit is not None and size > limit:
        raise ReaderError(
            f"file too large: {_human_size(size)} > limit {_human_limit(limit)} (set RAG_MAX_FILE_MB)"
        )


def read_bytes(
    data: bytes,
    filename: str,
    *,
    max_bytes: int | None = None,
    ocr: bool = True,
    max_unpacked_bytes: int | None = None,
) -> ParsedFile:
    """Parse ``data`` as the format implied by ``filename``'s extension.

    ``max_bytes``: the size limit (None: :data:`DEFAULT_MAX_FILE_MB`; <= 0: no limit). ``ocr``:
    OCR the PDF pages that have no text layer (scans). ``max_unpacked_bytes``: what a
    .docx/.xlsx/.pptx may unpack to, judged from its zip directory before it is opened (default
    ``DEFAULT_UNPACKED_MAX_MB``; <= 0: no limit).

    Raises :class:`ReaderError` for unsupported extensions, oversized, empty, binary,
    undecodable or corrupt content.
    """
    ext = _extension(filename)
    doc_type = SUPPORTED_EXTENSIONS.get(ext)
    if doc_type is None:
        raise _unsupported(ext)
    _check_size(len(data), _resolve_limit(max_bytes))
    if not data or data.isspace():
        raise ReaderError("empty file")
    name = PurePath(filename).name
    if doc_type in ARCHIVE_TYPES:
        unpacked = max_unpacked_bytes
        check_archive(
            data,
            max_unpacked_bytes=int(DEFAULT_UNPACKED_MAX_MB * _MB) if unpacked is None else unpacked,
        )
    if doc_type == "pdf":
        parsed = _read_pdf(bytes(data), ext, name, ocr=ocr)
    else:
        parsed = _READERS[doc_type](bytes(data), ext, name)
    log.debug(
        "read %s as %s (%d chars, encoding=%s)",
        filename,
        doc_type,
        len(parsed.text),
        parsed.encoding,
    )
    return parsed


def read_file(path: str | os.PathLike[str], *, max_bytes: int | None = None) -> ParsedFile:
    """Read and parse the file at ``path``; its size is checked with ``os.stat`` first, against
    ``max_bytes`` as in :func:`read_bytes`."""
    file_path = Path(path)
    try:
        info = os.stat(file_path)
    except FileNotFoundError as exc:
        raise ReaderError(f"file not found: {file_path}") from exc
    except PermissionError as exc:
        raise ReaderError(f"permission denied: {file_path}") from exc
    except OSError as exc:
        raise ReaderError(f"cannot access {file_path}: {exc.strerror or exc}") from exc
    if stat.S_ISDIR(info.st_mode):
        raise ReaderError(f"not a file (a directory): {file_path}")
    if not stat.S_ISREG(info.st_mode):
        raise ReaderError(f"not a regular file: {file_path}")

    ext = _extension(file_path)
    if ext not in SUPPORTED_EXTENSIONS:
        raise _unsupported(ext)
    limit = _resolve_limit(max_bytes)
    _check_size(info.st_size, limit)
    try:
        with open(file_path, "rb") as handle:
            # Never read more than limit + 1 bytes, even if the file grew since stat().
            data = handle.read(limit + 1) if limit is not None else handle.read()
    except PermissionError as exc:
        raise ReaderError(f"permission denied: {file_path}") from exc
    except OSError as exc:
        raise ReaderError(f"cannot read {file_path}: {exc.strerror or exc}") from exc
    return read_bytes(data, file_path.name, max_bytes=limit if limit is not None else 0)
