"""Consistency check of a question set (data/eval/sample_qa.jsonl by default) against data/knowledge/.

Run from the repository root:
    .venv/bin/python data/eval/_check_qa.py [data/eval/lay_qa.jsonl]
(sample_qa.jsonl by default; ids are <prefix>-001, <prefix>-002, ... with the file's own prefix)

For every answerable question it checks that
  * each gold_doc exists;
  * each gold_span (whitespace removed) occurs in the whitespace-removed text of a gold doc;
  * each answer occurs (whitespace-insensitively) in a gold doc; with answer_match "all" every answer must;
  * each gold_row's cells all occur in a single table row of a gold doc, and the gold_header
    equals that table's header.
For unanswerable questions it checks that no gold fields are set.
Also checks ids are unique and sequential, and that required fields are present.
Exit status 1 on any failure.
"""

from __future__ import annotations

import html as htmllib
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
KB = ROOT / "data" / "knowledge"
QA = ROOT / "data" / "eval" / "sample_qa.jsonl"
FIELDS = [
    "id",
    "question",
    "answerable",
    "answers",
    "answer_match",
    "gold_docs",
    "gold_spans",
    "gold_rows",
    "gold_header",
    "category",
]

WS = re.compile(r"\s+")


def norm(s: str) -> str:
    return WS.sub("", s)


def load(path: Path) -> tuple[str, list[list[str]]]:
    """Return (visible text, table rows as lists of cell strings; first row of each table = header)."""
    suf = path.suffix.lower()
    rows: list[list[str]] = []
    if suf == ".docx":
        import docx

        d = docx.Document(str(path))
        parts = [p.text for p in d.paragraphs]
        for t in d.tables:
            for r in t.rows:
                cells = [c.text for c in r.cells]
                rows.append(cells)
                parts.append(" ".join(cells))
        return "\n".join(parts), rows
    if suf == ".pdf":  # as the engine's PDF reader lays it out (tables as GFM tables)
        from rag_app.readers import read_file

        raw = read_file(path).text
    else:
        raw = path.read_text(encoding="utf-8")
    if suf in (".html", ".htm"):
        for tr in re.findall(r"<tr[^>]*>(.*?)</tr>", raw, flags=re.S):
            cells = [
                htmllib.unescape(re.sub(r"<[^>]+>", "", c)).strip()
                for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", tr, flags=re.S)
            ]
            rows.append(cells)
        body = re.sub(r"<(script|style)[^>]*>.*?</\1>", " ", raw, flags=re.S | re.I)
        text = htmllib.unescape(re.sub(r"<[^>]+>", " ", body))
        return text, rows
    for line in raw.splitlines():
        s = line.strip()
        if s.startswith("|") and s.endswith("|"):
            cells = [c.strip() for c in s.strip("|").split("|")]
            if all(set(c) <= set("-: ") for c in cells):
                continue
            rows.append(cells)
    return raw, rows


def row_match(gold: dict, header: list[str], rows: list[list[str]]) -> bool:
    want = [norm(str(v)) for v in gold.values()]
    cur_header: list[str] | None = None
    for cells in rows:
        nc = [norm(c) for c in cells]
        if [norm(h) for h in header] == nc:
            cur_header = nc
            continue
        if all(w in nc for w in want):
            if cur_header is None:
                return False
            # the cell under each column name must be the gold value
            return all(nc[cur_header.index(norm(k))] == norm(str(v)) for k, v in gold.items())
    return False


def main() -> int:
    errors: list[str] = []
    cache: dict[str, tuple[str, list[list[str]]]] = {}
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else QA
    recs = [
        json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
    ]
    prefix = str(recs[0].get("id", "sample")).rsplit("-", 1)[0] if recs else "sample"
    for i, q in enumerate(recs, 1):
        qid = q.get("id", f"#{i}")
        for f in FIELDS:
            if f not in q:
                errors.append(f"{qid}: missing field {f}")
        if qid != f"{prefix}-{i:03d}":
            errors.append(f"{qid}: expected id {prefix}-{i:03d}")
        if not q["answerable"]:
            if q["answers"] or q["gold_docs"] or q["gold_spans"] or q["gold_rows"]:
                errors.append(f"{qid}: unanswerable question has gold fields")
            continue
        if q["answer_match"] not in ("any", "all", "reference") or not q["answers"]:
            errors.append(f"{qid}: bad answers/answer_match")
        texts, rows = [], []
        for d in q["gold_docs"]:
            p = KB / d
            if not p.exists():
                errors.append(f"{qid}: gold doc missing: {d}")
                continue
            if d not in cache:
                cache[d] = load(p)
            texts.append(norm(cache[d][0]))
            rows.extend(cache[d][1])
        for s in q["gold_spans"]:
            if s != norm(s) or len(s) > 60:
                errors.append(f"{qid}: span not normalised or too long: {s}")
            if not any(norm(s) in t for t in texts):
                errors.append(f"{qid}: span not found: {s}")
        found = [any(norm(a) in t for t in texts) for a in q["answers"]]
        if q["answer_match"] == "all" and not all(found):
            errors.append(f"{qid}: answers not all found: {q['answers']}")
        if q["answer_match"] == "any" and not any(found):
            errors.append(f"{qid}: no answer found: {q['answers']}")
        for g in q["gold_rows"]:
            if list(g) != q["gold_header"]:
                errors.append(f"{qid}: gold_row keys differ from gold_header")
            if not row_match(g, q["gold_header"], rows):
                errors.append(f"{qid}: gold row not found as one table row: {g}")
        if q["gold_rows"] and not any(
            norm(a) in norm(" ".join(map(str, g.values())))
            for g in q["gold_rows"]
            for a in q["answers"]
        ):
            errors.append(f"{qid}: answer is not a cell of the gold row")
    for e in errors:
        print("FAIL", e)
    n_ans = sum(q["answerable"] for q in recs)
    print(
        f"{len(recs)} questions ({n_ans} answerable, {len(recs) - n_ans} unanswerable): "
        f"{'OK' if not errors else f'{len(errors)} problem(s)'}"
    )
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
