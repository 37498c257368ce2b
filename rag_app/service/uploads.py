"""Upload safety: file-name sanitizing, extension and content sniffing, bounded reads."""

from __future__ import annotations

import re
import unicodedata
from pathlib import PurePosixPath, PureWindowsPath

from rag_app.readers import SUPPORTED_EXTENSIONS
from rag_app.readers.legacy_office import OLE2_MAGIC, RTF_MAGIC, ZIP_MAGIC
from rag_app.readers.text import sniff_binary

MAX_NAME_CHARS = 160
MAX_NAME_BYTES = 200  # UTF-8; file systems allow 255 bytes per name (85 Chinese characters)
_CONTROL = ("Cc", "Zl", "Zp")  # C0/C1 controls, line and paragraph separators
_UNSAFE = re.compile(r'[\x00-\x1f\x7f<>:"/\\|?*]')


class UploadRejected(ValueError):
    """The upload is refused; ``status_code`` is the HTTP status to answer with."""

    def __init__(self, status_code: int, detail: str) -> None:
        super().__init__(detail)
        self.status_code = status_code
        self.detail = detail


def sanitize_filename(raw: str | None) -> str:
    """The base name only (no directories, no traversal), without control or reserved chars.

    >>> sanitize_filename("../../etc/passwd.md")
    'passwd.md'
    >>> sanitize_filename("C:\\\\docs\\\\制度 v2.md")
    '制度 v2.md'
    >>> sanitize_filename("invoice\u202efdp.exe")
    'invoicefdp.exe'
    """
    name = unicodedata.normalize("NFC", raw or "")
    # invisible format characters (bidi overrides such as U+202E, which shows "evil\u202egpj.exe"
    # as "evilexe.jpg", isolates, zero-width marks) go; other controls and line separators become _
    name = "".join(
        "_" if unicodedata.category(c) in _CONTROL else c
        for c in name
        if unicodedata.category(c) != "Cf"
    )
    name = PureWindowsPath(PurePosixPath(name).name).name  # strip both separator styles
    name = _UNSAFE.sub("_", name).strip().lstrip(".").strip()
    if len(name) > MAX_NAME_CHARS or len(name.encode()) > MAX_NAME_BYTES:
        stem, dot, ext = name.rpartition(".")
        ext = "." + ext if dot and len(ext) <= 10 else ""
        stem = stem if dot else name
        stem = stem[: MAX_NAME_CHARS - len(ext)]
        room = MAX_NAME_BYTES - len(ext.encode())
        name = stem.encode()[:room].decode("utf-8", "ignore").rstrip() + ext
    if not name or name in {".", ".."}:
        raise UploadRejected(422, "the upload has no usable file name")
    return name


def check_content(name: str, data: bytes) -> str:
    """Extension allowed and content consistent with it; returns the document type."""
    ext = ("." + name.rsplit(".", 1)[1].lower()) if "." in name else ""
    doc_type = SUPPORTED_EXTENSIONS.get(ext)
    if doc_type is None:
        supported = ", ".join(sorted(SUPPORTED_EXTENSIONS))
        raise UploadRejected(415, f"unsupported file type '{ext or name}' (supported: {supported})")
    if not data.strip():
        raise UploadRejected(422, "empty file")
    head = data[:8192]
    if doc_type == "pdf":
        if b"%PDF-" not in data[:1024]:
            raise UploadRejected(415, "content is not a PDF (no %PDF- header)")
    elif doc_type in ("docx", "xlsx", "pptx"):
        if not data.startswith(b"PK\x03\x04"):
            raise UploadRejected(415, f"content is not a {ext} (not a ZIP/OOXML package)")
    elif doc_type in ("doc", "ppt"):
        # Office 97-2003 (OLE2); also a .docx/.pptx saved under the old name, and RTF as .doc
        allowed = (
            (OLE2_MAGIC, ZIP_MAGIC, RTF_MAGIC) if doc_type == "doc" else (OLE2_MAGIC, ZIP_MAGIC)
        )
        if not data.startswith(allowed):
            raise UploadRejected(415, f"content is not a {ext} (not an OLE2 Office 97-2003 file)")
    elif doc_type == "xls":
        if not data.startswith(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"):
            raise UploadRejected(415, "content is not a .xls (not an OLE2/BIFF workbook)")
    else:
        reason = sniff_binary(head)
        if reason is None and not head.startswith((b"\xff\xfe", b"\xfe\xff")):  # UTF-16 BOMs
            control = sum(1 for b in head if b < 0x20 and b not in b"\t\n\r\f")
            if b"\x00" in head:
                reason = "NUL bytes"
            elif control > len(head) * 0.05:
                reason = "control bytes"
        if reason:
            raise UploadRejected(
                415, f"content of '{name}' looks binary ({reason}), not {ext} text"
            )
    return doc_type
