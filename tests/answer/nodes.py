"""Evidence nodes for the answer-stage tests: retrieved chunks as the answer stage gets them."""

from __future__ import annotations

from llama_index.core.schema import NodeWithScore

from rag_app.retrieval.record import ChunkRecord, chunk_node


def evidence_node(text: str, title_path: str = "", n: int = 0) -> NodeWithScore:
    """Chunk ``n`` of a document ``d`` (its record written by :func:`chunk_node`)."""
    record = ChunkRecord(
        chunk_id=f"d:1:{n}", doc_id="d", version=1, chunk_index=n, title_path=title_path,
        start_char=0, end_char=len(text),
    )  # fmt: skip
    return NodeWithScore(node=chunk_node(record, text))
