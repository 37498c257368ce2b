"""Fast paths of the query: unfiltered dense search when the ledger holds one tenant, and the
ranked keyword search. Both must return exactly what the filtered/joined versions return."""

from __future__ import annotations

import pytest

from rag_app.text.tokenizer import query_tokens

QUESTIONS = [
    "数据库服务器的IP地址是多少？",
    "报销须在多少日内提交？",
    "年假有几天",
    "密码多久修改一次",
    "第13条规定了什么",
]


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def one_tenant(kb, tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    _write(docs, "a.md", "# 运维\n\n数据库服务器的IP地址是10.8.8.8。\n\n密码每九十天修改一次。\n")
    _write(docs, "b.md", "# 财务\n\n报销须在三十日内提交。\n\n年假有十天。\n")
    _write(docs, "c.md", "# 条例\n\n第十三条 本条编号13。\n\n第十四条 本条编号14。\n")
    assert kb.ingest([docs], tenant="alpha").failed == 0
    return kb


def test_foreign_vectors_the_ledger_does_not_hold_never_leak(one_tenant):
    kb = one_tenant
    assert kb.ledger.only_tenant("alpha")
    question = "数据库服务器的IP地址是多少？"
    # vectors of another tenant that the ledger knows nothing about (a crash between the
    # Chroma write and the ledger commit), right on top of the query: the unfiltered search
    # finds them first
    query = kb.embed_model.get_query_embedding(question)
    ids = [f"ghost:{i}" for i in range(80)]
    kb.vectors.upsert(
        ids,
        [query] * len(ids),
        [{"tenant": "beta", "doc_id": "ghost", "version": 1, "chunk_index": i} for i in range(80)],
    )
    for mode in ("dense", "hybrid"):
        hits = kb.retrieve(question, top_k=3, tenant="alpha", mode=mode)
        assert hits and all(
            h.tenant == "alpha" and not h.chunk_id.startswith("ghost") for h in hits
        )
        assert "10.8.8.8" in hits[0].text
    # the filtered search decided: as many dense hits as the tenant has
    dense = kb.retriever("alpha", top_k=50, mode="dense").dense(question, 50)
    assert len(dense) == kb.vectors.count() - len(ids)
    assert kb.retrieve(question, top_k=3, tenant="beta") == []


def test_with_two_tenants_the_filter_is_used(one_tenant, tmp_path):
    kb = one_tenant
    _write(tmp_path, "d.md", "# 运维\n\n数据库服务器的IP地址是10.9.9.9。\n")
    kb.ingest([tmp_path / "d.md"], tenant="beta")
    assert not kb.ledger.only_tenant("alpha") and not kb.ledger.only_tenant("beta")
    for tenant, ip in (("alpha", "10.8.8.8"), ("beta", "10.9.9.9")):
        hits = kb.retrieve("数据库服务器的IP地址是多少？", top_k=5, tenant=tenant)
        assert hits and all(h.tenant == tenant for h in hits) and ip in hits[0].text


def test_unfiltered_and_filtered_dense_agree(one_tenant):
    kb = one_tenant
    retriever = kb.retriever("alpha", top_k=20, mode="dense")
    for q in QUESTIONS:
        fast = retriever.dense(q, 10)
        query = kb.embed_model.get_query_embedding(q)
        hits = kb.vectors.query(query, 20, where={"tenant": "alpha"})
        assert [c for c, _ in fast] == [h.chunk_id for h in hits][:10]


def test_ranked_keyword_search_equals_keyword_search(one_tenant, tmp_path):
    kb = one_tenant
    _write(tmp_path, "e.md", "# 财务\n\n报销须在十五日内提交。\n\n年假有五天。\n")
    kb.ingest([tmp_path / "e.md"], tenant="beta")
    docs = {d.rel_path: d.doc_id for d in kb.documents.list("alpha")}
    # a new version whose old version's rows are still there (inactive: a crash before cleanup)
    a = kb.documents.get(docs["a.md"])
    version = kb.ledger.begin_document(
        doc_id=a.doc_id,
        tenant="alpha",
        source=a.source,
        rel_path=a.rel_path,
        doc_type="markdown",
        size=1,
    )
    text = "数据库服务器的IP地址是10.7.7.7。"
    row = {
        "chunk_id": f"{a.doc_id}:{version}:0",
        "chunk_index": 0,
        "text": text,
        "start_char": 0,
        "end_char": len(text),
        "keywords": " ".join(query_tokens(text)),
    }
    kb.ledger.commit_version(
        doc_id=a.doc_id,
        tenant="alpha",
        version=version,
        rows=[row],
        content_hash="x",
        fingerprint="y",
        doc_type="markdown",
        title=None,
        source=a.source,
        size=1,
    )
    assert kb.ledger.purge_inactive(repair=False)[1] > 0
    for q in QUESTIONS:
        tokens = query_tokens(q)
        for tenant in ("alpha", "beta", "gamma"):
            for doc_ids in (None, [], [docs["a.md"]], list(docs.values())):
                for limit in (1, 3, 30):
                    args = {"tenant": tenant, "doc_ids": doc_ids, "limit": limit}
                    assert kb.ledger.keyword_search_ranked(
                        tokens, **args
                    ) == kb.ledger.keyword_search(tokens, **args), (q, args)
