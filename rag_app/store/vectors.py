"""The Chroma search index: vectors plus filterable metadata (tenant, doc_id, version, chunk_index).

Vectors are always passed in: Chroma embeds text itself (and tries to download a model) whenever an
add or query carries text without embeddings, so no text is ever handed to it for embedding.

Two backends behind one class: a local ``chromadb.PersistentClient`` in the knowledge-base directory,
or a Chroma server (``chroma run --path DIR --host H --port P``) named by ``RAG_CHROMA_URL``. With a
server only the vectors are remote; the ledger (the source of truth: SQLite in the KB directory, or
PostgreSQL with ``RAG_DATABASE_URL``) is not affected.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import chromadb
import httpx
import numpy as np
from chromadb.config import Settings as ChromaSettings

logger = logging.getLogger(__name__)

# Upper bound on ids per upsert/delete call (Chroma's own limit, ~5461, may be lower still).
MAX_BATCH = 4000
# ids per ``get`` page in ``all_ids``.
PAGE_SIZE = 5000
# The chromadb HTTP client has no timeouts at all (``httpx.Client(timeout=None)``): an unroutable
# host or a server that accepts but never answers would hang forever. These bound the connection
# check in ``__init__`` and every later connect (reads stay unbounded: a big upsert may be slow).
CONNECT_TIMEOUT_S = 5.0
HEARTBEAT_TIMEOUT_S = 10.0
HEARTBEAT_PATH = "/api/v2/heartbeat"


class ChromaUnavailableError(ConnectionError, ValueError):
    """The Chroma server named by ``RAG_CHROMA_URL`` can't be reached or isn't a Chroma server.

    Also a ``ValueError`` (what chromadb itself raises for this), so callers that report
    configuration errors by catching ``ValueError`` (the CLI) keep working.
    """


@dataclass(frozen=True)
class VectorHit:
    chunk_id: str
    score: float  # cosine similarity, 1 - distance
    metadata: dict[str, Any]


@dataclass(frozen=True)
class ChromaServer:
    """A parsed ``RAG_CHROMA_URL``."""

    host: str  # as chromadb wants it (IPv6 literals in brackets)
    port: int
    ssl: bool

    @property
    def base_url(self) -> str:
        return f"{'https' if self.ssl else 'http'}://{self.host}:{self.port}"


def parse_chroma_url(url: str) -> ChromaServer:
    """``http(s)://host[:port]`` → host, port (default 8000, or 443 for https), ssl."""
    bad = (
        f"RAG_CHROMA_URL must look like http://host:port (e.g. http://127.0.0.1:8000), got {url!r}"
    )
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:  # e.g. a non-numeric or out-of-range port
        raise ValueError(f"{bad}: {exc}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(bad)
    if parts.path not in ("", "/") or parts.query or parts.fragment or parts.username:
        raise ValueError(f"{bad}: no path, query or credentials are supported")
    host = parts.hostname
    try:
        if ipaddress.ip_address(host).version == 6:
            host = f"[{host}]"
    except ValueError:
        pass  # a name, not an address
    ssl = parts.scheme == "https"
    return ChromaServer(host=host, port=port or (443 if ssl else 8000), ssl=ssl)


def _unavailable(url: str, server: ChromaServer, reason: str) -> ChromaUnavailableError:
    return ChromaUnavailableError(
        f"cannot use the Chroma server at RAG_CHROMA_URL={url} ({reason}). Start one with "
        f"`chroma run --path <dir> --host {server.host} --port {server.port}`, or unset "
        "RAG_CHROMA_URL to keep the vectors in the local knowledge-base directory."
    )


def _check_server(url: str, server: ChromaServer) -> None:
    """Fail fast, with the URL in the message, when nothing (or not Chroma) answers there."""
    target = server.base_url + HEARTBEAT_PATH
    timeout = httpx.Timeout(HEARTBEAT_TIMEOUT_S, connect=CONNECT_TIMEOUT_S)
    try:
        response = httpx.get(target, timeout=timeout)
    except httpx.TimeoutException as exc:
        raise _unavailable(url, server, f"no answer from {target}: {type(exc).__name__}") from exc
    except httpx.HTTPError as exc:
        raise _unavailable(url, server, f"{type(exc).__name__}: {exc}") from exc
    try:
        ok = response.status_code == 200 and "nanosecond heartbeat" in response.json()
    except ValueError:  # not JSON
        ok = False
    if not ok:
        raise _unavailable(
            url,
            server,
            f"GET {HEARTBEAT_PATH} answered HTTP {response.status_code}, "
            "not a Chroma >= 1.0 heartbeat: is this a Chroma server?",
        )


def _bound_connect_timeout(client: Any) -> None:
    """Give the chromadb HTTP session a connect timeout (private attributes; best effort)."""
    session = getattr(getattr(client, "_server", None), "_session", None)
    if isinstance(session, httpx.Client):
        session.timeout = httpx.Timeout(None, connect=CONNECT_TIMEOUT_S)
    else:
        logger.debug("chromadb HTTP session not found; no connect timeout set")


class VectorStore:
    """A Chroma collection in cosine space, local (persistent) or remote (``chroma run``).

    ``batch_size`` (ids per upsert/delete call) and ``page_size`` (ids per ``get`` page in
    ``all_ids``) are plain attributes.
    """

    def __init__(
        self, *, path: Path | None = None, url: str | None = None, collection: str
    ) -> None:
        # A fresh Settings object per client: chromadb.HttpClient writes host/port into it.
        chroma_settings = ChromaSettings(anonymized_telemetry=False, allow_reset=False)
        self.url = url or None
        if url:
            server = parse_chroma_url(url)
            _check_server(url, server)
            try:
                self.client: Any = chromadb.HttpClient(
                    host=server.host, port=server.port, ssl=server.ssl, settings=chroma_settings
                )
            except ValueError as exc:  # chromadb's "Could not connect to a Chroma server ..."
                raise _unavailable(url, server, str(exc)) from exc
            _bound_connect_timeout(self.client)
        else:
            if path is None:
                raise ValueError("a local Chroma index needs a path")
            path.mkdir(parents=True, exist_ok=True)
            self.client = chromadb.PersistentClient(path=str(path), settings=chroma_settings)
        self.collection = self._open(collection)
        max_batch = int(getattr(self.client, "get_max_batch_size", lambda: MAX_BATCH)() or 0)
        self.batch_size = max(1, min(max_batch or MAX_BATCH, MAX_BATCH))
        self.page_size = PAGE_SIZE

    def _open(self, name: str) -> Any:
        return self.client.get_or_create_collection(
            name=name, embedding_function=None, configuration={"hnsw": {"space": "cosine"}}
        )

    def replace_collection(
        self,
        ids: Sequence[str],
        embeddings: Sequence[Sequence[float]],
        metadatas: Sequence[dict[str, Any]],
    ) -> int:
        """Write these vectors to a fresh collection (a new HNSW index) that then takes this
        collection's name; the old one is deleted. Returns the new collection's count."""
        name = self.collection.name
        staging = f"{name[:50]}-rebuild"
        # left by an interrupted rebuild (chromadb raises different types for "not found")
        with contextlib.suppress(Exception):
            self.client.delete_collection(staging)
        old = self.collection
        self.collection = self._open(staging)
        try:
            self.upsert(ids, embeddings, metadatas)
        except BaseException:
            self.collection = old
            raise
        self.client.delete_collection(name)
        self.collection.modify(name=name)
        return self.count()

    def count(self) -> int:
        return int(self.collection.count())

    def upsert(
        self,
        ids: Sequence[str],
        embeddings: Sequence[Sequence[float]],
        metadatas: Sequence[dict[str, Any]],
    ) -> None:
        if not (len(ids) == len(embeddings) == len(metadatas)):
            raise ValueError(
                "ids, embeddings and metadatas must have the same length, got "
                f"{len(ids)}, {len(embeddings)} and {len(metadatas)}"
            )
        step = self.batch_size
        for start in range(0, len(ids), step):
            end = start + step
            self.collection.upsert(
                ids=list(ids[start:end]),
                # one float32 matrix: what Chroma converts every vector to anyway
                embeddings=np.asarray(embeddings[start:end], dtype=np.float32),
                metadatas=list(metadatas[start:end]),
            )

    def query(
        self,
        embedding: Sequence[float],
        n_results: int,
        where: dict[str, Any] | None = None,
        *,
        include_metadata: bool = True,
    ) -> list[VectorHit]:
        """Nearest vectors (best first). ``include_metadata=False`` skips reading the hits'
        metadata (their ``metadata`` is then empty): cheaper when only ids and scores matter."""
        if n_results <= 0:
            return []
        result = self.collection.query(
            query_embeddings=[list(map(float, embedding))],
            n_results=n_results,
            where=where or None,
            include=["metadatas", "distances"] if include_metadata else ["distances"],
        )
        ids = result["ids"][0] if result["ids"] else []
        distances = (result.get("distances") or [[]])[0]
        metas = (result.get("metadatas") or [[]])[0] if include_metadata else [None] * len(ids)
        return [
            VectorHit(chunk_id=i, score=1.0 - float(d), metadata=dict(m or {}))
            for i, d, m in zip(ids, distances, metas, strict=False)
        ]

    def metadatas(self, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The stored metadata of these vectors (those that exist), by id."""
        found: dict[str, dict[str, Any]] = {}
        step = self.batch_size
        for start in range(0, len(ids), step):
            got = self.collection.get(ids=list(ids[start : start + step]), include=["metadatas"])
            for chunk_id, meta in zip(got["ids"], got.get("metadatas") or [], strict=False):
                found[chunk_id] = dict(meta or {})
        return found

    def delete_document(self, doc_id: str, keep_version: int | None = None) -> None:
        """Remove a document's vectors (all versions, or all but ``keep_version``)."""
        where: dict[str, Any] = {"doc_id": doc_id}
        if keep_version is not None:
            where = {"$and": [{"doc_id": doc_id}, {"version": {"$ne": keep_version}}]}
        self.collection.delete(where=where)

    def delete_ids(self, ids: Sequence[str]) -> None:
        step = self.batch_size
        for start in range(0, len(ids), step):
            self.collection.delete(ids=list(ids[start : start + step]))

    def all_ids(self) -> set[str]:
        ids: set[str] = set()
        offset, page = 0, self.page_size
        while True:
            got = self.collection.get(include=[], limit=page, offset=offset)
            batch = got["ids"]
            ids.update(batch)
            if len(batch) < page:
                return ids
            offset += page
