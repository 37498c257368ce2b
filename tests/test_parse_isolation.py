"""Bounded parsing: hostile files fail their own file with a reason; the rest of the ingest goes on.

The hostile files are built here, small: a zip bomb (.docx whose document.xml unpacks to 30 MB)
and a paragraph bomb (.docx of 100,000 one-character paragraphs, ~45 KB), with the limits set
low through the settings.
"""

from __future__ import annotations

import io
import re
import zipfile
from pathlib import Path

import pytest

from rag_app import KnowledgeBase
from rag_app.readers import ReaderError
from rag_app.readers.archive import check_archive

GOOD = "# 差旅报销\n\n出差住宿标准为每晚六百元，须在返回后十日内提交报销单。\n"


def docx_with_body(body: bytes) -> bytes:
    """A valid .docx (python-docx's template) whose body is ``body``."""
    from docx import Document

    template = io.BytesIO()
    doc = Document()
    doc.add_paragraph("x")
    doc.save(template)
    out = io.BytesIO()
    with (
        zipfile.ZipFile(template) as src,
        zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as dst,
    ):
        for info in src.infolist():
            data = src.read(info.filename)
            if info.filename == "word/document.xml":
                head = data.partition(b"<w:body>")[0]
                data = head + b"<w:body>" + body + b"</w:body></w:document>"
            dst.writestr(info.filename, data)
    return out.getvalue()


def zip_bomb(megabytes: int) -> bytes:
    return docx_with_body(b"<w:p><w:r><w:t>" + b"A" * (megabytes << 20) + b"</w:t></w:r></w:p>")


def paragraph_bomb(paragraphs: int) -> bytes:
    return docx_with_body("<w:p><w:r><w:t>字</w:t></w:r></w:p>".encode() * paragraphs)


def ingest(tmp_path: Path, embed_model, files: dict[str, bytes], **settings: object):  # type: ignore[no-untyped-def]
    folder = tmp_path / "in"
    folder.mkdir()
    for name, data in files.items():
        (folder / name).write_bytes(data)
    with KnowledgeBase.open(tmp_path / "kb", embed_model=embed_model, **settings) as kb:
        report = kb.ingest([folder])
        docs = {Path(d.rel_path).name: d for d in kb.documents.list()}
    return {Path(f.path).name: f for f in report.files}, docs


@pytest.mark.parametrize("in_process", [False, True])
def test_zip_bomb_fails_by_its_unpacked_size(tmp_path: Path, embed_model, in_process: bool) -> None:  # type: ignore[no-untyped-def]
    bomb = zip_bomb(30)
    assert len(bomb) < 200_000  # the test file stays small
    results, docs = ingest(
        tmp_path,
        embed_model,
        {"bomb.docx": bomb, "good.md": GOOD.encode()},
        unpacked_max_mb=10,
        parse_in_process=in_process,
    )
    assert results["bomb.docx"].status == "FAILED"
    assert results["bomb.docx"].reason is not None
    assert re.fullmatch(
        r"unpacks to 30\.\d MB, over the 10 MB limit \(set RAG_UNPACKED_MAX_MB\)",
        results["bomb.docx"].reason,
    )
    assert docs["bomb.docx"].status == "FAILED"
    assert docs["bomb.docx"].error is not None and "unpacks to" in docs["bomb.docx"].error
    assert results["good.md"].status == "SUCCESS"
    assert results["good.md"].chunks >= 1


def test_paragraph_bomb_fails_by_its_time(tmp_path: Path, embed_model) -> None:  # type: ignore[no-untyped-def]
    bomb = paragraph_bomb(100_000)  # ~6 s to parse and chunk in-process on the 2-core machine
    assert len(bomb) < 100_000
    results, docs = ingest(
        tmp_path,
        embed_model,
        {"a-good.md": GOOD.encode(), "bomb.docx": bomb, "z-good.md": GOOD.encode()},
        parse_timeout=1.0,
    )
    assert results["bomb.docx"].status == "FAILED"
    assert results["bomb.docx"].reason == "parse exceeded 1 s (set RAG_PARSE_TIMEOUT)"
    assert docs["bomb.docx"].status == "FAILED"
    assert results["a-good.md"].status == "SUCCESS"
    assert results["z-good.md"].status == "SUCCESS"


def test_memory_bomb_fails_by_its_memory(tmp_path: Path, embed_model) -> None:  # type: ignore[no-untyped-def]
    results, _ = ingest(
        tmp_path,
        embed_model,
        {"big.docx": zip_bomb(40), "good.md": GOOD.encode()},
        unpacked_max_mb=100,
        parse_max_mb=30,
    )
    reason = results["big.docx"].reason or ""
    assert results["big.docx"].status == "FAILED"
    assert "RAG_PARSE_MAX_MB" in reason, reason
    assert results["good.md"].status == "SUCCESS"


def test_archive_entry_count_is_bounded() -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for i in range(30):
            archive.writestr(f"part{i}.xml", b"")
    check_archive(out.getvalue(), max_unpacked_bytes=1 << 20, max_entries=30)
    with pytest.raises(ReaderError, match="30 entries, over the limit of 29"):
        check_archive(out.getvalue(), max_unpacked_bytes=1 << 20, max_entries=29)


def _children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(c) for c in path.read_text().split()] if path.exists() else []


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="reads /proc (Linux)")
def test_the_parse_server_ignores_ctrl_c_and_dies_with_its_parent() -> None:
    """Ctrl-C to the process group (a notebook kernel stopping) leaves the server quiet and
    serving; when its ingesting process goes away mid-parse, the server and the file's child
    exit within 2 s instead of parsing on for up to RAG_PARSE_TIMEOUT."""
    import os
    import signal
    import time

    from rag_app.ingestion.isolation import ParseJob, _Server

    def job(name: str, data: bytes) -> ParseJob:
        return ParseJob(data=data, filename=name, doc_id="d", tenant="t", source=name,
                        max_file_bytes=0, unpacked_max_bytes=0, ocr=False, chunker="structure",
                        chunk_size=512, chunk_overlap=64, section_level=2)  # fmt: skip

    server = _Server()
    try:
        os.kill(server.process.pid, signal.SIGINT)
        time.sleep(0.2)
        kind, _ = server.parse(job("a.md", GOOD.encode()), timeout=30, max_mb=0)
        assert kind == "ok" and server.process.poll() is None
        server.conn.send((job("bomb.docx", paragraph_bomb(100_000)), 60.0, 0.0))
        deadline = time.monotonic() + 10
        while not (children := _children(server.process.pid)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert children, "the server forked no child for the file"
        server.conn.close()  # the ingesting side is gone
        started = time.monotonic()
        server.process.wait(5)
        assert time.monotonic() - started < 2.0
        time.sleep(0.2)
        assert all(not Path(f"/proc/{c}").exists() or _zombie(c) for c in children)
    finally:
        if server.process.poll() is None:
            server.process.kill()


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"
    except OSError:
        return True


def test_a_sheet_claiming_every_cell_and_a_text_without_newlines_parse_in_the_child() -> None:
    """Two of issue 53's hostile files, small: a 1.6 KB workbook whose sheet claims
    A1:XFD1048576 (the dense read wanted 17 billion cells; a parse child reached 3.8 GB) and a
    2 MB text without a newline, both through the bounded child with its limits: each parses
    to chunks (the first from the cells it has), and the child is reused for the next file."""
    import openpyxl

    from rag_app.config import Settings
    from rag_app.ingestion.isolation import ParseJob, parse_bounded

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "库存"
    for row in (["SKU", "库存"], ["SKU-1023", 120]):
        sheet.append(row)
    sheet["XFD1048576"] = "末尾"
    claim = io.BytesIO()
    book.save(claim)
    line = ("保险期间为一年，自合同生效日起计算。" * 40_000).encode()  # 2.2 MB, one line
    settings = Settings()
    for name, data, needle in (("claim.xlsx", claim.getvalue(), "SKU-1023"),
                               ("line.txt", line, "保险期间")):  # fmt: skip
        job = ParseJob.of(settings, data, name, doc_id="d", tenant="t", source=name)
        chunked = parse_bounded(job, timeout=60, max_mb=1024)
        texts = [node.get_content() for node in chunked.nodes]
        assert texts and any(needle in t for t in texts), name
    assert len(claim.getvalue()) < 10_000
