"""Pseudo-relevance feedback on the keyword branch: terms of the top fused chunks, in scope."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_app.retrieval.prf import expansion_terms
from rag_app.retrieval.record import record_of


def flat_idf(terms: list[str]) -> dict[str, float]:
    return dict.fromkeys(terms, 1.0)


def test_expansion_terms_come_from_several_feedback_chunks_and_skip_the_question():
    feedback = [
        ("夫妻共同债务由双方共同偿还。", 2.0),
        ("夫妻共同债务的认定：婚姻关系存续期间所负债务。", 1.0),
        ("差旅住宿标准为每晚五百元。", 0.5),
    ]
    terms = [t for t, _ in expansion_terms(["债务"], feedback, flat_idf, terms=5)]
    assert "夫妻" in terms and "共同" in terms
    assert "债务" not in terms  # already asked
    assert "差旅" not in terms  # in one feedback chunk only
    assert all(len(t) >= 2 for t in terms)


def test_article_labels_and_numbers_are_never_expansion_terms():
    feedback = [("第三十三条 夫妻财产约定 2020年", 1.0), ("第三十三条 夫妻财产 2020年", 1.0)]
    terms = [t for t, _ in expansion_terms([], feedback, flat_idf, terms=10)]
    assert terms and not any(t.startswith("第") or t[0].isdigit() for t in terms)
    assert "三十" not in terms and "三十三" not in terms


@pytest.fixture
def two_tenants(kb, tmp_path: Path):  # type: ignore[no-untyped-def]
    alpha, beta = tmp_path / "alpha", tmp_path / "beta"
    alpha.mkdir()
    beta.mkdir()
    (alpha / "a.md").write_text(
        "# 租房\n\n房东退还押金的期限为退租后七日。押金纠纷可以向街道调解委员会申请调解。\n",
        encoding="utf-8",
    )
    (alpha / "b.md").write_text(
        "# 押金\n\n押金退还争议，租客可以向调解委员会申请调解，也可以起诉。\n", encoding="utf-8"
    )
    # the other tenant's documents share the question's words and add a term of their own
    for i in range(3):
        (beta / f"c{i}.md").write_text(
            f"# 押金{i}\n\n押金退还押金退还：房东押金退还仲裁庭甲乙丙处理押金退还。\n",
            encoding="utf-8",
        )
    assert kb.ingest([alpha], tenant="alpha").failed == 0
    assert kb.ingest([beta], tenant="beta").failed == 0
    return kb


def test_feedback_terms_never_cross_tenants(two_tenants):
    kb = two_tenants
    alpha_text = "".join(
        ch.text for d in kb.documents.list(tenant="alpha") for ch in kb.documents.chunks(d.doc_id)
    ).lower()
    for mode in ("hybrid", "keyword"):
        retriever = kb.retriever("alpha", top_k=5, mode=mode, prf_docs=3, prf_terms=20)
        hits = retriever.retrieve("房东不退押金怎么办")
        assert hits and all(record_of(h.node).tenant == "alpha" for h in hits)
        assert retriever.last_expansion, "feedback found no term at all"
        # every added term occurs in the caller's own documents; beta's own term never comes in
        assert all(t in alpha_text for t in retriever.last_expansion)
        assert not any("仲裁" in t for t in retriever.last_expansion)


def test_feedback_chunks_outside_the_scope_are_dropped(two_tenants):
    """Even handed a ranking that holds another tenant's chunks, feedback reads only its own."""
    from rag_app.retrieval.prf import feedback_chunks
    from rag_app.retrieval.scope import Scope

    kb = two_tenants
    beta = kb.ledger.keyword_search_ranked(["押金"], tenant="beta", limit=10)
    alpha = kb.ledger.keyword_search_ranked(["押金"], tenant="alpha", limit=10)
    assert beta and alpha
    texts = [t for t, _ in feedback_chunks(kb.ledger, Scope("alpha"), beta + alpha, {}, 10)]
    assert len(texts) == len(alpha) and not any("仲裁" in t for t in texts)
    only_b = [d.doc_id for d in kb.documents.list(tenant="alpha") if d.rel_path == "b.md"]
    scoped = feedback_chunks(kb.ledger, Scope("alpha", tuple(only_b)), alpha, {}, 10)
    assert [t for t, _ in scoped] and all("租客" in t for t, _ in scoped)


def test_feedback_is_off_by_default_and_settings_switch_it_on(kb, tmp_path: Path):
    from rag_app import KnowledgeBase

    assert kb.retriever().prf_docs == 0
    other = KnowledgeBase.open(tmp_path / "kb2", embed_model=kb.embed_model, keyword_prf=True)
    try:
        assert other.retriever().prf_docs == 3
    finally:
        other.close()
