"""Zip-based formats (.docx, .xlsx, .pptx): judged by the zip directory before anything unpacks.

A 40 KB .docx can declare a ``word/document.xml`` of a gigabyte. The central directory lists
each entry's uncompressed size, and Python's ``zipfile`` never inflates an entry past the size
its directory states, so summing those sizes bounds what the readers can unpack.
"""

from __future__ import annotations

import io
import zipfile

from rag_app.readers.base import ReaderError

__all__ = ["ARCHIVE_TYPES", "DEFAULT_UNPACKED_MAX_MB", "MAX_ARCHIVE_ENTRIES", "check_archive"]

ARCHIVE_TYPES = frozenset({"docx", "xlsx", "pptx"})
DEFAULT_UNPACKED_MAX_MB = 200.0
# real office files have tens to a few thousand parts (one per slide, sheet, image, ...)
MAX_ARCHIVE_ENTRIES = 20_000
_MB = 1024 * 1024
_GIB = 1024 * _MB


def _size(size: int) -> str:
    return f"{size / _GIB:.1f} GiB" if size >= _GIB else f"{size / _MB:.1f} MB"


def _limit(limit: int) -> str:
    return f"{limit // _MB} MB" if limit % _MB == 0 else _size(limit)


def check_archive(
    data: bytes, *, max_unpacked_bytes: int, max_entries: int = MAX_ARCHIVE_ENTRIES
) -> None:
    """Raise :class:`ReaderError` when the zip in ``data`` unpacks to more than
    ``max_unpacked_bytes`` (<= 0: no limit) or has more than ``max_entries`` entries.

    Data that is not a readable zip passes: the format's reader reports what it is.
    """
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            entries = archive.infolist()
    except (zipfile.BadZipFile, ValueError, OSError, EOFError):
        return
    if len(entries) > max_entries:
        raise ReaderError(
            f"archive has {len(entries):,} entries, over the limit of {max_entries:,}"
        )
    total = sum(max(entry.file_size, 0) for entry in entries)
    if max_unpacked_bytes > 0 and total > max_unpacked_bytes:
        raise ReaderError(
            f"unpacks to {_size(total)}, over the {_limit(max_unpacked_bytes)} limit "
            "(set RAG_UNPACKED_MAX_MB)"
        )
