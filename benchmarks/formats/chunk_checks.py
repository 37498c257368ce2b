"""What a reader left in the chunks of one KB: running headers, page footers, words cut by a line
break, and the documents' titles.

* header: a chunk holding :data:`render_pdf.HEADER_MARK` (printed in every running header, never
  in the documents' text);
* footer: a chunk matching "第 N 页" (arabic page numbers: the dev documents have none);
* cut words: a line break between two CJK ideographs where the Markdown original has the same
  characters (up to 4 on each side) on one line, i.e. a break the source does not have (a PDF's
  wrapped line or wrapped table cell). Counted as breaks and as chunks with at least one;
* titles: documents whose stored title equals the Markdown's ``# `` heading (whitespace aside).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from render_html import title_of
from render_pdf import FOOTER_RE, HEADER_MARK

from rag_app.eval.metrics import squash

_BREAK = re.compile(r"([\u4e00-\u9fff]{1,4})[ \t]*\n[ \t]*([\u4e00-\u9fff]{1,4})")
_FOOTER = re.compile(FOOTER_RE)


def source_lines(markdown: str) -> str:
    """The original's lines, each without whitespace, joined by NUL (a window found in it lies
    within one line)."""
    return "\0".join(squash(line) for line in markdown.splitlines())


def cut_words(text: str, source: str) -> list[str]:
    """Line breaks in ``text`` that split characters adjacent on one line of ``source``."""
    found = []
    for m in _BREAK.finditer(text):
        if m.group(1) + m.group(2) in source:
            found.append(f"{m.group(1)}⏎{m.group(2)}")
    return found


def scan(kb: Any, folder: Path, originals: Path, rel_md: dict[str, str]) -> dict[str, Any]:
    """Chunk checks over every document of ``kb`` (ingested from ``folder``); ``rel_md`` maps a
    rendered file's relative path to its Markdown original's (under ``originals``)."""
    out: dict[str, Any] = {"documents": 0, "failed_documents": 0, "chunks": 0,
                           "chunks_with_header": 0, "chunks_with_page_footer": 0,
                           "chunks_with_cut_word": 0, "cut_words": 0, "title_matches": 0,
                           "examples": {"header": [], "footer": [], "cut_word": [], "title": []}}  # fmt: skip
    ex = out["examples"]
    mark = squash(HEADER_MARK)
    parts = kb.documents  # a part with list/chunks since d15670c, a method before it
    listing = parts.list(None) if hasattr(parts, "list") else parts(None)
    chunks_of = parts.chunks if hasattr(parts, "chunks") else kb.chunks
    for doc in listing:
        out["documents"] += 1
        if doc.status != "SUCCESS":
            out["failed_documents"] += 1
            continue
        rel = Path(doc.source).resolve().relative_to(folder.resolve()).as_posix()
        markdown = (originals / rel_md[rel]).read_text(encoding="utf-8")
        source = source_lines(markdown)
        want = title_of(markdown, Path(rel).stem)
        if squash(doc.title or "") == squash(want):
            out["title_matches"] += 1
        elif len(ex["title"]) < 5:
            ex["title"].append({"doc": rel, "title": doc.title, "expected": want})
        for ch in chunks_of(doc.doc_id):
            out["chunks"] += 1
            text = ch.text
            if mark in squash(text):
                out["chunks_with_header"] += 1
                if len(ex["header"]) < 3:
                    ex["header"].append({"doc": rel, "chunk": ch.chunk_index, "text": text[:160]})
            footer = _FOOTER.search(text)
            if footer:
                out["chunks_with_page_footer"] += 1
                if len(ex["footer"]) < 3:
                    at = footer.start()
                    ex["footer"].append({"doc": rel, "text": text[max(0, at - 60) : at + 20]})
            cuts = cut_words(text, source)
            if cuts:
                out["chunks_with_cut_word"] += 1
                out["cut_words"] += len(cuts)
                if len(ex["cut_word"]) < 8:
                    ex["cut_word"].append({"doc": rel, "cuts": cuts[:4]})
    return out
