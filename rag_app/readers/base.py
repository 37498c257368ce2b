"""Shared types for the document readers: :class:`ReaderError` and :class:`ParsedFile`."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["ParsedFile", "ReaderError"]

_MAX_MESSAGE_CHARS = 300


class ReaderError(Exception):
    """A file that can't be read.

    ``str(exc)`` is always ONE clear line meant for the user, e.g. ``"empty file"``,
    ``"binary content in a .txt file (looks like PNG image)"`` or
    ``"PDF has no extractable text (no text layer, no readable images)"``. Whitespace (including
    newlines coming from wrapped library exceptions) is collapsed and overly long
    messages are shortened.
    """

    def __init__(self, message: str) -> None:
        line = " ".join(str(message).split())
        if len(line) > _MAX_MESSAGE_CHARS:
            line = line[: _MAX_MESSAGE_CHARS - 3].rstrip() + "..."
        super().__init__(line)

    @property
    def message(self) -> str:
        return str(self.args[0]) if self.args else ""


@dataclass
class ParsedFile:
    """The result of reading one document.

    Attributes:
        text: the document text; newlines normalized to ``\\n``; NUL-free.
        doc_type: the source format: ``"markdown" | "text" | "pdf" | "docx" | "html" | "xlsx" |
            "xls" | "csv" | "pptx"``.
        fmt: how the chunker should parse ``text``: ``"markdown"`` (md, docx, html, xlsx, xls,
            csv, pptx) or ``"text"`` (txt, pdf).
        title: the document title if one was found, else ``None``.
        encoding: the detected encoding for text formats (txt, md, html, csv), else ``None``.
        metadata: JSON-serializable extras, e.g. ``{"pages": 3, "page_starts": [0, 812, 1650]}``.
    """

    text: str
    doc_type: str
    fmt: str
    title: str | None
    encoding: str | None
    metadata: dict[str, object] = field(default_factory=dict)
