"""One heading model for every format: the same content gives the same heading paths."""

from __future__ import annotations

import io

import pytest

from rag_app.chunking import chunk_document
from rag_app.readers import read_bytes
from rag_app.readers.text import text_title

TITLE = "星河安心保团体医疗保险条款"
CHAPTERS = [
    (
        "第一章 保险责任",
        [
            "第一条 本合同承担住院医疗费用，每次住院免赔额为五百元。",
            "第二条 门诊费用按百分之八十报销。",
        ],
    ),
    ("第二章 责任免除", ["第三条 既往症导致的费用不予赔付。", "第四条 美容整形费用不予赔付。"]),
]


def as_text() -> bytes:
    parts = [TITLE]
    for chapter, articles in CHAPTERS:
        parts += [chapter, *articles]
    return "\n\n".join(parts).encode("gbk")


def as_markdown() -> bytes:
    parts = [f"# {TITLE}"]
    for chapter, articles in CHAPTERS:
        parts += [f"## {chapter}", *articles]
    return "\n\n".join(parts).encode()


def as_html() -> bytes:
    body = [f"<h1>{TITLE}</h1>"]
    for chapter, articles in CHAPTERS:
        body += [f"<h2>{chapter}</h2>", *(f"<p>{a}</p>" for a in articles)]
    return f"<html><head><meta charset='utf-8'></head><body>{''.join(body)}</body></html>".encode()


def as_docx() -> bytes:
    from docx import Document

    document = Document()
    document.add_paragraph(TITLE, style="Title")
    for chapter, articles in CHAPTERS:
        document.add_heading(chapter, level=1)
        for article in articles:
            document.add_paragraph(article)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def paths(data: bytes, name: str) -> list[list[str]]:
    """The heading path of every chunk, with a budget small enough for one article per chunk."""
    parsed = read_bytes(data, name)
    chunks = chunk_document(
        parsed.text, parsed.fmt, title=parsed.title, chunk_size=30, chunk_overlap=0
    )
    return [c.title_path for c in chunks]


EXPECTED = [
    [TITLE],  # the title and the first chapter's heading, carried together (tiny chunk budget)
    [TITLE, "第一章 保险责任", "第一条"],
    [TITLE, "第一章 保险责任", "第二条"],
    [TITLE, "第二章 责任免除", "第三条"],
    [TITLE, "第二章 责任免除", "第四条"],
]


@pytest.mark.parametrize(
    ("name", "make"),
    [("t.txt", as_text), ("t.md", as_markdown), ("t.html", as_html), ("t.docx", as_docx)],
)
def test_same_content_same_heading_paths_in_every_format(name, make) -> None:
    assert paths(make(), name) == EXPECTED


def test_text_title_line_heads_every_chunk_and_is_no_chunk_of_its_own() -> None:
    parsed = read_bytes(as_text(), "条款.txt")
    assert parsed.title == TITLE
    chunks = chunk_document(
        parsed.text, parsed.fmt, title=parsed.title, chunk_size=30, chunk_overlap=0
    )
    assert all(c.title_path[0] == TITLE for c in chunks)
    assert all(c.text.strip() != TITLE for c in chunks)


@pytest.mark.parametrize(
    ("text", "title"),
    [
        ("员工手册\n\n第一章 总则\n\n正文。", "员工手册"),
        ("员工手册\n第一章 总则\n正文。", "员工手册"),  # a numbered line right after it
        ("第一章 总则\n\n正文。", None),  # numbered: a heading of its own
        ("一、总则\n\n正文。", None),
        ("今天天气很好，我们去公园。\n\n然后回家。", None),  # a sentence
        ("会议纪要\n参会人员为张三和李四。", None),  # the first line of a paragraph
        ("只有一行标题", None),
        ("致全体员工：\n\n正文。", None),  # a lead-in
    ],
)
def test_text_title_rule(text: str, title: str | None) -> None:
    assert text_title(text) == title
