"""VectorStore on both backends: a local PersistentClient and a real ``chroma run`` server.

Vectors are always passed in (never text): Chroma would otherwise try to download a model.
"""

from __future__ import annotations

import http.server
import math
import random
import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest

from rag_app.retrieval.scope import Scope
from rag_app.store import vectors as vectors_mod
from rag_app.store.vectors import (
    ChromaUnavailableError,
    VectorHit,
    VectorStore,
    parse_chroma_url,
)
from tests.store.conftest import free_port, unique_collection

DIM = 8

Rows = tuple[list[str], list[list[float]], list[dict[str, Any]]]


def chunks(doc_id: str, version: int, n: int, tenant: str = "t1", seed: int = 0) -> Rows:
    """``n`` chunk rows shaped like the ingest pipeline's (ids ``doc:version:index``)."""
    rng = random.Random(f"{doc_id}/{version}/{seed}")
    ids = [f"{doc_id}:{version}:{i}" for i in range(n)]
    embeddings = [[rng.uniform(-1, 1) for _ in range(DIM)] for _ in range(n)]
    metas = [
        {"tenant": tenant, "doc_id": doc_id, "version": version, "chunk_index": i} for i in range(n)
    ]
    return ids, embeddings, metas


def put(store: VectorStore, *rows: Rows) -> None:
    for ids, embeddings, metas in rows:
        store.upsert(ids, embeddings, metas)


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


def axis(i: int, scale: float = 1.0) -> list[float]:
    v = [0.0] * DIM
    v[i] = scale
    return v


class Spy:
    """Delegates to a Chroma collection and records (method, kwargs) of every call."""

    def __init__(self, target: Any) -> None:
        self._target = target
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._target, name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls.append((name, kwargs))
            return attr(*args, **kwargs)

        return call

    def sizes(self, method: str, key: str = "ids") -> list[int]:
        return [len(kw[key]) for name, kw in self.calls if name == method]


# ----- both backends ------------------------------------------------------------------------
def test_upsert_and_count(store: VectorStore) -> None:
    assert store.count() == 0
    put(store, chunks("a", 1, 3), chunks("b", 1, 2))
    assert store.count() == 5
    # upserting the same ids again replaces them (no duplicates), metadata included
    ids, embeddings, metas = chunks("a", 1, 3)
    store.upsert(ids, embeddings, [{**m, "tenant": "t9"} for m in metas])
    assert store.count() == 5
    hits = store.query(embeddings[0], 10, where={"tenant": "t9"})
    assert sorted(h.chunk_id for h in hits) == sorted(ids)


def test_query_nearest_by_cosine_with_scores_and_metadata(store: VectorStore) -> None:
    vecs = {
        "same": axis(0, 7.0),  # same direction, different norm: cosine 1
        "near": [1.0, 0.3] + [0.0] * (DIM - 2),
        "diag": [1.0, 1.0] + [0.0] * (DIM - 2),
        "orth": axis(1),
        "opposite": axis(0, -1.0),
    }
    metas = {
        name: {"tenant": "t1", "doc_id": name, "version": 1, "chunk_index": i, "w": 0.5, "ok": True}
        for i, name in enumerate(vecs)
    }
    store.upsert(list(vecs), list(vecs.values()), [metas[n] for n in vecs])
    query = axis(0, 0.2)
    hits = store.query(query, n_results=len(vecs))
    assert all(isinstance(h, VectorHit) for h in hits)
    expected = sorted(vecs, key=lambda n: -cosine(query, vecs[n]))
    assert [h.chunk_id for h in hits] == expected
    for hit in hits:
        assert hit.score == pytest.approx(cosine(query, vecs[hit.chunk_id]), abs=1e-4)
        assert hit.metadata == metas[hit.chunk_id]
    assert hits[0].score == pytest.approx(1.0, abs=1e-5)
    assert hits[-1].score == pytest.approx(-1.0, abs=1e-4)
    assert isinstance(hits[0].metadata["version"], int)
    # n_results limits; more than stored returns what there is
    assert [h.chunk_id for h in store.query(query, 2)] == expected[:2]
    assert len(store.query(query, 100)) == len(vecs)
    assert store.query(query, 0) == []


def test_query_empty_collection_and_no_match(store: VectorStore) -> None:
    assert store.query(axis(0), 5) == []
    put(store, chunks("a", 1, 3))
    assert store.query(axis(0), 5, where={"tenant": "nobody"}) == []


def test_where_tenant_never_returns_another_tenants_best_match(store: VectorStore) -> None:
    query = axis(0)
    t1_ids, t1_vecs, t1_metas = chunks("a", 1, 6, tenant="t1")
    put(
        store,
        (t1_ids, t1_vecs, t1_metas),
        (
            ["secret:1:0"],
            [axis(0, 3.0)],
            [{"tenant": "t2", "doc_id": "secret", "version": 1, "chunk_index": 0}],
        ),
        chunks("other", 1, 4, tenant="t2"),
    )
    # unfiltered, the other tenant's vector is the best match ...
    assert store.query(query, 1)[0].chunk_id == "secret:1:0"
    # ... but never comes back within tenant t1, however many results are asked for
    for where in (Scope("t1").chroma_where(), {"tenant": "t1"}):
        for n in (1, 3, 50):
            hits = store.query(query, n, where=where)
            assert len(hits) == min(n, len(t1_ids))
            assert {h.metadata["tenant"] for h in hits} == {"t1"}
            assert "secret:1:0" not in {h.chunk_id for h in hits}
    hits = store.query(query, 50, where=Scope("t1").chroma_where())
    assert [h.chunk_id for h in hits] == sorted(
        t1_ids, key=lambda i: -cosine(query, t1_vecs[t1_ids.index(i)])
    )


def test_where_doc_ids(store: VectorStore) -> None:
    query = axis(0)
    put(
        store,
        chunks("a", 1, 3),
        chunks("b", 1, 3),
        chunks("c", 1, 3),
        (
            ["secret:1:0"],
            [axis(0)],
            [{"tenant": "t2", "doc_id": "secret", "version": 1, "chunk_index": 0}],
        ),
    )
    # $in alone
    hits = store.query(query, 50, where={"doc_id": {"$in": ["a", "secret"]}})
    assert {h.metadata["doc_id"] for h in hits} == {"a", "secret"}
    assert hits[0].chunk_id == "secret:1:0"
    # $and [tenant, doc_id $in], as the retriever's Scope builds it
    where = Scope("t1", doc_ids=("a", "c", "secret")).chroma_where()
    assert where == {"$and": [{"tenant": "t1"}, {"doc_id": {"$in": ["a", "c", "secret"]}}]}
    hits = store.query(query, 50, where=where)
    assert {h.metadata["doc_id"] for h in hits} == {"a", "c"}
    assert len(hits) == 6
    hits = store.query(query, 50, where=Scope("t1", doc_ids=("b",)).chroma_where())
    assert sorted(h.chunk_id for h in hits) == ["b:1:0", "b:1:1", "b:1:2"]


def test_delete_document_removes_all_versions(store: VectorStore) -> None:
    put(store, chunks("d", 1, 3), chunks("d", 2, 4), chunks("e", 1, 2))
    store.delete_document("d")
    assert store.all_ids() == {"e:1:0", "e:1:1"}
    store.delete_document("d")  # nothing left to delete: no error
    store.delete_document("never-existed")
    assert store.count() == 2


def test_delete_document_keep_version(store: VectorStore) -> None:
    put(store, chunks("d", 1, 3), chunks("d", 2, 4), chunks("d", 3, 2), chunks("e", 1, 2))
    store.delete_document("d", keep_version=2)
    assert store.all_ids() == {f"d:2:{i}" for i in range(4)} | {"e:1:0", "e:1:1"}
    hits = store.query(axis(0), 50, where={"doc_id": "d"})
    assert {h.metadata["version"] for h in hits} == {2}


def test_delete_ids(store: VectorStore) -> None:
    ids, _, _ = rows = chunks("a", 1, 6)
    put(store, rows)
    store.delete_ids([ids[0], ids[3], "no-such-id"])
    assert store.all_ids() == set(ids) - {ids[0], ids[3]}
    store.delete_ids([])  # no-op (Chroma rejects an empty id list)
    assert store.count() == 4


def test_delete_ids_in_batches(store: VectorStore) -> None:
    ids, _, _ = rows = chunks("a", 1, 11)
    put(store, rows)
    store.batch_size = 4
    spy = Spy(store.collection)
    store.collection = spy  # type: ignore[assignment]
    store.delete_ids(ids[:9])
    assert spy.sizes("delete") == [4, 4, 1]
    assert store.all_ids() == set(ids[9:])


@pytest.mark.parametrize("n", [9, 10])  # an exact multiple of the page size, and one more
def test_all_ids_pages(store: VectorStore, n: int) -> None:
    ids, _, _ = rows = chunks("a", 1, n)
    put(store, rows)
    store.page_size = 3
    spy = Spy(store.collection)
    store.collection = spy  # type: ignore[assignment]
    assert store.all_ids() == set(ids)
    gets = [kw for name, kw in spy.calls if name == "get"]
    assert len(gets) == n // 3 + 1
    assert [kw["offset"] for kw in gets] == [0, 3, 6, 9][: len(gets)]
    assert all(kw["limit"] == 3 for kw in gets)


def test_all_ids_default_page(store: VectorStore) -> None:
    assert store.all_ids() == set()
    ids, _, _ = rows = chunks("a", 1, 5)
    put(store, rows)
    assert store.all_ids() == set(ids)


def test_upsert_in_batches(store: VectorStore) -> None:
    assert 1 <= store.batch_size <= store.client.get_max_batch_size()
    ids, embeddings, metas = chunks("a", 1, 10)
    store.batch_size = 4
    spy = Spy(store.collection)
    store.collection = spy  # type: ignore[assignment]
    store.upsert(ids, embeddings, metas)
    assert spy.sizes("upsert") == [4, 4, 2]
    assert store.count() == 10
    assert store.all_ids() == set(ids)
    hit = store.query(embeddings[9], 1)[0]
    assert (hit.chunk_id, hit.metadata) == (ids[9], metas[9])


def test_upsert_accepts_float32_like_sequences(store: VectorStore) -> None:
    import numpy as np

    ids, embeddings, metas = chunks("a", 1, 3)
    store.upsert(ids, np.asarray(embeddings, dtype=np.float32), metas)  # type: ignore[arg-type]
    assert store.query(np.float32(embeddings[1]), 1)[0].chunk_id == ids[1]  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "lengths", [(3, 2, 3), (3, 3, 2), (2, 3, 3), (0, 1, 0)], ids=["emb", "meta", "ids", "empty"]
)
def test_mismatched_lengths_raise(store: VectorStore, lengths: tuple[int, int, int]) -> None:
    ids, embeddings, metas = chunks("a", 1, 3)
    n_ids, n_emb, n_meta = lengths
    with pytest.raises(ValueError, match="same length"):
        store.upsert(ids[:n_ids], embeddings[:n_emb], metas[:n_meta])
    assert store.count() == 0


def test_upsert_nothing_is_a_noop(store: VectorStore) -> None:
    store.upsert([], [], [])
    assert store.count() == 0


def test_reopen_sees_the_same_collection(
    make_store: Callable[..., VectorStore], store: VectorStore
) -> None:
    ids, _, _ = rows = chunks("a", 1, 4)
    put(store, rows)
    again = make_store()
    assert again.all_ids() == set(ids)
    assert make_store(unique_collection()).count() == 0  # another collection sees nothing


# ----- server specifics ---------------------------------------------------------------------
def test_server_client_has_a_connect_timeout(chroma_server: str) -> None:
    """chromadb's HTTP session has no timeout at all; VectorStore bounds connects."""
    store = VectorStore(url=chroma_server, collection=unique_collection())
    session = store.client._server._session
    assert isinstance(session, httpx.Client)
    assert session.timeout.connect == vectors_mod.CONNECT_TIMEOUT_S
    assert session.timeout.read is None  # big upserts may take long
    store.client.delete_collection(store.collection.name)


def test_server_url_with_trailing_slash(chroma_server: str) -> None:
    name = unique_collection()
    store = VectorStore(url=chroma_server + "/", collection=name)
    put(store, chunks("a", 1, 2))
    assert VectorStore(url=chroma_server, collection=name).count() == 2
    store.client.delete_collection(name)


@pytest.mark.parametrize(
    "url",
    [
        "localhost:8000",
        "127.0.0.1:8000",
        "ftp://127.0.0.1:8000",
        "http://",
        "http://:8000",
        "http://127.0.0.1:notaport",
        "http://127.0.0.1:99999",
        "http://127.0.0.1:8000/chroma",
        "http://127.0.0.1:8000/?tenant=x",
        "http://user:secret@127.0.0.1:8000",
        "chroma",
    ],
)
def test_bad_url_raises_value_error(url: str) -> None:
    with pytest.raises(ValueError, match="RAG_CHROMA_URL must look like http://host:port") as info:
        VectorStore(url=url, collection=unique_collection())
    assert not isinstance(info.value, ChromaUnavailableError)  # rejected before any connection
    assert repr(url) in str(info.value)


def test_no_url_and_no_path_raises() -> None:
    with pytest.raises(ValueError, match="needs a path"):
        VectorStore(collection=unique_collection())


@pytest.mark.parametrize(
    ("url", "host", "port", "ssl"),
    [
        ("http://127.0.0.1:8123", "127.0.0.1", 8123, False),
        ("http://chroma.internal", "chroma.internal", 8000, False),
        ("https://chroma.example.com", "chroma.example.com", 443, True),
        ("https://chroma.example.com:9443/", "chroma.example.com", 9443, True),
        ("HTTP://LOCALHOST:8000", "localhost", 8000, False),
        ("http://[::1]:8000", "[::1]", 8000, False),
    ],
)
def test_parse_chroma_url(url: str, host: str, port: int, ssl: bool) -> None:
    server = parse_chroma_url(url)
    assert (server.host, server.port, server.ssl) == (host, port, ssl)


def _assert_useful(exc: BaseException, url: str) -> None:
    message = str(exc)
    assert f"RAG_CHROMA_URL={url}" in message
    assert "chroma run" in message
    assert isinstance(exc, ConnectionError)
    assert isinstance(exc, ValueError)  # what the CLI reports as a configuration error


def test_no_server_listening_fails_fast_with_a_clear_error() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    t0 = time.perf_counter()
    with pytest.raises(ChromaUnavailableError) as info:
        VectorStore(url=url, collection=unique_collection())
    assert time.perf_counter() - t0 < 5.0
    _assert_useful(info.value, url)
    assert "ConnectError" in str(info.value)


def test_chromadb_own_connection_error_is_wrapped(monkeypatch: pytest.MonkeyPatch) -> None:
    """Should the server vanish between the check and the client: chromadb's bare ValueError
    ("Could not connect to a Chroma server") is re-raised naming RAG_CHROMA_URL."""
    monkeypatch.setattr(vectors_mod, "_check_server", lambda url, server: None)
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(ChromaUnavailableError) as info:
        VectorStore(url=url, collection=unique_collection())
    _assert_useful(info.value, url)
    assert "Could not connect to a Chroma server" in str(info.value)


@pytest.fixture
def http_server() -> Iterator[Callable[[int, bytes], str]]:
    """A plain HTTP server on 127.0.0.1 answering every GET with a fixed status and body."""
    servers: list[http.server.ThreadingHTTPServer] = []

    def start(status: int, body: bytes) -> str:
        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize(
    ("status", "body"),
    [(404, b"not found"), (200, b"<html>hello</html>"), (200, b'{"status": "ok"}')],
    ids=["404", "html", "other-json"],
)
def test_not_a_chroma_server(
    http_server: Callable[[int, bytes], str], status: int, body: bytes
) -> None:
    url = http_server(status, body)
    with pytest.raises(ChromaUnavailableError, match="is this a Chroma server") as info:
        VectorStore(url=url, collection=unique_collection())
    _assert_useful(info.value, url)
    assert f"HTTP {status}" in str(info.value)


def test_server_that_never_answers_times_out(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vectors_mod, "HEARTBEAT_TIMEOUT_S", 0.5)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)  # the kernel accepts connections; nobody ever reads or answers
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        t0 = time.perf_counter()
        with pytest.raises(ChromaUnavailableError, match="no answer") as info:
            VectorStore(url=url, collection=unique_collection())
        assert time.perf_counter() - t0 < 5.0
    _assert_useful(info.value, url)


# ----- end to end: KnowledgeBase with its vectors on the server -----------------------------
POLICY_MD = """# 密码策略

员工密码每90天必须修改一次，长度不少于12位，并且包含大小写字母和数字。

## 账号锁定

连续输错5次密码后，账号锁定30分钟。
"""

OTHER_TENANT_MD = """# 密码策略（子公司）

子公司员工密码每90天必须修改一次，修改后不得与前三次相同。
"""


def test_knowledge_base_with_vectors_on_the_server(
    chroma_server: str, embed_model: Any, tmp_path: Path
) -> None:
    from rag_app.kb import KnowledgeBase

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "密码策略.md").write_text(POLICY_MD, encoding="utf-8")
    (docs / "子公司.md").write_text(OTHER_TENANT_MD, encoding="utf-8")
    name = unique_collection()
    kb_dir = tmp_path / "kb"
    kb = KnowledgeBase.open(
        kb_dir, chroma_url=chroma_server, collection=name, embed_model=embed_model
    )
    try:
        report = kb.ingest([docs / "密码策略.md"], tenant="t1")
        assert report.failed == 0, [f.reason for f in report.files]
        doc_id = report.files[0].doc_id
        assert doc_id
        other = kb.ingest([docs / "子公司.md"], tenant="t2")
        assert other.failed == 0, [f.reason for f in other.files]
        other_id = other.files[0].doc_id
        assert other_id

        # the ledger stays local; the vectors live on the server only
        assert (kb_dir / "ledger.db").is_file()
        assert not (kb_dir / "chroma").exists()
        remote = VectorStore(url=chroma_server, collection=name)
        chunk_ids = {c.chunk_id for c in kb.documents.chunks(doc_id)}
        assert chunk_ids
        other_chunks = {c.chunk_id for c in kb.documents.chunks(other_id)}
        assert remote.all_ids() == chunk_ids | other_chunks

        for mode in ("hybrid", "dense"):  # dense: only the server's vectors can find it
            sources = kb.retrieve("密码多久修改一次？", tenant="t1", mode=mode)
            assert sources, mode
            assert {s.doc_id for s in sources} == {doc_id}, mode
            assert any("90天" in s.text for s in sources), mode
            assert all(s.tenant == "t1" for s in sources)

        health = kb.doctor()
        assert health["orphan_vectors"] == health["missing_vectors"] == 0
        assert health["vectors"] == health["active_chunks"] == len(chunk_ids | other_chunks)

        # doctor removes a vector the ledger doesn't know, on the server
        dim = len(embed_model.get_query_embedding("维度"))
        remote.upsert(
            ["ghost:1:0"],
            [[0.1] * dim],
            [{"tenant": "t1", "doc_id": "ghost", "version": 1, "chunk_index": 0}],
        )
        assert kb.doctor()["orphan_vectors"] == 1
        assert "ghost:1:0" not in remote.all_ids()

        assert kb.documents.delete(doc_id) is True
        assert VectorStore(url=chroma_server, collection=name).all_ids() == other_chunks
        assert kb.retrieve("密码多久修改一次？", tenant="t1", mode="dense") == []
        health = kb.doctor()
        expected = {
            "active_chunks": len(other_chunks),
            "vectors": len(other_chunks),
            "orphan_vectors": 0,
            "missing_vectors": 0,
        }
        assert {key: health[key] for key in expected} == expected
    finally:
        kb.close()
        remote_client = VectorStore(url=chroma_server, collection=name).client
        remote_client.delete_collection(name)
