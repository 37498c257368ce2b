"""One typed chunk record from retrieval to synthesis (rag_app/retrieval/record.py).

A retrieved node's metadata is the serialised :class:`ChunkRecord`; only the record module reads
or writes it. Checked on the source with ``ast``: outside the allow-list below, no module of
rag_app touches any ``<x>.metadata`` attribute at all: ``x.metadata[...]``,
``x.metadata.get(...)``, ``dict(x.metadata)`` and an alias ``m = x.metadata`` are all reads.

The allow-list, and why each entry reads metadata that is not a retrieved chunk's:

* ``rag_app/retrieval/record.py``: the accessor itself.
* ``rag_app/readers/``: a reader writes (and a converted file's reader tags) the *document's*
  metadata (file type, pages, converted_by), before any chunk exists.
* ``rag_app/chunking/nodes.py``, ``rag_app/chunking/baselines.py``: the node parsers read the
  document's metadata (``fmt``, ``title``, the baselines' ``header_path``) and write each new
  chunk's metadata; ingestion-side nodes, never retrieved.
* ``rag_app/ingestion/pipeline.py``, ``rag_app/ingestion/service.py``: the parsed document's
  ``doc_id``/``tenant``/pages, the chunker's nodes turned into ledger rows, and the vector
  store's metadata rows on upsert: the ingestion side of the ledger, not retrieval's record.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from llama_index.core.schema import NodeWithScore

from rag_app.postprocess.neighbors import NeighborExpansion
from rag_app.postprocess.rerank import LexicalReranker
from rag_app.query import node_to_source
from rag_app.retrieval.hybrid import chunk_to_node
from rag_app.retrieval.record import ChunkRecord, chunk_node, record_of, with_fields
from rag_app.retrieval.stats import TermStatistics
from rag_app.types import ChunkInfo

ROOT = Path(__file__).resolve().parents[1]
ALLOWED_FILES = {
    "rag_app/retrieval/record.py",
    "rag_app/chunking/nodes.py",
    "rag_app/chunking/baselines.py",
    "rag_app/ingestion/pipeline.py",
    "rag_app/ingestion/service.py",
}
ALLOWED_FOLDERS = ("rag_app/readers/",)


def metadata_reads(source: str) -> list[int]:
    """Lines where the source reads an attribute named ``metadata`` (any load of it)."""
    return sorted(
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Attribute)
        and node.attr == "metadata"
        and isinstance(node.ctx, ast.Load)
    )


def test_the_checker_finds_every_form_of_read() -> None:
    source = "\n".join(
        [
            'a = n.node.metadata["title_path"]',
            'b = n.node.metadata.get("title_path", "")',
            "m = node.metadata",
            "c = dict(n.node.metadata)",
            'd = {"metadata": 1}["metadata"]',  # a key named metadata: not a node's
            "Response('x', metadata={'result': 1})",  # a keyword argument: not a read
            "self.vectors.metadatas([])",
        ]
    )
    assert metadata_reads(source) == [1, 2, 3, 4]


def test_no_module_reads_node_metadata_outside_the_accessor() -> None:
    found = []
    for path in sorted((ROOT / "rag_app").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel in ALLOWED_FILES or rel.startswith(ALLOWED_FOLDERS):
            continue
        found += [f"{rel}:{line}" for line in metadata_reads(path.read_text(encoding="utf-8"))]
    assert found == [], "read chunk fields through rag_app.retrieval.record.record_of"


def test_every_allowed_file_exists() -> None:
    """An allow-list entry whose file moved would silently allow nothing (or the new place)."""
    assert all((ROOT / rel).is_file() for rel in ALLOWED_FILES)
    assert all((ROOT / folder).is_dir() for folder in ALLOWED_FOLDERS)


def chunk(index: int, text: str, **fields: object) -> ChunkInfo:
    return ChunkInfo(
        chunk_id=f"doc:2:{index}", doc_id="doc", version=2, chunk_index=index, text=text,
        title_path="第一章 > 第三条", start_char=100 * index, end_char=100 * index + len(text),
        **fields,  # type: ignore[arg-type]
    )  # fmt: skip


def test_the_record_written_by_the_retriever_is_the_one_read_back() -> None:
    info = chunk(3, "| 年龄 | 保费 |\n| 30 | 710 |", prefix_chars=12, block_types="table")
    extra = {"dense_rank": 2, "keyword_rank": 0, "dense_score": 0.81, "keyword_score": 0.0}
    node = NodeWithScore(node=chunk_to_node(info, "/kb/条款.md", "alpha", extra), score=0.5)
    record = record_of(node.node)
    assert record.chunk(node.node.get_content()) == info
    assert (record.source, record.tenant, record.dense_rank) == ("/kb/条款.md", "alpha", 2)
    assert node.node.node_id == record.chunk_id == "doc:2:3"
    source = node_to_source(node)
    assert (source.doc_id, source.chunk_index, source.version) == ("doc", 3, 2)
    assert (source.prefix_chars, source.block_types, source.tenant) == (12, "table", "alpha")
    assert source.score == 0.5 and source.chunk_parts == []


def test_a_source_and_a_ledger_chunk_get_every_field_the_record_shares() -> None:
    """A field added to Source or ChunkInfo that the record lacks would silently stay at its
    default: the fields each leaves out are listed here."""
    from rag_app.types import Source

    assert set(Source.model_fields) - set(ChunkRecord.model_fields) == {"text", "score"}
    left_out = {"text", "token_count", "pages", "ocr"}  # not carried by retrieval (as before)
    assert set(ChunkInfo.model_fields) - set(ChunkRecord.model_fields) == left_out


def test_a_later_stage_writes_through_the_record() -> None:
    node = chunk_node(ChunkRecord(chunk_id="c", doc_id="d", version=1, chunk_index=0,
                                  start_char=0, end_char=4), "正文内容")  # fmt: skip
    scored = with_fields(node, retrieval_score=0.25, rerank_coverage=0.5)
    assert (record_of(scored).retrieval_score, record_of(scored).rerank_coverage) == (0.25, 0.5)
    assert record_of(node).retrieval_score is None  # the original node is left as it was
    with pytest.raises(TypeError, match="no field retrieval_scor"):
        with_fields(node, retrieval_scor=0.25)
    with pytest.raises(ValueError):
        with_fields(node, rerank_coverage="high")


def test_the_reranker_keeps_the_record_and_adds_its_scores() -> None:
    nodes = [
        NodeWithScore(node=chunk_to_node(chunk(i, t), "/kb/a.md", "default", {}), score=s)
        for i, (t, s) in enumerate([("住院津贴每日100元。", 0.9), ("年度体检一次。", 0.4)])
    ]
    reranker = LexicalReranker(stats=TermStatistics(None), top_n=2)
    ranked = reranker.postprocess_nodes(nodes, query_str="体检几次？")
    records = {record_of(n.node).chunk_id: record_of(n.node) for n in ranked}
    assert records["doc:2:1"].retrieval_score == 0.4
    assert records["doc:2:1"].rerank_coverage is not None
    assert records["doc:2:1"].title_path == "第一章 > 第三条"


class _Ledger:
    """The next chunk of the document (what NeighborExpansion asks a ledger for)."""

    def __init__(self, chunks: list[ChunkInfo]) -> None:
        self.chunks = {c.chunk_index: c for c in chunks}

    def active_chunks_at(self, doc_id: str, indexes: list[int]) -> dict[int, ChunkInfo]:
        return {i: self.chunks[i] for i in indexes if i in self.chunks}


def test_merged_evidence_carries_one_record_of_the_run() -> None:
    first, second = chunk(0, "第三条 下列情形", suffix_chars=0), chunk(1, "不予赔付。")
    hit = NodeWithScore(node=chunk_to_node(first, "/kb/a.md", "alpha", {"dense_rank": 1}), score=1)
    merged = NeighborExpansion(_Ledger([first, second])).postprocess_nodes([hit])  # type: ignore[arg-type]
    record = record_of(merged[0].node)
    assert record.expanded and record.chunk_ids == "doc:2:0,doc:2:1"
    assert (record.start_char, record.end_char) == (first.start_char, second.end_char)
    assert record.dense_rank == 1 and record.tenant == "alpha"  # the hit's fields carried on
    assert node_to_source(merged[0]).chunk_parts == [(0, 0, 0), (1, len(first.text) + 1, 0)]
