"""What the format benchmark renders and asks: a deterministic subset of a dev set, its questions
(plus generated "《X》第N条规定了什么？" article look-ups for the statutes), and the rendered
copies of its documents in each format, cached outside the repository.

Subset: the questions in ``sha1(id)`` order; a question is taken when its gold documents fit the
byte budget (their documents added), until ``questions`` are taken; then ``distractors`` more
documents (in ``sha1(path)`` order, within the budget too). Asked: every answerable question
whose gold documents all lie in the subset.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # common.py

from common import load_questions  # noqa: E402
from render_docx import ARTICLE, cn_number, to_docx  # noqa: E402
from render_html import LAYOUTS, title_of, to_html  # noqa: E402

from rag_app.eval.dataset import QAItem  # noqa: E402

OFFICE_PDF = "pdf-office"  # the Word rendering saved as PDF by LibreOffice (an office suite's PDF)
# html: render_html.py's page (ruled layout) as a file; doc: the Word rendering saved as Word
# 97-2003 by LibreOffice (read back through LibreOffice by the engine)
FORMATS = ["md", *LAYOUTS, OFFICE_PDF, "docx", "doc", "html"]
SUFFIX = {"md": ".md", "docx": ".docx", "doc": ".doc", "html": ".html"}
CACHE = Path(os.environ.get("RAG_FORMATS_CACHE", "/tmp/rag-formats-cache"))
RENDERERS = ["render_html.py", "render_pdf.py", "render_docx.py", "corpus.py"]


def sha(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()


@dataclass
class Subset:
    name: str
    docs_dir: Path
    docs: list[str]  # relative paths of the Markdown originals
    items: list[QAItem]
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def tag(self) -> str:
        """Names the rendered copies: the documents and the renderers' code."""
        here = Path(__file__).parent
        code = "".join((here / f).read_text() for f in RENDERERS)
        return sha(json.dumps(self.docs) + code)[:10]


def choose(name: str, path: Path, questions: int, distractors: int, budget: int) -> Subset:
    docs_dir = path / "docs"
    size = {p.relative_to(docs_dir).as_posix(): p.stat().st_size
            for p in docs_dir.rglob("*.md")}  # fmt: skip
    every = [q for q in load_questions(path) if q.answerable and q.gold_docs]
    every = [q for q in every if all(d in size for d in q.gold_docs)]
    kept: set[str] = set()
    taken = 0
    for q in sorted(every, key=lambda q: sha(q.id)):
        if taken >= questions:
            break
        extra = set(q.gold_docs) - kept
        if sum(size[d] for d in kept | extra) > budget:
            continue
        kept |= extra
        taken += 1
    added = 0
    for d in sorted(set(size) - kept, key=sha):
        if added >= distractors:
            break
        if sum(size[k] for k in kept) + size[d] <= budget:
            kept.add(d)
            added += 1
    items = [q for q in every if set(q.gold_docs) <= kept]
    settings = {"questions_taken_in_sha1_order": taken, "distractor_docs": added,
                "byte_budget": budget, "documents": len(kept),
                "bytes": sum(size[k] for k in kept)}  # fmt: skip
    return Subset(name, docs_dir, sorted(kept), items, settings)


def article_lookups(subset: Subset, titles: dict[str, str], n: int, seed: int = 2) -> list[QAItem]:
    """ "《title》第N条规定了什么？" for ``n`` random articles of the subset's documents; the gold
    span is the article's number and the first 40 characters of its text."""
    found: list[tuple[str, str, str]] = []
    for rel in subset.docs:
        for line in (subset.docs_dir / rel).read_text(encoding="utf-8").splitlines():
            m = ARTICLE.match(line.strip())
            if m and cn_number(m.group(1)) and (m.group(2) or "").strip():
                found.append((rel, f"第{m.group(1)}条", re.sub(r"\s+", "", m.group(2))[:40]))
    picked = random.Random(seed).sample(found, min(n, len(found)))
    return [
        QAItem(
            id=f"article-{i:03d}",
            question=f"《{titles.get(rel, Path(rel).stem)}》{label}规定了什么？",
            gold_docs=[rel],
            gold_spans=[label + text],
            category="article_number_question",
            answer_match="reference",
        )  # fmt: skip
        for i, (rel, label, text) in enumerate(picked)
    ]


def law_titles(path: Path) -> dict[str, str]:
    manifest = path / "corpus_manifest.jsonl"
    if not manifest.exists():
        return {}
    recs = [json.loads(x) for x in manifest.read_text(encoding="utf-8").splitlines() if x]
    return {r["doc_path"].removeprefix("corpus/"): r["title"] for r in recs}


def target_name(rel: str, fmt: str) -> str:
    return rel if fmt == "md" else str(Path(rel).with_suffix(SUFFIX.get(fmt, ".pdf")))


def _office_pdfs(subset: Subset, out: Path, to: str = "pdf") -> dict[str, Any]:
    """Each document as render_docx.py writes it (automatic numbering, Word table with its
    header row repeated, running header and "第 N 页" footer), converted by LibreOffice
    headless (``make office-deps``) to PDF (``to="doc"``: to Word 97-2003), one conversion per
    folder."""
    import subprocess
    import tempfile

    from pypdf import PdfReader

    soffice = shutil.which("soffice") or shutil.which("libreoffice")
    if soffice is None:
        raise SystemExit("skipped: LibreOffice missing (make office-deps)")
    with tempfile.TemporaryDirectory(prefix="office-pdf-") as staging:
        folders: dict[Path, list[str]] = {}
        for rel in subset.docs:
            md = (subset.docs_dir / rel).read_text(encoding="utf-8")
            docx = Path(staging) / "docx" / target_name(rel, "docx")
            to_docx(md, title_of(md, Path(rel).stem), docx)
            folders.setdefault(Path(rel).parent, []).append(str(docx))
        for folder, files in folders.items():
            (out / folder).mkdir(parents=True, exist_ok=True)
            subprocess.run(
                [soffice, f"-env:UserInstallation=file://{staging}/profile", "--headless",
                 "--convert-to", to, "--outdir", str(out / folder), *files],
                check=True, capture_output=True, timeout=1800,
            )  # fmt: skip
    if to != "pdf":
        return {"layout": f"Word rendering (docx) saved as .{to} by LibreOffice"}
    pages = sum(len(PdfReader(p).pages) for p in out.rglob("*.pdf"))
    return {"layout": "Word rendering (docx) saved as PDF by LibreOffice", "pages": pages}


def render(subset: Subset, fmt: str) -> tuple[Path, dict[str, Any]]:
    """The subset's documents in ``fmt`` under the cache (rendered once per documents and code):
    (folder, what rendering took and made)."""
    import time

    out = CACHE / f"{subset.name}-{subset.tag}" / fmt
    stamp = out.parent / f"{fmt}.json"
    if stamp.exists() and out.exists():
        return out, json.loads(stamp.read_text())
    shutil.rmtree(out, ignore_errors=True)
    tmp = out.with_name(fmt + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    t0 = time.perf_counter()
    info: dict[str, Any] = {"documents": len(subset.docs)}
    if fmt == "md":
        for rel in subset.docs:
            (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(subset.docs_dir / rel, tmp / rel)
    elif fmt == "docx":
        totals: dict[str, int] = {}
        for rel in subset.docs:
            md = (subset.docs_dir / rel).read_text(encoding="utf-8")
            counts = to_docx(md, title_of(md, Path(rel).stem), tmp / target_name(rel, fmt))
            for k, v in counts.items():
                totals[k] = totals.get(k, 0) + v
        info["numbered"] = totals
    elif fmt == OFFICE_PDF:
        info.update(_office_pdfs(subset, tmp))
    elif fmt == "doc":
        info.update(_office_pdfs(subset, tmp, to="doc"))
    elif fmt == "html":
        layout = LAYOUTS["pdf-ruled"]
        for rel in subset.docs:
            md = (subset.docs_dir / rel).read_text(encoding="utf-8")
            target = tmp / target_name(rel, fmt)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(to_html(md, title_of(md, Path(rel).stem), layout), encoding="utf-8")
    else:
        from pypdf import PdfReader
        from render_pdf import chromium, print_pdf

        layout = LAYOUTS[fmt]
        info["layout"] = layout.describe()
        pages = 0
        with chromium() as page:
            for rel in subset.docs:
                md = (subset.docs_dir / rel).read_text(encoding="utf-8")
                title = title_of(md, Path(rel).stem)
                target = tmp / target_name(rel, fmt)
                print_pdf(page, to_html(md, title, layout), title, layout, target)
                pages += len(PdfReader(target).pages)
        info["pages"] = pages
    info["render_seconds"] = round(time.perf_counter() - t0, 1)
    info["bytes"] = sum(p.stat().st_size for p in tmp.rglob("*") if p.is_file())
    tmp.rename(out)
    stamp.write_text(json.dumps(info))
    return out, info
