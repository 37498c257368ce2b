"""Plain-text and Markdown reader: encoding detection, binary rejection, newline normalization.

Decoding order (first that works wins):

1. a byte-order mark: UTF-32 LE/BE, UTF-8-SIG, UTF-16 LE/BE;
2. a declared charset (only HTML passes one, from ``<meta charset>``);
3. strict UTF-8;
4. UTF-16 without BOM, only when the NUL bytes clearly sit at alternate positions;
5. strict GB18030 (a superset of GB2312/GBK);
6. charset-normalizer's best guess, as a last resort.

Binary content is rejected before decoding (known magic bytes, NUL bytes, too many
control characters) and checked again on the decoded text.
"""

from __future__ import annotations

import codecs
import logging
import re
from collections.abc import Callable

from rag_app.readers.base import ParsedFile, ReaderError

__all__ = [
    "decode_text",
    "markdown_title",
    "normalize_newlines",
    "read_markdown",
    "read_text",
    "sniff_binary",
    "text_title",
]

log = logging.getLogger(__name__)

#: Share of control characters (other than \t \n \r \f) above which content is "binary".
CONTROL_CHAR_LIMIT = 0.05

# (magic prefix, offset, human name). Checked in order; longer/more specific first.
_MAGIC: tuple[tuple[bytes, int, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", 0, "PNG image"),
    (b"\xff\xd8\xff", 0, "JPEG image"),
    (b"GIF87a", 0, "GIF image"),
    (b"GIF89a", 0, "GIF image"),
    (b"II*\x00", 0, "TIFF image"),
    (b"MM\x00*", 0, "TIFF image"),
    (b"%PDF-", 0, "PDF document"),
    (b"PK\x03\x04", 0, "ZIP archive or Office document"),
    (b"PK\x05\x06", 0, "ZIP archive"),
    (b"PK\x07\x08", 0, "ZIP archive"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", 0, "legacy Office document (.doc/.xls/.ppt)"),
    (b"\x7fELF", 0, "ELF executable"),
    (b"\x1f\x8b", 0, "gzip archive"),
    (b"\xfd7zXZ\x00", 0, "xz archive"),
    (b"7z\xbc\xaf\x27\x1c", 0, "7-Zip archive"),
    (b"Rar!\x1a\x07", 0, "RAR archive"),
    (b"\x28\xb5\x2f\xfd", 0, "zstd archive"),
    (b"SQLite format 3\x00", 0, "SQLite database"),
    (b"\x00asm", 0, "WebAssembly binary"),
    (b"\xca\xfe\xba\xbe", 0, "Java class / Mach-O binary"),
    (b"\xcf\xfa\xed\xfe", 0, "Mach-O binary"),
    (b"\xce\xfa\xed\xfe", 0, "Mach-O binary"),
    (b"OggS\x00", 0, "Ogg media"),
    (b"fLaC\x00", 0, "FLAC audio"),
    (b"ID3\x02\x00", 0, "MP3 audio"),
    (b"ID3\x03\x00", 0, "MP3 audio"),
    (b"ID3\x04\x00", 0, "MP3 audio"),
    (b"ftyp", 4, "MP4/QuickTime media"),
)

_BOMS: tuple[tuple[bytes, str], ...] = (
    # UTF-32 first: its LE BOM starts with the UTF-16 LE BOM.
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)

# Bytes that are control characters in every ASCII-compatible encoding we accept
# (UTF-8 and GB18030 never use them inside multi-byte sequences).
_CONTROL_BYTES = bytes(b for b in range(0x20) if b not in b"\t\n\r\f") + b"\x7f"
_CONTROL_CHARS_RE = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f]")
_NEWLINES_RE = re.compile(r"\r\n?")


def sniff_binary(data: bytes) -> str | None:
    """Return a human name (e.g. ``"PNG image"``) if ``data`` starts with a known binary magic."""
    if data[:4] == b"RIFF" and data[8:12] in (b"WEBP", b"WAVE", b"AVI "):
        return {b"WEBP": "WebP image", b"WAVE": "WAV audio", b"AVI ": "AVI video"}[data[8:12]]
    for magic, offset, name in _MAGIC:
        if data[offset : offset + len(magic)] == magic:
            return name
    return None


def require_zip_package(data: bytes, ext: str, legacy: str) -> None:
    """Refuse ``data`` offered as an Office Open XML ``ext`` file (.docx/.xlsx/.pptx, a ZIP
    package) when it starts with another format's magic; ``legacy`` says what a legacy Office
    file of that kind is and what to do with it ("a legacy .doc file; save it as .docx")."""
    kind = sniff_binary(data)
    if kind and not kind.startswith("ZIP"):
        if kind.startswith("legacy Office"):
            raise ReaderError(f"not a valid {ext} file (looks like {legacy})")
        raise ReaderError(f"not a valid {ext} file (looks like {kind})")


def normalize_newlines(text: str) -> str:
    """Turn ``\\r\\n`` and lone ``\\r`` into ``\\n``."""
    return _NEWLINES_RE.sub("\n", text)


def _binary_error(ext: str, reason: str) -> ReaderError:
    return ReaderError(f"binary content in a {ext} file ({reason})")


def _control_share(text: str) -> float:
    if not text:
        return 0.0
    return len(_CONTROL_CHARS_RE.findall(text)) / len(text)


def _check_decoded(text: str, ext: str) -> None:
    if "\x00" in text:
        raise _binary_error(ext, "contains NUL characters")
    if _control_share(text) > CONTROL_CHAR_LIMIT:
        raise _binary_error(ext, "too many control characters")


def _looks_like_utf16(data: bytes) -> str | None:
    """Return ``"utf-16-le"``/``"utf-16-be"`` when NULs clearly sit at alternate positions."""
    if len(data) < 2 or len(data) % 2:
        return None
    nul_even = data[0::2].count(0)
    nul_odd = data[1::2].count(0)
    # ASCII in UTF-16 LE is "A\x00": NULs at odd offsets; BE is "\x00A": even offsets.
    # The other parity may have a few NULs (e.g. U+4E00 is "\x00\x4e" in LE).
    if nul_odd and nul_even * 4 <= nul_odd:
        return "utf-16-le"
    if nul_even and nul_odd * 4 <= nul_even:
        return "utf-16-be"
    return None


def _try_decode(data: bytes, encoding: str) -> str | None:
    try:
        return data.decode(encoding)
    except (UnicodeDecodeError, LookupError):
        return None


def decode_text(data: bytes, ext: str = ".txt", *, declared: str | None = None) -> tuple[str, str]:
    """Decode ``data`` to ``(text, encoding)`` or raise :class:`ReaderError`.

    ``ext`` (e.g. ``".txt"``) only shapes error messages. ``declared`` is a charset the
    document declares about itself (HTML ``<meta charset>``); it is tried after any BOM.
    The returned text is not newline-normalized yet.
    """
    kind = sniff_binary(data)
    if kind:
        raise _binary_error(ext, f"looks like {kind}")

    for bom, encoding in _BOMS:
        if data.startswith(bom):
            body = data if encoding == "utf-8-sig" else data[len(bom) :]
            text = _try_decode(body, encoding)
            if text is not None:
                _check_decoded(text, ext)
                return text, encoding
            log.debug("BOM says %s but the data does not decode; trying others", encoding)
            break

    if b"\x00" in data:
        utf16 = _looks_like_utf16(data)
        if utf16:
            text = _try_decode(data, utf16)
            if text is not None:
                _check_decoded(text, ext)
                return text, utf16
        raise _binary_error(ext, "contains NUL bytes")

    controls = sum(data.count(b) for b in _CONTROL_BYTES)
    if controls > CONTROL_CHAR_LIMIT * len(data):
        raise _binary_error(ext, "too many control characters")

    candidates = ["utf-8", "gb18030"]
    if declared:
        candidates.insert(0, declared)
    for encoding in candidates:
        text = _try_decode(data, encoding)
        if text is not None:
            _check_decoded(text, ext)
            return text, encoding

    guessed = _charset_normalizer_guess(data)
    if guessed is not None:
        text, encoding = guessed
        _check_decoded(text, ext)
        return text, encoding
    raise ReaderError("cannot decode text (tried UTF-8, GB18030, UTF-16)")


def _charset_normalizer_guess(data: bytes) -> tuple[str, str] | None:
    try:
        from charset_normalizer import from_bytes
    except ImportError:  # pragma: no cover - charset-normalizer is a dependency
        return None
    try:
        best = from_bytes(data).best()
    except Exception as exc:  # noqa: BLE001 - a guesser failure just means "no guess"
        log.debug("charset-normalizer failed: %s", exc)
        return None
    if best is None:
        return None
    encoding = str(best.encoding)
    text = _try_decode(data, encoding)
    if text is None or not text.strip():
        # e.g. b"\xff" * n decoded as NBSPs: a "guess" that found no real text.
        return None
    log.debug("charset-normalizer guessed %s", encoding)
    return text, encoding


def _clean(text: str) -> str:
    text = normalize_newlines(text)
    if text.startswith("\ufeff"):
        text = text[1:]
    return text.rstrip()


_FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_ATX_H1_RE = re.compile(r"^ {0,3}#(?:[ \t]+(.*?))?[ \t]*$")
_SETEXT_H1_RE = re.compile(r"^ {0,3}=+[ \t]*$")
_CLOSING_HASHES_RE = re.compile(r"(?:^|[ \t]+)#+[ \t]*$")


def markdown_title(text: str) -> str | None:
    """The text of the first level-1 heading (ATX ``# x`` or setext ``x\\n===``), else None.

    Headings inside fenced code blocks are ignored.
    """
    fence: str | None = None
    previous = ""
    for line in text.split("\n"):
        match = _FENCE_RE.match(line)
        if fence is not None:
            if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence):
                fence = None
            previous = ""
            continue
        if match:
            fence = match.group(1)
            previous = ""
            continue
        atx = _ATX_H1_RE.match(line)
        if atx:
            title = _CLOSING_HASHES_RE.sub("", atx.group(1) or "").strip()
            if title:
                return title
        elif _SETEXT_H1_RE.match(line) and previous.strip() and not previous.startswith("    "):
            return previous.strip()
        previous = line
    return None


def text_title(text: str) -> str | None:
    """The title line of a plain-text document, else ``None``.

    The first non-empty line is the title when it reads like one (short, no sentence punctuation,
    see :func:`rag_app.chunking.headings.is_title_like`), is not itself numbered (第一章, 第一条,
    一、 …: those are headings of their own) and more text follows it, after a blank line or
    directly as a numbered line. It then roots every chunk's heading path, as a Markdown ``# ``
    title does.
    """
    from rag_app.chunking.headings import is_title_like, match_marker

    lines = text.lstrip("\n").split("\n")
    first = lines[0].strip()
    if not is_title_like(first) or match_marker(first) is not None or len(lines) < 2:
        return None
    rest = [line for line in lines[1:] if line.strip()]
    if not rest:
        return None
    if lines[1].strip() and match_marker(lines[1]) is None:
        return None  # the first line of a paragraph, not a title
    return first


def _read_plain(
    data: bytes, ext: str, fmt: str, title_of: Callable[[str], str | None]
) -> ParsedFile:
    """A decoded, cleaned text file of format ``fmt`` (its doc_type too), titled by ``title_of``."""
    raw, encoding = decode_text(data, ext)
    text = _clean(raw)
    if not text.strip():
        raise ReaderError("empty file")
    return ParsedFile(
        text=text, doc_type=fmt, fmt=fmt, title=title_of(text), encoding=encoding, metadata={}
    )


def read_text(data: bytes, ext: str = ".txt") -> ParsedFile:
    """Read a plain-text file (``fmt="text"``; title: :func:`text_title`)."""
    return _read_plain(data, ext, "text", text_title)


def read_markdown(data: bytes, ext: str = ".md") -> ParsedFile:
    """Read a Markdown file (``fmt="markdown"``, title = first H1)."""
    return _read_plain(data, ext, "markdown", markdown_title)
