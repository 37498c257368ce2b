"""NeighborExpansion: add the next (and optionally previous) chunk of a hit's document.

A hit is *cut* when it ends inside a table or a list that continues in the next chunk, or in the
middle of a sentence. The following chunk is then fetched from the ledger (active version only);
contiguous chunks of one document are merged into one evidence node (the repeated prefix of the
later chunk, e.g. a table header, is dropped), duplicates are removed and the total context stays
within a character budget.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle
from pydantic import Field, PrivateAttr

from rag_app.retrieval.record import ChunkRecord, chunk_node, record_of
from rag_app.store.protocols import ChunkReader
from rag_app.types import ChunkInfo

TERMINALS = tuple("。！？；.!?;”」）)】") + ("|", "```")


def body_of(chunk: ChunkInfo) -> str:
    return chunk.text[chunk.prefix_chars : len(chunk.text) - chunk.suffix_chars]


def is_cut(chunk: ChunkInfo, following: ChunkInfo | None) -> bool:
    """Does ``chunk`` end in the middle of something that ``following`` continues?"""
    if following is None or following.title_path != chunk.title_path:
        return False
    kinds, next_kinds = set(chunk.block_types.split(",")), set(following.block_types.split(","))
    if "table" in kinds and "table" in next_kinds and following.prefix_chars > 0:
        return True
    if "list" in kinds and "list" in next_kinds and following.prefix_chars > 0:
        return True
    return not body_of(chunk).rstrip().endswith(TERMINALS)


def merge_parts(run: Sequence[ChunkInfo]) -> tuple[str, list[tuple[int, int, int]]]:
    """The merged text of contiguous chunks (the first whole, later ones without their prefix)
    and, for each chunk, ``(chunk_index, offset, base)``:
    its part starts at ``offset`` of the merged text, and merged position ``m`` of it is
    position ``m - offset + base`` of the chunk's own text (a citation of merged evidence
    points back into the chunk the chunk viewer shows)."""
    pieces: list[str] = []
    parts: list[tuple[int, int, int]] = []
    at = 0
    for i, chunk in enumerate(run):
        start = 0 if i == 0 else chunk.prefix_chars
        end = len(chunk.text) if i == len(run) - 1 else len(chunk.text) - chunk.suffix_chars
        raw = chunk.text[start:end]
        piece = raw.strip("\n")
        lead = len(raw) - len(raw.lstrip("\n"))
        if pieces:
            at += 1  # the joining newline
        parts.append((chunk.chunk_index, at, start + lead))
        pieces.append(piece)
        at += len(piece)
    return "\n".join(pieces), parts


class NeighborExpansion(BaseNodePostprocessor):
    """Expand cut hits with their neighbours, merge contiguous chunks, keep a context budget."""

    mode: Literal["auto", "always", "never"] = Field("auto")
    include_previous: bool = Field(False)
    context_budget: int = Field(6000, gt=0, description="Max characters of merged evidence.")
    _ledger: ChunkReader = PrivateAttr()

    def __init__(self, ledger: ChunkReader, **data: Any) -> None:
        super().__init__(**data)
        self._ledger = ledger

    @classmethod
    def class_name(cls) -> str:
        return "NeighborExpansion"

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        if not nodes:
            return []
        hits: dict[str, ChunkInfo] = {}
        score_of: dict[str, float] = {}
        record_of_hit: dict[str, ChunkRecord] = {}
        for n in nodes:  # deduplicate by chunk id, keep the best score
            record = record_of(n.node)
            chunk = record.chunk(n.node.get_content())
            if chunk.chunk_id not in hits or (n.score or 0) > score_of[chunk.chunk_id]:
                hits[chunk.chunk_id] = chunk
                score_of[chunk.chunk_id] = float(n.score or 0.0)
                record_of_hit[chunk.chunk_id] = record
        order = list(hits)  # evidence order = best hit first
        by_doc: dict[str, dict[int, ChunkInfo]] = {}
        for chunk in hits.values():
            by_doc.setdefault(chunk.doc_id, {})[chunk.chunk_index] = chunk

        used = sum(len(c.text) for c in hits.values())
        if self.mode != "never":
            for chunk_id in order:
                chunk = hits[chunk_id]
                have = by_doc[chunk.doc_id]
                wanted = [chunk.chunk_index + 1]
                if self.include_previous:
                    wanted.append(chunk.chunk_index - 1)
                wanted = [i for i in wanted if i >= 0 and i not in have]
                if not wanted:
                    continue
                fetched = self._ledger.active_chunks_at(chunk.doc_id, wanted)
                following = fetched.get(chunk.chunk_index + 1)
                add = []
                if following is not None and (self.mode == "always" or is_cut(chunk, following)):
                    add.append(following)
                previous = fetched.get(chunk.chunk_index - 1)
                if previous is not None and self.include_previous:
                    add.append(previous)
                for extra in add:
                    cost = len(extra.text) - extra.prefix_chars
                    if used + cost > self.context_budget:
                        continue
                    used += cost
                    have[extra.chunk_index] = extra

        out: list[NodeWithScore] = []
        emitted: set[str] = set()
        for chunk_id in order:
            if chunk_id in emitted:
                continue
            chunk = hits[chunk_id]
            have = by_doc[chunk.doc_id]
            # contiguous chunks of the same section merge; a heading change starts a new node
            lo = hi = chunk.chunk_index
            while lo - 1 in have and have[lo - 1].title_path == chunk.title_path:
                lo -= 1
            while hi + 1 in have and have[hi + 1].title_path == chunk.title_path:
                hi += 1
            run = [have[i] for i in range(lo, hi + 1)]
            emitted.update(c.chunk_id for c in run)
            text, parts = merge_parts(run)
            record = record_of_hit[chunk_id].updated(
                chunk_id=run[0].chunk_id,
                chunk_index=run[0].chunk_index,
                chunk_parts=parts if len(run) > 1 else [],
                chunk_ids=",".join(c.chunk_id for c in run),
                start_char=run[0].start_char,
                end_char=max(c.end_char for c in run),
                prefix_chars=run[0].prefix_chars,
                suffix_chars=run[-1].suffix_chars,
                block_types=",".join(
                    sorted({k for c in run for k in c.block_types.split(",") if k})
                ),
                expanded=len(run) > 1,
            )
            best = max(score_of.get(c.chunk_id, float("-inf")) for c in run)
            out.append(NodeWithScore(node=chunk_node(record, text), score=best))
        return out
