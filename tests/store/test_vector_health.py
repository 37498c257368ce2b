"""rag doctor's vector health: self-recall on a small KB, and the rebuild after lost vectors."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rag_app import KnowledgeBase

ROOT = Path(__file__).resolve().parents[2]


def test_self_recall_drops_with_lost_vectors_and_the_rebuild_restores_them(
    tmp_path: Path,
    embed_model,  # type: ignore[no-untyped-def]
) -> None:
    with KnowledgeBase.open(tmp_path / "kb", embed_model=embed_model) as kb:
        assert kb.ingest([ROOT / "data" / "knowledge"]).failed == 0
        healthy = kb.doctor(repair=False, sample=1000)
        assert healthy["self_recall"] == 1.0
        assert healthy["self_recall_sampled"] == healthy["active_chunks"] > 20

        ids = sorted(kb.ledger.all_active_chunk_ids())
        lost = ids[::7]
        before = kb.vectors.collection.get(ids=lost, include=["embeddings"])
        originals = dict(zip(before["ids"], before["embeddings"], strict=True))
        kb.vectors.delete_ids(lost)

        sick = kb.doctor(repair=False, sample=1000)
        assert sick["missing_vectors"] == len(lost)
        assert sick["self_recall"] == round(1 - len(lost) / len(ids), 4)
        assert sick["rebuilt_vectors"] == 0  # report only

        fixed = kb.doctor(rebuild_vectors=True, sample=1000)
        assert fixed["rebuilt_vectors"] == len(ids)
        assert fixed["reembedded_vectors"] == len(lost)
        assert fixed["self_recall"] == 1.0
        assert kb.vectors.all_ids() == set(ids)
        after = kb.vectors.collection.get(ids=lost, include=["embeddings", "metadatas"])
        for chunk_id, vector, meta in zip(
            after["ids"], after["embeddings"], after["metadatas"], strict=True
        ):
            # re-embedded from the ledger's text as the pipeline embedded it (heading path + text)
            assert float(np.dot(vector, originals[chunk_id])) > 0.999
            assert meta["tenant"] == "default"
            assert chunk_id.startswith(f"{meta['doc_id']}:{meta['version']}:")
        assert kb.doctor(repair=False)["missing_vectors"] == 0


def test_rebuild_is_skipped_while_recall_is_healthy(tmp_path: Path, embed_model) -> None:  # type: ignore[no-untyped-def]
    with KnowledgeBase.open(tmp_path / "kb", embed_model=embed_model) as kb:
        kb.ingest([ROOT / "data" / "knowledge" / "常见问题FAQ.md"])
        result = kb.doctor(rebuild_vectors=True)
        assert result["self_recall"] == 1.0
        assert result["rebuilt_vectors"] == 0
