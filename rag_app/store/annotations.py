"""Annotations (人工标注): an editor's answer to a question, or "this should be refused", kept in
the ledger per tenant and collection (none: the whole tenant). A later question that matches an
annotated one is answered with the annotation first (rag_app/annotations.py).

An annotation may cite a chunk: its document, chunk id, the document version and a hash of the
chunk's text when it was annotated, so that a chunk deleted or re-parsed since is told apart from
the one the editor read (:meth:`AnnotationStore.citation_state`).
"""

from __future__ import annotations

import hashlib
import re
import time
import unicodedata
from collections.abc import Sequence

from pydantic import BaseModel, Field
from sqlalchemy import and_, delete, desc, func, insert, select, update
from sqlalchemy.engine import Engine

from rag_app.store.schema import annotation_table as table
from rag_app.store.schema import chunks, documents

QUESTION_MAX_CHARS = 2000
ANSWER_MAX_CHARS = 8000

#: a question's embedding as stored: (model name, float32 bytes)
Vector = tuple[str, bytes]

# what normalization drops: whitespace and punctuation (ASCII and CJK), so that "密码多久改一次？"
# and "密码多久改一次" are the same question
_DROP = re.compile(r"[\s\u3000-\u303f\uff01-\uff0f\uff1a-\uff20\uff3b-\uff40\uff5b-\uff65"
                   r"!-/:-@\[-`{-~、。，；：？！“”‘’（）《》【】…—·]+")  # fmt: skip


def normalize_question(question: str) -> str:
    """The question as annotations are looked up exactly: NFKC (full-width → ASCII), lower case,
    no whitespace or punctuation."""
    return _DROP.sub("", unicodedata.normalize("NFKC", question).lower())


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class CitedChunk(BaseModel):
    """The chunk an annotation cites, as it was when annotated."""

    doc_id: str = Field(max_length=64)
    chunk_id: str = Field(max_length=96)
    version: int | None = None
    text_hash: str | None = Field(None, max_length=64)


class Annotation(BaseModel):
    annotation_id: int = 0
    tenant: str
    collection_id: str | None = Field(
        None, description="The collection it answers in; None: the whole tenant."
    )
    question: str = Field(max_length=QUESTION_MAX_CHARS)
    answer: str = Field("", max_length=ANSWER_MAX_CHARS)
    should_refuse: bool = False
    cited: CitedChunk | None = None
    author_key_id: str = ""
    author: str = ""
    created_at: float = 0.0
    updated_at: float = 0.0


class AnnotationChange(BaseModel):
    """An edit: the fields given replace the annotation's (``cited`` with ``clear_cited``)."""

    question: str | None = None
    answer: str | None = None
    should_refuse: bool | None = None
    cited: CitedChunk | None = None
    clear_cited: bool = False
    collection_id: str | None = None
    move_to_tenant: bool = False  # collection_id None means "unchanged" unless this is set
    author_key_id: str | None = None
    author: str | None = None


def _annotation(row: object) -> Annotation:
    data = dict(row)  # type: ignore[call-overload]
    cited = None
    if data.get("chunk_id"):
        cited = CitedChunk(
            doc_id=data["doc_id"] or "",
            chunk_id=data["chunk_id"],
            version=data["chunk_version"],
            text_hash=data["chunk_hash"],
        )
    return Annotation(
        annotation_id=data["annotation_id"],
        tenant=data["tenant"],
        collection_id=data["collection_id"],
        question=data["question"],
        answer=data["answer"],
        should_refuse=bool(data["should_refuse"]),
        cited=cited,
        author_key_id=data["author_key_id"],
        author=data["author"],
        created_at=data["created_at"],
        updated_at=data["updated_at"],
    )


def _cited_values(cited: CitedChunk | None) -> dict[str, object]:
    if cited is None:
        return {"doc_id": None, "chunk_id": None, "chunk_version": None, "chunk_hash": None}
    return {
        "doc_id": cited.doc_id,
        "chunk_id": cited.chunk_id,
        "chunk_version": cited.version,
        "chunk_hash": cited.text_hash,
    }


class AnnotationStore:
    """List, add, edit and delete a knowledge base's annotations (the matcher's in-memory index:
    rag_app/annotations.py)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def add(self, annotation: Annotation, vector: Vector | None = None) -> Annotation:
        """Store it (``vector``: its question's embedding, (model name, float32 bytes))."""
        now = time.time()
        values = annotation.model_dump(exclude={"annotation_id", "cited"})
        values["embedding"], values["vector"] = vector or (None, None)
        values.update(_cited_values(annotation.cited))
        values["normalized"] = normalize_question(annotation.question)
        values["should_refuse"] = int(annotation.should_refuse)
        values["created_at"] = values["updated_at"] = now
        with self.engine.begin() as conn:
            key = conn.execute(insert(table).values(**values)).inserted_primary_key
        assert key is not None
        found = self.get(annotation.tenant, int(key[0]))
        assert found is not None
        return found

    def get(self, tenant: str | None, annotation_id: int) -> Annotation | None:
        """One annotation; ``tenant`` None: of any tenant (the CLI's administrator view)."""
        query = select(table).where(table.c.annotation_id == annotation_id)
        if tenant is not None:
            query = query.where(table.c.tenant == tenant)
        with self.engine.connect() as conn:
            row = conn.execute(query).mappings().first()
        return None if row is None else _annotation(row)

    def list(
        self,
        tenant: str | None,
        *,
        collections: list[str] | None = None,
        tenant_wide: bool = True,
        limit: int | None = None,
    ) -> list[Annotation]:
        """The latest edited first. ``collections`` (ids): only those of these collections (and,
        with ``tenant_wide``, the tenant-wide ones); ``tenant`` None: every tenant's."""
        query = select(table).order_by(desc(table.c.updated_at), desc(table.c.annotation_id))
        if tenant is not None:
            query = query.where(table.c.tenant == tenant)
        if collections is not None:
            where = table.c.collection_id.in_(collections)
            if tenant_wide:
                query = query.where(where | table.c.collection_id.is_(None))
            else:
                query = query.where(where)
        if limit is not None:
            query = query.limit(limit)
        with self.engine.connect() as conn:
            rows = conn.execute(query).mappings().all()
        return [_annotation(row) for row in rows]

    def revisions(self, tenant: str) -> Sequence[tuple[int, float]]:
        """(id, updated_at) of a tenant's annotations, the latest edited first: what a reload
        compares with what it holds (only changed ones are then read whole: :meth:`many`)."""
        query = (
            select(table.c.annotation_id, table.c.updated_at)
            .where(table.c.tenant == tenant)
            .order_by(desc(table.c.updated_at), desc(table.c.annotation_id))
        )
        with self.engine.connect() as conn:
            return [(int(r[0]), float(r[1])) for r in conn.execute(query).all()]

    def many(self, tenant: str, ids: Sequence[int]) -> dict[int, Annotation]:
        """These annotations of a tenant, by id."""
        found: dict[int, Annotation] = {}
        for start in range(0, len(ids), 500):
            query = select(table).where(
                and_(table.c.tenant == tenant, table.c.annotation_id.in_(ids[start : start + 500]))
            )
            with self.engine.connect() as conn:
                for row in conn.execute(query).mappings().all():
                    found[int(row["annotation_id"])] = _annotation(row)
        return found

    def edit(
        self,
        tenant: str | None,
        annotation_id: int,
        change: AnnotationChange,
        vector: Vector | None = None,
    ) -> bool:
        """Apply ``change`` (``vector``: the new question's); False when there is no such
        annotation (of ``tenant``)."""
        values: dict[str, object] = {"updated_at": time.time()}
        if change.question is not None:
            values["question"] = change.question
            values["normalized"] = normalize_question(change.question)
            values["embedding"], values["vector"] = vector or (None, None)
        if change.answer is not None:
            values["answer"] = change.answer
        if change.should_refuse is not None:
            values["should_refuse"] = int(change.should_refuse)
        if change.cited is not None or change.clear_cited:
            values.update(_cited_values(change.cited))
        if change.collection_id is not None or change.move_to_tenant:
            values["collection_id"] = change.collection_id
        for name in ("author_key_id", "author"):
            if getattr(change, name) is not None:
                values[name] = getattr(change, name)
        condition = table.c.annotation_id == annotation_id
        if tenant is not None:
            condition = and_(condition, table.c.tenant == tenant)
        with self.engine.begin() as conn:
            done = conn.execute(update(table).where(condition).values(**values))
        return bool(done.rowcount)

    def delete(self, tenant: str | None, annotation_id: int) -> bool:
        condition = table.c.annotation_id == annotation_id
        if tenant is not None:
            condition = and_(condition, table.c.tenant == tenant)
        with self.engine.begin() as conn:
            done = conn.execute(delete(table).where(condition))
        return bool(done.rowcount)

    def vectors(self, tenant: str, ids: Sequence[int]) -> dict[int, Vector]:
        """The stored question embeddings of these annotations of a tenant, by id."""
        found: dict[int, Vector] = {}
        for start in range(0, len(ids), 500):
            query = select(table.c.annotation_id, table.c.embedding, table.c.vector).where(
                and_(
                    table.c.tenant == tenant,
                    table.c.vector.is_not(None),
                    table.c.annotation_id.in_(ids[start : start + 500]),
                )
            )
            with self.engine.connect() as conn:
                found.update(
                    {int(r[0]): (str(r[1]), bytes(r[2])) for r in conn.execute(query).all()}
                )
        return found

    def set_vector(self, annotation_id: int, vector: Vector) -> None:
        """Keep a question's embedding computed after it was stored (added without one, by the
        CLI), without counting as an edit."""
        embedding, raw = vector
        with self.engine.begin() as conn:
            conn.execute(
                update(table)
                .where(table.c.annotation_id == annotation_id)
                .values(embedding=embedding, vector=raw)
            )

    def as_case(self, annotation: Annotation) -> dict[str, object]:
        """A line of a question file ``rag eval`` reads: the question must be answered with the
        annotation's answer, or refused."""
        case: dict[str, object] = {
            "id": f"annotation-{annotation.annotation_id}",
            "question": annotation.question,
            "category": "annotation",
        }
        if annotation.should_refuse:
            return {**case, "answerable": False, "refuse": True}
        return {**case, "answerable": True, "answers": [annotation.answer.strip()]}

    def stamp(self, tenant: str) -> tuple[int, float]:
        """(count, latest update) of a tenant's annotations: what the matcher's index compares
        to notice writes by other processes (one indexed query)."""
        query = select(func.count(), func.max(table.c.updated_at)).where(table.c.tenant == tenant)
        with self.engine.connect() as conn:
            count, latest = conn.execute(query).one()
        return int(count), float(latest or 0.0)

    def cite(self, tenant: str, chunk_id: str) -> CitedChunk | None:
        """The citation of an active chunk of ``tenant`` (None: no such chunk)."""
        query = (
            select(chunks.c.doc_id, chunks.c.version, chunks.c.text)
            .select_from(chunks.join(documents, chunks.c.doc_id == documents.c.doc_id))
            .where(
                and_(
                    chunks.c.chunk_id == chunk_id,
                    chunks.c.version == documents.c.version,
                    documents.c.tenant == tenant,
                )
            )
        )
        with self.engine.connect() as conn:
            row = conn.execute(query).first()
        if row is None:
            return None
        return CitedChunk(
            doc_id=row[0], chunk_id=chunk_id, version=int(row[1]), text_hash=text_hash(row[2])
        )

    def citation_state(self, cited: CitedChunk) -> str:
        """``current`` (the chunk is served, with the text the editor read), ``updated`` (its
        document was re-parsed or the chunk's text changed) or ``deleted`` (no such document)."""
        query = (
            select(chunks.c.version, chunks.c.text, documents.c.version)
            .select_from(chunks.join(documents, chunks.c.doc_id == documents.c.doc_id))
            .where(chunks.c.chunk_id == cited.chunk_id)
        )
        with self.engine.connect() as conn:
            row = conn.execute(query).first()
            if row is None:
                exists = conn.execute(
                    select(documents.c.doc_id).where(documents.c.doc_id == cited.doc_id)
                ).first()
                return "updated" if exists is not None else "deleted"
        version, text, active = row
        if version != active or (cited.text_hash and text_hash(text) != cited.text_hash):
            return "updated"
        return "current"
