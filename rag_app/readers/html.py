"""HTML reader (lxml.html): converts a page to Markdown-ish text.

``h1``..``h6`` become ``#`` headings, ``p``/``div``/... paragraphs, ``ul``/``ol`` items
``- ``/``1. ``, data tables GFM tables (first row = header), ``pre`` fenced code blocks.
``script``/``style``/``nav``/``head`` and hidden elements are dropped. The charset comes
from a BOM, then ``<meta charset>``, then UTF-8 / GB18030 detection like plain text.

This module decodes and parses the page and picks the way its text is read: the tree rendered by
:class:`rag_app.readers.html_render.MarkdownRenderer`, or, for a page nested too deeply for that,
the tree's plain text or (beyond the parser's own depth limit) the markup with its tags removed.
"""

from __future__ import annotations

import codecs
import logging
import re
from typing import Any

import lxml.etree
import lxml.html

from rag_app.readers._markdown import escape_block_start, one_line
from rag_app.readers.base import ParsedFile, ReaderError
from rag_app.readers.html_render import MarkdownRenderer, plain_text
from rag_app.readers.text import decode_text, normalize_newlines

__all__ = ["declared_charset", "html_to_markdown", "read_html"]

log = logging.getLogger(__name__)

_PARSER = lxml.html.HTMLParser(huge_tree=True)
_META_CHARSET_RE = re.compile(
    rb"""<meta[^>]*?charset\s*=\s*["']?\s*([a-zA-Z0-9_.:\-]+)""", re.IGNORECASE
)
_XML_DECL_RE = re.compile(r"^\s*<\?xml[^>]*\?>")
_GB_ALIASES = frozenset(
    {"gb2312", "gbk", "x-gbk", "gb_2312-80", "gb_2312", "cp936", "ms936", "euc-cn", "gb18030"}
)
_LATIN1_ALIASES = frozenset({"iso-8859-1", "iso8859-1", "latin1", "latin-1", "ascii", "us-ascii"})


def declared_charset(data: bytes) -> str | None:
    """The Python codec name of a ``<meta charset>`` declared in the first 4 KB, if usable.

    GB2312/GBK map to GB18030 and Latin-1/ASCII to cp1252 (as browsers do); an (impossible
    for an ASCII-readable page) UTF-16 declaration and unknown names are ignored.
    """
    match = _META_CHARSET_RE.search(data[:4096])
    if not match:
        return None
    name = match.group(1).decode("ascii", "replace").strip().lower()
    if name in _GB_ALIASES:
        return "gb18030"
    if name in _LATIN1_ALIASES:
        return "cp1252"
    if name.startswith("utf-16") or name.startswith("utf-32"):
        return None
    try:
        return codecs.lookup(name).name
    except LookupError:
        log.debug("unknown declared charset %r", name)
        return None


def read_html(data: bytes, ext: str = ".html") -> ParsedFile:
    """Read an HTML page into Markdown (``fmt="markdown"``)."""
    declared = declared_charset(data)
    raw, encoding = decode_text(data, ext, declared=declared)
    text, title = html_to_markdown(raw)
    if not text:
        raise ReaderError("HTML has no text content")
    metadata: dict[str, object] = {}
    if declared:
        metadata["declared_charset"] = declared
    return ParsedFile(
        text=text,
        doc_type="html",
        fmt="markdown",
        title=title,
        encoding=encoding,
        metadata=metadata,
    )


def html_to_markdown(markup: str) -> tuple[str, str | None]:
    """Convert decoded HTML to ``(markdown_text, title)``."""
    markup = _XML_DECL_RE.sub("", normalize_newlines(markup.replace("\x00", "")), count=1)
    if markup.startswith("\ufeff"):
        markup = markup[1:]
    if not markup.strip():
        return "", None
    try:
        # huge_tree: libxml2 otherwise silently drops content nested deeper than 256
        # levels (old pages with hundreds of unclosed <font>/<div> tags get there).
        root = lxml.html.document_fromstring(markup, parser=_PARSER)
    except (lxml.etree.ParserError, ValueError) as exc:
        if "empty" in str(exc).lower():
            return "", None
        raise ReaderError(f"not a valid HTML file ({exc})") from exc
    renderer = MarkdownRenderer()
    try:
        renderer.walk(root)
        text = renderer.markdown()
    except RecursionError:  # nested deeper than Python's recursion limit (about 1,000)
        if _depth(root) >= _PARSER_DEPTH_LIMIT:
            # libxml2 dropped what lay deeper than its own limit (about 2,000 levels, huge_tree
            # or not): the tree lost text the markup has, so the markup's text is read instead
            log.warning("HTML nested beyond the parser's depth limit; reading its text as is")
            text = _text_by_tags(markup)
        else:
            log.warning("HTML nested too deeply for structure; falling back to plain text")
            text = plain_text(root)
    return text, _title(root) or renderer.first_h1


_HIDDEN_BLOCK_RE = re.compile(r"(?is)<(script|style|template|noscript|head)\b.*?</\1\s*>")
_COMMENT_RE = re.compile(r"(?s)<!--.*?-->")
_BREAK_TAG_RE = re.compile(
    r"(?i)</?(?:p|div|br|li|tr|h[1-6]|table|ul|ol|section|article|pre|blockquote)\b[^>]*>"
)
_TAG_RE = re.compile(r"(?s)<[^>]*>")


def _text_by_tags(markup: str) -> str:
    """The visible text of ``markup`` by removing tags (no tree: any depth), a paragraph per
    block; a fallback for pages the parser cannot hold."""
    import html

    text = _COMMENT_RE.sub("", _HIDDEN_BLOCK_RE.sub("", markup))
    text = _TAG_RE.sub("", _BREAK_TAG_RE.sub("\n", text))
    lines = (one_line(html.unescape(line)) for line in text.split("\n"))
    return "\n\n".join(escape_block_start(line) for line in lines if line)


_PARSER_DEPTH_LIMIT = 2000


def _depth(root: Any) -> int:
    """How deep the parsed tree goes (elements on the deepest path)."""
    depth = deepest = 0
    for event, _ in lxml.etree.iterwalk(root, events=("start", "end")):
        depth += 1 if event == "start" else -1
        deepest = max(deepest, depth)
    return deepest


def _title(root: Any) -> str | None:
    for path in ("head/title", ".//title"):
        element = root.find(path)
        if element is not None:
            title = one_line(element.text_content())
            if title:
                return title
    return None
