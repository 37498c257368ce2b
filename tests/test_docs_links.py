"""The user docs point only at files that exist.

For README.md and every Markdown file at the top level of docs/ (not docs/research/, the lab
notebook, which records the code as it was):

* every relative Markdown link target ``](path)`` exists relative to the file's folder
  (http(s): and mailto: links are skipped), and its ``#anchor``, if any, is a heading of the
  target Markdown file (or of the file itself for a bare ``#anchor``) as GitHub names it;
* every repository path in backticks under ``rag_app/``, ``benchmarks/``, ``pipelines/`` or
  ``tests/`` (``rag_app/engine.py``, ``benchmarks/results/``) exists relative to the repository
  root, and one ending in ``/`` is a directory (folders written at run time and ignored by
  git, ``GENERATED``, are skipped).

A doc that names a deleted or moved module fails here with every broken reference listed.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# ](target) or ](target "title"); an <angle-bracketed> target is unwrapped below.
LINK = re.compile(r"\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+\"[^\"]*\")?\s*\)")
# A backticked span that is wholly a path under one of the code folders.
CODE_PATH = re.compile(r"`((?:rag_app|benchmarks|pipelines|tests)/[\w./-]*)`")
SKIPPED_SCHEMES = ("http://", "https://", "mailto:")
# Folders the code writes at run time and git ignores: named in the docs, absent from a fresh
# checkout. Each must stay listed in .gitignore (checked below).
GENERATED = ("benchmarks/.cache/",)


FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: its rendered text lower-cased, punctuation other than
    ``-`` and ``_`` dropped, spaces as ``-``."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link: its text
    text = re.sub(r"<[^>]+>", "", text).replace("`", "").replace("*", "")
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def anchors(doc: Path) -> set[str]:
    """Every heading anchor of a Markdown file (a repeated one also as ``name-1``, ``name-2`` …),
    headings inside code fences aside."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    fenced = False
    for line in doc.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        m = None if fenced else HEADING.match(line)
        if m:
            base = slug(m.group(1))
            n = seen.get(base, 0)
            seen[base] = n + 1
            found.add(base if n == 0 else f"{base}-{n}")
    return found


def user_docs() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def broken_references(doc: Path) -> list[str]:
    """Each broken link or code path in ``doc`` as 'file:line: kind target'."""
    broken: list[str] = []
    rel = doc.relative_to(ROOT)
    for lineno, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), start=1):
        for match in LINK.finditer(line):
            target = match.group(1).strip("<>")
            if target.startswith(SKIPPED_SCHEMES):
                continue
            path, _, anchor = target.partition("#")
            file = doc.parent / path if path else doc
            if not file.exists():
                broken.append(f"{rel}:{lineno}: link {target}")
            elif anchor and file.suffix == ".md" and anchor.lower() not in anchors(file):
                broken.append(f"{rel}:{lineno}: anchor {target}")
        for match in CODE_PATH.finditer(line):
            path = match.group(1)
            # `benchmarks/.cache` and `benchmarks/.cache/…` alike (the folder itself, with or
            # without its slash, is generated too)
            if (path.rstrip("/") + "/").startswith(GENERATED):
                continue
            full = ROOT / path
            ok = full.is_dir() if path.endswith("/") else full.exists()
            if not ok:
                broken.append(f"{rel}:{lineno}: path `{path}`")
    return broken


def test_user_docs_exist() -> None:
    docs = user_docs()
    assert (ROOT / "README.md").is_file()
    assert len(docs) > 1, "no Markdown files found under docs/"


def test_generated_folders_are_git_ignored() -> None:
    ignored = (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()
    missing = [path for path in GENERATED if path not in ignored]
    assert not missing, f"GENERATED folders not in .gitignore: {missing}"


def test_user_doc_links_and_code_paths_exist() -> None:
    broken = [ref for doc in user_docs() for ref in broken_references(doc)]
    assert not broken, (
        f"{len(broken)} broken reference(s) in README.md / docs/*.md "
        "(relative links are checked from the file's folder, code paths from the repository "
        "root):\n" + "\n".join(broken)
    )


def test_every_readme_performance_figure_is_tracked_for_staleness() -> None:
    """benchmarks/performance/figures.py knows the results file of every benchmark the README's figures
    name, so `make figures` can tell when one was measured on older code (issue 57)."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "performance" / "figures.py")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "untracked" not in done.stdout, done.stdout
    assert "fresh" in done.stdout or "stale" in done.stdout
