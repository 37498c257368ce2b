"""The ledger's schema: every table (SQLAlchemy Core), the SQLite FTS5 keyword index's DDL, and
the small helpers the stores share (timestamps, clipped error messages, ``kb_meta`` rows).

Tables: ``kb_meta``, ``documents``, ``chunks`` (the ledger proper, store/ledger.py), ``api_keys``
(store/api_keys.py), ``jobs`` (store/jobs.py), ``conversations``/``conversation_turns``
(store/conversations.py), ``feedback`` (store/feedback.py), ``annotations`` (store/annotations.py), ``doc_collections``,
``collection_documents`` and ``api_key_collections`` (store/collections.py); the keyword index:
``chunk_fts`` + ``chunk_fts_rows`` on SQLite (store/keywords_sqlite.py), ``chunk_keywords`` on
PostgreSQL (store/keywords_postgres.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    DDL,
    BigInteger,
    Column,
    Computed,
    DateTime,
    Float,
    Identity,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    delete,
    event,
    insert,
    select,
)
from sqlalchemy.engine import Connection
from sqlalchemy.types import UserDefinedType

ERROR_MAX_CHARS = 500

metadata = MetaData()

meta_table = Table(
    "kb_meta",
    metadata,
    Column("key", String(64), primary_key=True),
    Column("value", Text, nullable=False),
)

documents = Table(
    "documents",
    metadata,
    Column("doc_id", String(64), primary_key=True),
    Column("tenant", String(128), nullable=False, index=True),
    Column("source", Text, nullable=False),
    Column("rel_path", Text, nullable=False),
    Column("doc_type", String(32), nullable=False),
    Column("title", Text),
    Column("content_hash", String(64)),
    Column("fingerprint", String(64)),
    Column("version", Integer, nullable=False, default=0),
    Column("status", String(16), nullable=False),
    Column("error", String(ERROR_MAX_CHARS)),
    Column("size_bytes", Integer, nullable=False, default=0),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
)

chunks = Table(
    "chunks",
    metadata,
    Column("chunk_id", String(96), primary_key=True),
    Column("doc_id", String(64), nullable=False),
    Column("tenant", String(128), nullable=False),
    Column("version", Integer, nullable=False),
    Column("chunk_index", Integer, nullable=False),
    Column("text", Text, nullable=False),
    Column("title_path", Text, nullable=False, default=""),
    Column("start_char", Integer, nullable=False),
    Column("end_char", Integer, nullable=False),
    Column("prefix_chars", Integer, nullable=False, default=0),
    Column("suffix_chars", Integer, nullable=False, default=0),
    Column("token_count", Integer, nullable=False, default=0),
    Column("block_types", String(128), nullable=False, default=""),
    Index("ix_chunks_doc_version_index", "doc_id", "version", "chunk_index"),
)

api_keys = Table(
    "api_keys",
    metadata,
    Column("key_id", String(32), primary_key=True),
    Column("key_hash", String(64), nullable=False, unique=True),
    Column("tenant", String(128), nullable=False),
    Column("role", String(16), nullable=False),
    Column("name", String(128), nullable=False, default=""),
    Column("created_at", Float, nullable=False),
    Column("revoked_at", Float),
)

# The durable ingestion queue. Times are epoch seconds (portable comparisons across backends).
jobs = Table(
    "jobs",
    metadata,
    Column("job_id", Integer, primary_key=True, autoincrement=True),
    Column("doc_id", String(64), nullable=False, index=True),
    Column("tenant", String(128), nullable=False),
    Column("kind", String(16), nullable=False),
    Column("status", String(16), nullable=False),
    Column("path", Text, nullable=False),
    Column("rel_path", Text, nullable=False),
    Column("content_hash", String(64)),
    Column("attempts", Integer, nullable=False, default=0),
    Column("error", String(ERROR_MAX_CHARS)),
    Column("worker", String(128)),
    Column("created_at", Float, nullable=False),
    Column("started_at", Float),
    Column("heartbeat_at", Float),
    Column("finished_at", Float),
    Index("ix_jobs_status_id", "status", "job_id"),
    # the fair claim's "when did this tenant last get a turn" (store/jobs.py)
    Index("ix_jobs_tenant_started", "tenant", "started_at"),
)

# Conversations of the service's /api/chat (store/conversations.py): per tenant and API key.
conversations = Table(
    "conversations",
    metadata,
    Column("conversation_id", String(32), primary_key=True),
    Column("tenant", String(128), nullable=False),
    Column("key_id", String(32), nullable=False),
    Column("title", Text, nullable=False, default=""),
    Column("created_at", Float, nullable=False),
    Column("updated_at", Float, nullable=False),
    # the collection ids it was started in (JSON list; [] = the whole tenant); added to older
    # ledgers by store/ledger.py's _add_new_columns
    Column("collections", Text, nullable=False, server_default="[]"),
    Index("ix_conversations_owner", "tenant", "key_id", "updated_at"),
)

conversation_turns = Table(
    "conversation_turns",
    metadata,
    Column("turn_id", Integer, primary_key=True, autoincrement=True),
    Column("conversation_id", String(32), nullable=False, index=True),
    Column("question", Text, nullable=False),
    Column("resolved_question", Text, nullable=False),
    Column("answer", Text, nullable=False),  # the Answer, JSON
    Column("created_at", Float, nullable=False),
)

# 👍/👎 on answers (store/feedback.py), per tenant, with what was answered and how.
feedback = Table(
    "feedback",
    metadata,
    Column("feedback_id", Integer, primary_key=True, autoincrement=True),
    Column("tenant", String(128), nullable=False),
    Column("key_id", String(32), nullable=False),
    Column("rating", String(8), nullable=False),  # up | down
    Column("comment", Text, nullable=False, default=""),
    Column("question", Text, nullable=False),
    Column("resolved_question", Text, nullable=False),
    Column("answer", Text, nullable=False),
    Column("sources", Text, nullable=False, default="[]"),  # JSON: [{doc_id, chunk_id, …}]
    Column("confidence", Float),
    Column("settings", Text, nullable=False, default="{}"),  # JSON: what answered it
    Column("conversation_id", String(32)),
    Column("created_at", Float, nullable=False),
    Column("expected", Text),  # JSON: the reviewer's {"answer", "refuse"}; NULL: none given
    Index("ix_feedback_tenant_created", "tenant", "created_at"),
)

# Annotations (人工标注; store/annotations.py): an editor's answer to a question (or "should be
# refused"), answered first when a later question matches it, within its tenant and collection
# (NULL: the whole tenant). A cited chunk is kept with its document version and text hash, so a
# re-parsed or deleted chunk is told apart from the one the editor cited.
annotation_table = Table(
    "annotations",
    metadata,
    Column("annotation_id", Integer, primary_key=True, autoincrement=True),
    Column("tenant", String(128), nullable=False),
    Column("collection_id", String(16)),
    Column("question", Text, nullable=False),
    Column("normalized", Text, nullable=False),
    Column("answer", Text, nullable=False, default=""),
    Column("should_refuse", Integer, nullable=False, default=0),
    Column("doc_id", String(64)),
    Column("chunk_id", String(96)),
    Column("chunk_version", Integer),
    Column("chunk_hash", String(64)),
    Column("author_key_id", String(32), nullable=False, default=""),
    Column("author", String(128), nullable=False, default=""),
    Column("created_at", Float, nullable=False),
    Column("updated_at", Float, nullable=False),
    # the question's embedding (float32 bytes) and the model that made it: loaded, not recomputed
    Column("embedding", String(64)),
    Column("vector", LargeBinary),
    Index("ix_annotations_tenant", "tenant", "updated_at"),
)

# Collections (store/collections.py): named groups of a tenant's documents (HR policies, IT
# manuals); a document may be in several. ``api_key_collections`` limits a key to some of them
# (no row: the key sees its whole tenant).
doc_collections = Table(
    "doc_collections",
    metadata,
    Column("collection_id", String(16), primary_key=True),
    Column("tenant", String(128), nullable=False),
    Column("name", String(128), nullable=False),
    Column("created_at", Float, nullable=False),
    UniqueConstraint("tenant", "name", name="uq_doc_collections_tenant_name"),
)

collection_documents = Table(
    "collection_documents",
    metadata,
    Column("collection_id", String(16), primary_key=True),
    Column("doc_id", String(64), primary_key=True),
    Column("added_at", Float, nullable=False),
    Index("ix_collection_documents_doc", "doc_id"),
)

api_key_collections = Table(
    "api_key_collections",
    metadata,
    Column("key_id", String(32), primary_key=True),
    Column("collection_id", String(16), primary_key=True),
)

CHUNK_FIELDS = (
    "chunk_id",
    "doc_id",
    "version",
    "chunk_index",
    "text",
    "title_path",
    "start_char",
    "end_char",
    "prefix_chars",
    "suffix_chars",
    "token_count",
    "block_types",
)


# Keyword index: jieba tokens (space separated) in an FTS5 table, written in the same transaction
# as the chunk rows, so it can never disagree with the ledger. ``chunk_fts`` holds one row per
# chunk; ``row_fts`` (same layout) one row per table row of a table chunk, naming the chunk
# (``RAG_TABLE_ROW_ENTRIES``; store/keywords_sqlite.py).
def fts_ddl(table: str) -> str:
    return (
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {table} USING fts5("
        "tokens, chunk_id UNINDEXED, doc_id UNINDEXED, tenant UNINDEXED, version UNINDEXED, "
        "tokenize = 'unicode61 remove_diacritics 0')"
    )


def fts_vocab_ddl(table: str) -> str:
    return f"CREATE VIRTUAL TABLE IF NOT EXISTS {table}_vocab USING fts5vocab({table}, 'row')"


# Which FTS5 rows belong to which (document, version). FTS5 cannot index its UNINDEXED columns,
# so "DELETE FROM chunk_fts WHERE doc_id = ..." reads the whole table (0.15 s at 100k chunks, on
# every file ingested, twice). This table holds each FTS5 row's rowid under an index on
# (doc_id, version), written in the same transactions as chunk_fts: deletes look rowids up here.
def fts_rows_ddl(table: str) -> tuple[str, str]:
    return (
        f"CREATE TABLE IF NOT EXISTS {table}_rows ("
        "rowid INTEGER PRIMARY KEY, doc_id TEXT NOT NULL, version INTEGER NOT NULL)",
        f"CREATE INDEX IF NOT EXISTS ix_{table}_rows_doc ON {table}_rows (doc_id, version)",
    )


FTS_DDL = fts_ddl("chunk_fts")
FTS_VOCAB_DDL = fts_vocab_ddl("chunk_fts")
FTS_ROWS_DDL = fts_rows_ddl("chunk_fts")
# a ledger written before chunk_fts_rows existed gets it filled once, from chunk_fts itself
FTS_ROWS_FILLED = "chunk_fts_rows_filled"


# PostgreSQL keyword index. Its own MetaData: the table exists only on PostgreSQL. ``tsv`` is a
# generated column, so it can never disagree with ``tokens``.
pg_metadata = MetaData()


class TsVector(UserDefinedType[str]):
    """PostgreSQL's ``tsvector``, for the table's DDL only (PostgreSQL computes the column and
    every query names it in SQL text): the column ``sqlalchemy.dialects.postgresql.TSVECTOR``
    gives, without importing that dialect (0.1 s of every start) where the ledger is SQLite."""

    cache_ok = True

    def get_col_spec(self, **kw: Any) -> str:
        return "TSVECTOR"


# the jieba tokens a row holds (BM25's row length; tokens are joined by single spaces)
PG_TOKEN_COUNT = "coalesce(array_length(string_to_array(tokens, ' '), 1), 0)"

chunk_keywords = Table(
    "chunk_keywords",
    pg_metadata,
    Column("chunk_id", String(96), primary_key=True),
    Column("doc_id", String(64), nullable=False),
    Column("tenant", String(128), nullable=False),
    Column("version", Integer, nullable=False),
    Column("tokens", Text, nullable=False),
    Column("tsv", TsVector(), Computed("to_tsvector('simple'::regconfig, tokens)", persisted=True)),
    # a small integer per row: the in-memory posting lists name rows by it (store/postings.py)
    Column("rid", BigInteger, Identity(), nullable=False),
    Column("n_tokens", Integer, Computed(PG_TOKEN_COUNT, persisted=True)),
    Index("ix_chunk_keywords_doc_version", "doc_id", "version"),
    Index("ix_chunk_keywords_rid", "rid", unique=True),
)
# the GIN index, as DDL: a dialect option (``postgresql_using``) in the Table would import
# SQLAlchemy's PostgreSQL dialect on every start (0.1 s), SQLite ledgers' too
event.listen(
    chunk_keywords,
    "after_create",
    DDL("CREATE INDEX ix_chunk_keywords_tsv ON chunk_keywords USING gin (tsv)"),
)

# one row (id 1) whose version every transaction writing chunk_keywords increments: what the
# posting cache's lists belong to (the PostgreSQL twin of FTS5's structure cookie)
keyword_version = Table(
    "keyword_version",
    pg_metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("version", BigInteger, nullable=False),
)


def new_document(
    doc_id: str, tenant: str, source: str, rel_path: str, doc_type: str, size: int, now: datetime
) -> Any:
    """INSERT of a new document row with no active version yet (status set by the caller)."""
    return insert(documents).values(
        doc_id=doc_id,
        tenant=tenant,
        source=source,
        rel_path=rel_path,
        doc_type=doc_type,
        version=0,
        size_bytes=size,
        created_at=now,
        updated_at=now,
    )


def utcnow() -> datetime:
    return datetime.now(UTC)


def clip_error(message: str | None) -> str | None:
    if message is None:
        return None
    one_line = " ".join(message.split())
    return one_line[: ERROR_MAX_CHARS - 1] + "…" if len(one_line) > ERROR_MAX_CHARS else one_line


def get_meta(conn: Connection, key: str) -> str | None:
    return conn.execute(
        select(meta_table.c.value).where(meta_table.c.key == key)
    ).scalar_one_or_none()


def set_meta(conn: Connection, key: str, value: str) -> None:
    conn.execute(delete(meta_table).where(meta_table.c.key == key))
    conn.execute(insert(meta_table).values(key=key, value=value))


def stream_rows(conn: Connection, stmt: Any, batch: int = 2000) -> Iterator[list[dict[str, Any]]]:
    """The statement's rows as dicts, in batches (without loading them all)."""
    result = conn.execution_options(stream_results=True).execute(stmt).mappings()
    while rows := result.fetchmany(batch):
        yield [dict(r) for r in rows]
