"""PDF parsing speed and memory: pages per second on a text PDF, peak RSS on a 300-page one.

    .venv/bin/python benchmarks/performance/pdf_parse.py [--repeat 3]

Typesets two Chinese PDFs with reportlab (the dev extra): 50 and 300 A4 pages of wrapped
paragraphs in the built-in STSong-Light font, a ruled table of 12 rows with wrapping cells every
page, a running header and a "第 N 页" footer. Each measurement runs in a fresh process (the
median of ``--repeat``):

* ``reader``: ``rag_app.readers.read_bytes`` (layout, tables, running lines, headings);
* ``pdfium_chars``: only reading every page's characters and rulings (``pdf_chars.read_page``);
* ``pypdf_text``: ``pypdf``'s ``extract_text`` on every page (what the reader used before);
* peak RSS (``VmHWM``) of the reader's process, and its RSS after the imports, before the
  file is read: the difference is what parsing the file costs.

Writes benchmarks/results/pdf_parse.json.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # common.py

from common import ROOT, write_result

PARA = (
    "本合同所称进行性脊肌萎缩症是指一组以脊髓前角细胞和脑干运动神经元变性为特征的遗传性疾病，"
    "被保险人须经专科医生确诊。保险公司按照约定给付保险金，保险期间内发生保险事故的，"
    "受益人可以向保险公司申请理赔，并提供相关证明和资料。"
)

_CHILD = r"""
import json, sys, time
mode, path = sys.argv[1], sys.argv[2]
def status_mb(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key):
                return int(line.split()[1]) / 1024
def rss_mb():
    return status_mb("VmRSS:")
if mode == "reader":
    from rag_app.readers import read_bytes
    import rag_app.readers.pdf, rag_app.readers.pdf_structure  # noqa
elif mode == "pdfium_chars":
    import pypdfium2
    from rag_app.readers.pdf_chars import read_page
else:
    import pypdf
data = open(path, "rb").read()
before = rss_mb()
t0 = time.perf_counter()
if mode == "reader":
    parsed = read_bytes(data, "bench.pdf")
    pages, chars = parsed.metadata["pages"], len(parsed.text)
elif mode == "pdfium_chars":
    doc = pypdfium2.PdfDocument(data)
    pages = len(doc)
    chars = sum(len(read_page(doc, i, max_chars=10**6, max_segments=10**6).chars) for i in range(pages))
else:
    reader = pypdf.PdfReader(__import__("io").BytesIO(data))
    pages = len(reader.pages)
    chars = sum(len(p.extract_text() or "") for p in reader.pages)
seconds = time.perf_counter() - t0
peak = status_mb("VmHWM:")  # ru_maxrss would carry the parent's peak over the exec
print(json.dumps({"seconds": seconds, "pages": pages, "chars": chars, "rss_before_mb": before,
                  "peak_rss_mb": peak}))
"""


def make_pdf(pages: int) -> bytes:
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.cidfonts import UnicodeCIDFont
    from reportlab.pdfgen import canvas

    pdfmetrics.registerFont(UnicodeCIDFont("STSong-Light"))
    font = "STSong-Light"
    buffer = io.BytesIO()
    c = canvas.Canvas(buffer, pagesize=(595, 842))
    width = 595 - 144
    per_line = int(width // 10.5)
    text = PARA * 40
    at = 0
    for page in range(1, pages + 1):
        c.setFont(font, 9)
        c.drawString(72, 802, "某某人寿保险股份有限公司 重大疾病保险条款")
        c.drawCentredString(297, 36, f"第 {page} 页")
        y = 770
        c.setFont(font, 10.5)
        for _ in range(22):  # wrapped paragraph lines
            c.drawString(72, y, text[at : at + per_line])
            at = (at + per_line) % (len(PARA) * 20)
            y -= 16
        y -= 10
        c.setFont(font, 9)
        for row in range(12):  # a ruled table, the third column wrapping over two lines
            cells = [f"{20 + row}岁", f"{1000 * (row + 1)}", PARA[:24], PARA[24:48]]
            xs = [72, 142, 222, 522]
            c.rect(xs[0], y - 26, 450, 26)
            for x in xs[1:-1]:
                c.line(x, y, x, y - 26)
            c.drawString(xs[0] + 3, y - 12, cells[0])
            c.drawString(xs[1] + 3, y - 12, cells[1])
            c.drawString(xs[2] + 3, y - 12, cells[2])
            c.drawString(xs[2] + 3, y - 23, cells[3])
            y -= 26
        c.showPage()
    c.save()
    return buffer.getvalue()


def run(mode: str, path: Path, repeat: int) -> dict[str, float]:
    runs = []
    for _ in range(repeat):
        out = subprocess.run(
            [sys.executable, "-c", _CHILD, mode, str(path)],
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
        )
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    seconds = statistics.median(r["seconds"] for r in runs)
    pages = runs[0]["pages"]
    return {
        "pages": pages,
        "seconds_median": round(seconds, 3),
        "pages_per_s": round(pages / seconds, 1),
        "chars": runs[0]["chars"],
        "rss_before_mb": round(statistics.median(r["rss_before_mb"] for r in runs), 1),
        "peak_rss_mb": round(statistics.median(r["peak_rss_mb"] for r in runs), 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    results: dict[str, dict[str, dict[str, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for pages in (50, 300):
            path = Path(tmp) / f"text_{pages}.pdf"
            path.write_bytes(make_pdf(pages))
            results[f"text_{pages}_pages"] = {
                mode: run(mode, path, args.repeat)
                for mode in ("reader", "pdfium_chars", "pypdf_text")
            }
            for mode, row in results[f"text_{pages}_pages"].items():
                print(f"{pages:4d} pages {mode:13s} {row['pages_per_s']:7.1f} pages/s "
                      f"peak RSS {row['peak_rss_mb']:.0f} MB (after imports {row['rss_before_mb']:.0f})")  # fmt: skip
    write_result(
        "pdf_parse",
        {
            "what": "PDF parse speed (pages/s) and peak RSS, each run in a fresh process; "
            "median of --repeat runs; text PDFs typeset by this script (wrapped Chinese "
            "paragraphs, a 12-row ruled table per page, running header and page footer)",
            "repeat": args.repeat,
            # the machine is shared: its load during the run, for reading the figures
            "load_average_1_5_15": [round(v, 2) for v in os.getloadavg()],
            "results": results,
        },
    )


if __name__ == "__main__":
    main()
