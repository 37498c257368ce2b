"""Answers of a question set as JSON, to compare two versions of the code (a refactor must not
change them).

    .venv/bin/python benchmarks/quality/answer_snapshot.py data/eval/sample_qa.jsonl --docs data/knowledge \
        --out /tmp/after.json [--compare /tmp/before.json]

Each answer keeps what a refactor must leave alone: refused or not, the reason, the gate's
confidence, the cited units and the sources' chunk ids, and the text without the line that says
what the evidence lacks (whose wording and place may change). Run it with ``PYTHONPATH`` at the
other version's checkout to take the "before" snapshot.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from rag_app.eval.dataset import load_qa
from rag_app.kb import KnowledgeBase

_CAVEATS = ("注意：检索到的资料中没有", "知识库中没有")


def text_without_caveat(text: str) -> str:
    lines = [ln for ln in text.splitlines() if not ln.startswith(_CAVEATS[0])]
    if lines and lines[0].startswith(_CAVEATS[1]) and "最接近的是：" in lines[0]:
        lines[0] = lines[0].split("最接近的是：", 1)[1]
    return "\n".join(lines)


def snapshot(kb: KnowledgeBase, questions: list[str]) -> dict[str, Any]:
    out = {}
    for q in questions:
        a = kb.ask(q)
        out[q] = {
            "refused": a.refused, "reason": a.reason, "confidence": a.confidence,
            "text": text_without_caveat(a.answer), "citations": [c.text for c in a.citations],
            "sources": [s.chunk_id for s in a.sources],
        }  # fmt: skip
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("questions", type=Path)
    parser.add_argument("--docs", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--compare", type=Path, default=None)
    args = parser.parse_args()
    questions = [item.question for item in load_qa(args.questions)]
    with tempfile.TemporaryDirectory() as tmp:
        kb = KnowledgeBase.open(Path(tmp) / "kb", cross_reader=False)
        kb.ingest([args.docs])
        snap = snapshot(kb, questions)
        kb.close()
    args.out.write_text(json.dumps(snap, ensure_ascii=False, indent=1), encoding="utf-8")
    if args.compare is None:
        return
    before = json.loads(args.compare.read_text(encoding="utf-8"))
    changed = [q for q in questions if before.get(q) != snap.get(q)]
    for q in changed:
        print(f"changed: {q}\n  before {before.get(q)}\n  after  {snap.get(q)}")
    print(f"{len(questions) - len(changed)} of {len(questions)} answers unchanged")
    sys.exit(1 if changed else 0)


if __name__ == "__main__":
    main()
