"""The reader's training pairs: (question, passage, states the answer?, answer span).

Built from the shared dev data (``../shared/data`` or ``RAG_SHARED_DATA``), one domain a folder:

* **squad2** (``squad2_trial_zh``): each answerable question with its paragraph (positive, the
  answer's span marked), each unanswerable one with the paragraph it was written against
  (``asked_of``: a *natural* negative, a paragraph that looks like it answers);
* **cmrc** (``cmrc_trial_zh``): each question with its paragraph (positive, span marked);
* **laws** (``laws_zh``): each question with its gold article (positive, no span);
* **dragonball** (``dragonball_zh``): each question with the paragraph holding its first gold
  span (positive: its questions span two or three documents, and this one answers a part), each
  unanswerable one with the paragraph that shares most with it;
* **retqa** (``retqa_tables_zh``): each row look-up with its gold row under the table's header
  (positive, the answer cell marked) and the other row of that table that shares most with the
  question (a near miss: the same company, another year).

Every answerable question also gives a **near miss**: the passage outside its gold documents that
shares most with it (character-bigram TF-IDF), which is what retrieval hands the answer step when
the knowledge base lacks the answer. A passage is read as the answer step reads a unit: its
heading, then up to :data:`~rag_app.answer.cross_reader.WINDOW_CHARS` characters around the
answer (positives) or around the sentence that shares most with the question (negatives).
Each pair carries its question's dev half (``sha1(id)`` even: calibration; retqa on the next bit).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rag_app.answer.cross_reader import row_text, window
from rag_app.eval.metrics import squash
from training.split import dev_half

DOMAINS = {
    "squad2": "squad2_trial_zh",
    "cmrc": "cmrc_trial_zh",
    "laws": "laws_zh",
    "dragonball": "dragonball_zh",
    "retqa": "retqa_tables_zh",
}
_SENTENCE = re.compile(r"[^。！？；!?\n]+[。！？；!?]?")
_ARTICLE = re.compile(r"\n(?=\s*(?:\*\*)?第[零一二三四五六七八九十百千]+条)")


@dataclass(frozen=True)
class Pair:
    domain: str
    qid: str
    half: str
    question: str
    passage: str
    label: int  # 1: the passage states the answer
    answer: str  # the answer's text inside the passage ("" when unknown or none)
    kind: str  # positive | unanswerable | near_miss


class Passages:
    """A domain's passages (title, text, document) with a character-bigram TF-IDF index to find
    the passage sharing most with a question."""

    def __init__(self, items: list[tuple[str, str, str]]) -> None:
        from sklearn.feature_extraction.text import TfidfVectorizer

        self.items = items
        self.vec = TfidfVectorizer(analyzer="char", ngram_range=(2, 2), sublinear_tf=True)
        self.matrix = self.vec.fit_transform([t + text for t, text, _ in items])

    def best(self, question: str, exclude_docs: set[str], k: int = 1) -> list[int]:
        scores = (self.matrix @ self.vec.transform([question]).T).toarray().ravel()
        out = []
        for i in np.argsort(-scores, kind="stable"):
            if self.items[i][2] not in exclude_docs:
                out.append(int(i))
                if len(out) == k:
                    break
        return out


def closest_sentence(question: str, text: str) -> tuple[int, int]:
    """The span of ``text``'s sentence sharing most characters with the question."""
    asked = set(question)
    best, at = -1.0, (0, min(len(text), 1))
    for m in _SENTENCE.finditer(text):
        score = len(asked & set(m.group())) / (1 + 0.01 * len(m.group()))
        if score > best:
            best, at = score, (m.start(), m.end())
    return at


def read_as_unit(title: str, text: str, span: tuple[int, int]) -> str:
    body = window(text, *span)
    return f"{title}\n{body}" if title else body


def _qa(root: Path, folder: str) -> Iterator[dict]:
    with (root / folder / "qa.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)


def _markdown_doc(path: Path) -> tuple[str, str]:
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    if lines and lines[0].startswith("# "):
        return lines[0][2:].strip(), "\n".join(lines[1:]).strip()
    return "", text.strip()


def wiki_pairs(root: Path, domain: str) -> list[Pair]:
    folder = DOMAINS[domain]
    docs = {p.name: _markdown_doc(p) for p in sorted((root / folder / "docs").glob("*.md"))}
    index = Passages([(t, body, name) for name, (t, body) in docs.items()])
    pairs = []
    for q in _qa(root, folder):
        half = dev_half(folder, q["id"])
        if q["answerable"]:
            name = q["gold_docs"][0]
            title, body = docs[name]
            answer = next((a for a in q["answers"] if a and a in body), "")
            if answer:
                at = body.index(answer)
                text = read_as_unit(title, body, (at, at + len(answer)))
                pairs.append(Pair(domain, q["id"], half, q["question"], text, 1, answer,
                                  "positive"))  # fmt: skip
            for i in index.best(q["question"], set(q["gold_docs"])):
                title, body, _ = index.items[i]
                pairs.append(_negative(domain, q, half, title, body, "near_miss"))
        elif q.get("asked_of") in docs:
            title, body = docs[q["asked_of"]]
            pairs.append(_negative(domain, q, half, title, body, "unanswerable"))
    return pairs


def _negative(domain: str, q: dict, half: str, title: str, body: str, kind: str) -> Pair:
    span = closest_sentence(q["question"], body)
    return Pair(domain, q["id"], half, q["question"], read_as_unit(title, body, span), 0, "", kind)


def _chunks(path: Path, pattern: re.Pattern[str] | None) -> tuple[str, list[str]]:
    title, body = _markdown_doc(path)
    parts = pattern.split(body) if pattern else body.split("\n")
    return title, [p.strip() for p in parts if len(p.strip()) > 8]


def span_pairs(root: Path, domain: str) -> list[Pair]:
    """laws and dragonball: passages are articles (laws) or paragraphs (dragonball); a
    positive is the passage holding the question's first gold span."""
    folder = DOMAINS[domain]
    pattern = _ARTICLE if domain == "laws" else None
    items: list[tuple[str, str, str]] = []
    for path in sorted((root / folder / "docs").rglob("*")):
        if path.is_file():
            rel = path.relative_to(root / folder / "docs").as_posix()
            title, parts = _chunks(path, pattern)
            items.extend((title, p, rel) for p in parts)
    index = Passages(items)
    squashed = [squash(text) for _, text, _ in items]
    pairs = []
    for q in _qa(root, folder):
        half = dev_half(folder, q["id"])
        if not q["answerable"]:
            for i in index.best(q["question"], set()):
                title, body, _ = items[i]
                pairs.append(_negative(domain, q, half, title, body, "unanswerable"))
            continue
        if not q.get("gold_spans"):
            continue
        gold = squash(q["gold_spans"][0])[:60]
        hit = next((i for i, s in enumerate(squashed) if gold and gold in s), None)
        if hit is not None:
            title, body, _ = items[hit]
            span = closest_sentence(q["gold_spans"][0], body)
            pairs.append(Pair(domain, q["id"], half, q["question"],
                              read_as_unit(title, body, span), 1, "", "positive"))  # fmt: skip
        for i in index.best(q["question"], set(q["gold_docs"])):
            title, body, _ = items[i]
            pairs.append(_negative(domain, q, half, title, body, "near_miss"))
    return pairs


def _table(path: Path) -> tuple[str, list[str], list[list[str]]]:
    title, body = _markdown_doc(path)
    rows = [
        [c.strip() for c in line.strip().strip("|").split("|")]
        for line in body.splitlines()
        if line.strip().startswith("|")
    ]
    return title, rows[0] if rows else [], [r for r in rows[2:] if len(r) == len(rows[0])]


def table_pairs(root: Path) -> list[Pair]:
    folder = DOMAINS["retqa"]
    pairs = []
    for q in _qa(root, folder):
        rows_wanted = q.get("gold_rows") or []
        if len(q["gold_docs"]) != 1 or not rows_wanted:
            continue
        half = dev_half(folder, q["id"])
        title, header, rows = _table(root / folder / "docs" / q["gold_docs"][0])
        gold = [r for r in rows if any(all(g.get(h) == v for h, v in zip(header, r, strict=True))
                                       for g in rows_wanted)]  # fmt: skip
        if not gold:
            continue
        text = row_text(header, gold[0])
        answer = next((a for a in q["answers"] if a and a in text), "")
        pairs.append(Pair("retqa", q["id"], half, q["question"], f"{title}\n{text}", 1, answer,
                          "positive"))  # fmt: skip
        asked = set(q["question"])
        others = [r for r in rows if r not in gold]
        if others:
            near = max(others, key=lambda r: len(asked & set("".join(r))))
            pairs.append(Pair("retqa", q["id"], half, q["question"],
                              f"{title}\n{row_text(header, near)}", 0, "", "near_miss"))  # fmt: skip
    return pairs


def build_pairs(root: Path, domains: list[str] | None = None) -> list[Pair]:
    out: list[Pair] = []
    for domain in domains or list(DOMAINS):
        if not (root / DOMAINS[domain] / "qa.jsonl").is_file():
            raise FileNotFoundError(f"{root / DOMAINS[domain]} holds no qa.jsonl")
        if domain in ("squad2", "cmrc"):
            out.extend(wiki_pairs(root, domain))
        elif domain == "retqa":
            out.extend(table_pairs(root))
        else:
            out.extend(span_pairs(root, domain))
    return out
