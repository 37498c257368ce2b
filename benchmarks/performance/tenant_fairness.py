"""Another tenant's small upload behind one tenant's big or hostile file (issue 53, item 1).

    .venv/bin/python benchmarks/performance/tenant_fairness.py                    # all four files
    .venv/bin/python benchmarks/performance/tenant_fairness.py --files txt docx --big-wait 300

A fresh KB served by ``rag serve`` with its defaults (one ``rag worker`` process and its express
lane), two editor keys (tenants ``big`` and ``small``). For each file: tenant ``big`` uploads it;
once its job is PROCESSING, tenant ``small`` uploads a one-line Markdown file; timed is the small
upload's 202 → SUCCESS (target ≤ 30 s on 2 cores), then the big file's outcome (SUCCESS, or
FAILED with its reason) up to ``--big-wait`` seconds. The files (generated, not stored):

* ``docx``: a .docx of 600,000 paragraphs
* ``xlsx-claim``: a 1.6 KB .xlsx whose sheet claims A1:XFD1048576
* ``txt``: 19 MB of text without a newline (the upload limit is 20)
* ``xlsx-rows``: a .xlsx of 1,000,000 rows (about 12 MB)

Writes benchmarks/results/tenant_fairness.json (or ``--json PATH``).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # common.py

import httpx  # noqa: E402
from common import RESULTS, machine, write_json  # noqa: E402
from service_clients import env, free_port, log, rag_cmd  # noqa: E402
from service_load import Server  # noqa: E402

TARGET_S = 30.0

_CONTENT_TYPES = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
    '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
    '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
    '<Default Extension="xml" ContentType="application/xml"/>{overrides}</Types>'
)
_RELS = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
    '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
    '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
    'relationships/officeDocument" Target="{target}"/></Relationships>'
)
_MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
_REL_NS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"


def _xlsx(path: Path, dimension: str, rows: Callable[[], Any]) -> None:
    """A minimal workbook of one sheet, its rows streamed (inline strings)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        over = (
            '<Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-'
            'officedocument.spreadsheetml.sheet.main+xml"/><Override PartName="/xl/worksheets/'
            'sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.'
            'spreadsheetml.worksheet+xml"/>'
        )
        z.writestr("[Content_Types].xml", _CONTENT_TYPES.format(overrides=over))
        z.writestr("_rels/.rels", _RELS.format(target="xl/workbook.xml"))
        z.writestr(
            "xl/workbook.xml",
            f'<workbook xmlns="{_MAIN}" xmlns:r="{_REL_NS}"><sheets>'
            '<sheet name="库存明细" sheetId="1" r:id="rId1"/></sheets></workbook>',
        )
        z.writestr(
            "xl/_rels/workbook.xml.rels",
            _RELS.replace('officeDocument" Target', 'worksheet" Target').format(
                target="worksheets/sheet1.xml"
            ),
        )
        with z.open("xl/worksheets/sheet1.xml", "w") as sheet:
            sheet.write(
                f'<worksheet xmlns="{_MAIN}"><dimension ref="{dimension}"/><sheetData>'.encode()
            )
            for chunk in rows():
                sheet.write(chunk.encode())
            sheet.write(b"</sheetData></worksheet>")


def _cell(ref: str, value: str) -> str:
    return f'<c r="{ref}" t="inlineStr"><is><t>{value}</t></is></c>'


def xlsx_claim(path: Path) -> None:
    def rows() -> Any:
        yield f'<row r="1">{_cell("A1", "SKU")}{_cell("B1", "库存")}</row>'
        yield f'<row r="2">{_cell("A2", "SKU-1")}{_cell("B2", "12")}</row>'
        yield f'<row r="1048576">{_cell("XFD1048576", "末尾")}</row>'

    _xlsx(path, "A1:XFD1048576", rows)


def xlsx_rows(path: Path, n: int = 1_000_000) -> None:
    def rows() -> Any:
        yield f'<row r="1">{_cell("A1", "编号")}{_cell("B1", "数量")}</row>'
        for i in range(2, n + 2):
            yield f'<row r="{i}"><c r="A{i}"><v>{i}</v></c><c r="B{i}"><v>{i % 97}</v></c></row>'

    _xlsx(path, f"A1:B{n + 1}", rows)


def docx_paragraphs(path: Path, n: int = 600_000) -> None:
    ns = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        over = (
            '<Override PartName="/word/document.xml" ContentType="application/vnd.'
            'openxmlformats-officedocument.wordprocessingml.document.main+xml"/>'
        )
        z.writestr("[Content_Types].xml", _CONTENT_TYPES.format(overrides=over))
        z.writestr("_rels/.rels", _RELS.format(target="word/document.xml"))
        with z.open("word/document.xml", "w") as doc:
            doc.write(f'<w:document xmlns:w="{ns}"><w:body>'.encode())
            para = "<w:p><w:r><w:t>第{i}段：保险责任说明。</w:t></w:r></w:p>"
            for start in range(0, n, 10_000):
                doc.write("".join(para.format(i=i) for i in range(start, start + 10_000)).encode())
            doc.write(b"</w:body></w:document>")


def txt_one_line(path: Path, mb: int = 19) -> None:
    line = "保险期间为一年，自合同生效日起计算。" * 1000
    with path.open("w", encoding="utf-8") as f:
        while f.tell() < mb * 1024 * 1024:
            f.write(line)


FILES: dict[str, tuple[str, Callable[[Path], None]]] = {
    "docx": ("paragraphs.docx", docx_paragraphs),
    "xlsx-claim": ("claim.xlsx", xlsx_claim),
    "txt": ("one-line.txt", txt_one_line),
    "xlsx-rows": ("rows.xlsx", xlsx_rows),
}


def make_key(kb: Path, tenant: str) -> str:
    out = subprocess.run(
        [*rag_cmd(), "keys", "create", "--tenant", tenant, "--role", "editor", "--kb", str(kb)]
        + ["--name", "fairness", "--json"],
        check=True,
        env=env(),
        capture_output=True,
        text=True,
    )
    return str(json.loads(out.stdout)["key"])


def status(http: httpx.Client, doc_id: str) -> dict[str, Any]:
    body: dict[str, Any] = http.get(f"/api/documents/{doc_id}").json()
    return body


def wait_for(http: httpx.Client, doc_id: str, states: tuple[str, ...], limit: float) -> str:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        state = str(status(http, doc_id)["status"])
        if state in states:
            return state
        time.sleep(0.1)
    return "TIMEOUT"


def upload(http: httpx.Client, path: Path) -> str:
    with path.open("rb") as f:
        response = http.post("/api/documents", files={"file": (path.name, f)}, timeout=120)
    response.raise_for_status()
    return str(response.json()["doc_id"])


def run_file(
    name: str, path: Path, big: httpx.Client, small: httpx.Client, args: argparse.Namespace
) -> dict[str, Any]:
    t0 = time.monotonic()
    big_id = upload(big, path)
    started = wait_for(big, big_id, ("PROCESSING", "SUCCESS", "FAILED"), 120)
    note = path.with_name(f"small-{name}.md")
    note.write_text(f"# 说明\n\n{name} 之后的一行小文件：报销须在三十日内提交。\n")
    t1 = time.monotonic()
    small_id = upload(small, note)
    small_state = wait_for(small, small_id, ("SUCCESS", "FAILED"), args.small_wait)
    small_s = time.monotonic() - t1
    big_busy = status(big, big_id)["status"] == "PROCESSING"
    log(f"{name}: small upload {small_state} in {small_s:.1f} s (big one still busy: {big_busy})")
    big_state = wait_for(big, big_id, ("SUCCESS", "FAILED"), args.big_wait)
    body = status(big, big_id)
    log(f"{name}: big file {big_state} after {time.monotonic() - t0:.0f} s {body.get('error')}")
    for http, doc in ((big, big_id), (small, small_id)):
        http.delete(f"/api/documents/{doc}")
    return {
        "file": name,
        "bytes": path.stat().st_size,
        "big_state_when_small_uploaded": started,
        "small_state": small_state,
        "small_upload_to_success_s": round(small_s, 2),
        "big_still_processing_then": big_busy,
        "big_outcome": big_state,
        "big_error": body.get("error"),
        "big_chunks": body.get("chunk_count"),
        "big_total_s": round(time.monotonic() - t0, 1),
        "meets_target": small_state == "SUCCESS" and small_s <= TARGET_S,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", nargs="+", choices=list(FILES), default=list(FILES))
    parser.add_argument("--small-wait", type=float, default=300.0)
    parser.add_argument("--big-wait", type=float, default=1200.0)
    parser.add_argument("--json", type=Path, default=RESULTS / "tenant_fairness.json")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rag-fair-") as tmp:
        root = Path(tmp)
        kb = root / "kb"
        keys = {tenant: make_key(kb, tenant) for tenant in ("big", "small")}
        server = Server(kb, free_port(), 1, root / "serve.log")
        rows = []
        try:
            server.wait_ready()
            time.sleep(5)  # the worker loads its model
            clients = {
                t: httpx.Client(
                    base_url=server.base_url, headers={"Authorization": f"Bearer {k}"}, timeout=30
                )
                for t, k in keys.items()
            }
            for name in args.files:
                filename, make = FILES[name]
                path = root / filename
                make(path)
                rows.append(run_file(name, path, clients["big"], clients["small"], args))
                path.unlink()
        finally:
            server.stop()
            errors = [
                line
                for line in (root / "serve.log").read_text(errors="replace").splitlines()
                if "Traceback" in line or " 500 " in line
            ]
    write_json(
        args.json,
        {
            "machine": machine(),
            "target_s": TARGET_S,
            "files": rows,
            "server_log_tracebacks_or_500": len(errors),
        },
    )
    log(f"wrote {args.json}")


if __name__ == "__main__":
    main()
