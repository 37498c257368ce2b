"""The optional cross-encoder reranker (RAG_RERANK=hf:<dir>), with a tiny model built here.

No cross-encoder ships inside a PyPI wheel and the tests never reach a model hub, so the model is
a one-layer BERT with random weights, saved with its own character vocabulary into a temporary
folder: what is tested is the loading and the wiring (the reranker orders the nodes by the
model's scores, keeps top_n, and the engine uses it), not the model's quality.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

TEXTS = [
    "员工密码每90天至少更换一次。",
    "连续5次输入错误密码的，账号将被锁定30分钟。",
    "机房应当配备不间断电源。",
    "报销须在三十日内提交。",
]
QUESTION = "密码多久更换一次？"


@pytest.fixture(scope="module")
def tiny_cross_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    folder = tmp_path_factory.mktemp("tiny-cross-encoder")
    chars = sorted({ch for text in [*TEXTS, QUESTION] for ch in text})
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *chars]
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    tokenizer = transformers.BertTokenizer(str(folder / "vocab.txt"))
    config = transformers.BertConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
        num_labels=1,
    )
    torch.manual_seed(0)
    transformers.BertForSequenceClassification(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def test_nodes_are_ordered_by_the_models_scores(tiny_cross_encoder: Path) -> None:
    from sentence_transformers import CrossEncoder

    from rag_app.postprocess.rerank import CrossEncoderReranker

    nodes = [
        NodeWithScore(node=TextNode(text=t, id_=f"n{i}"), score=0.0) for i, t in enumerate(TEXTS)
    ]
    reranker = CrossEncoderReranker(model_path=str(tiny_cross_encoder), top_n=3)
    ranked = reranker.postprocess_nodes(nodes, query_bundle=QueryBundle(QUESTION))

    reference = CrossEncoder(str(tiny_cross_encoder), device="cpu").predict(
        [(QUESTION, t) for t in TEXTS]
    )
    expected = sorted(range(len(TEXTS)), key=lambda i: -float(reference[i]))[:3]
    assert [n.node.node_id for n in ranked] == [f"n{i}" for i in expected]
    assert [n.score for n in ranked] == pytest.approx([float(reference[i]) for i in expected])


def test_missing_folder_names_the_setting(tmp_path: Path) -> None:
    from rag_app.postprocess.rerank import CrossEncoderReranker

    with pytest.raises(RuntimeError, match="RAG_RERANK=hf:"):
        CrossEncoderReranker(model_path=str(tmp_path / "absent"), top_n=3)


def test_the_engine_answers_with_the_cross_encoder(
    tiny_cross_encoder: Path, tmp_path: Path, embed_model
) -> None:  # type: ignore[no-untyped-def]
    from rag_app import KnowledgeBase
    from rag_app.config import Settings

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "policy.md").write_text("# 密码\n\n" + "\n\n".join(TEXTS) + "\n", encoding="utf-8")
    settings = Settings(rerank=f"hf:{tiny_cross_encoder}", gate=False)
    kb = KnowledgeBase.open(tmp_path / "kb", settings=settings, embed_model=embed_model)
    try:
        kb.ingest([docs])
        answer = kb.ask(QUESTION, top_k=3)
        assert not answer.refused and answer.sources
        # the sources' scores are the cross-encoder's scores of (question, chunk)
        from sentence_transformers import CrossEncoder

        model = CrossEncoder(str(tiny_cross_encoder), device="cpu")
        expected = model.predict([(QUESTION, s.text) for s in answer.sources])
        assert [s.score for s in answer.sources] == pytest.approx([float(x) for x in expected])
    finally:
        kb.close()
