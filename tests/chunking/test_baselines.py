from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from llama_index.core.schema import Document, MetadataMode, TextNode

from rag_app.chunking import (
    CHUNK_METADATA_KEYS,
    Chunk,
    FixedSizeNodeParser,
    SentenceNodeParser,
    count_tokens,
)
from rag_app.chunking.baselines import split_sentences_zh

from .helpers import check_chunks
from .samples import API_DOC, CLAUSE_TITLE, INSURANCE_CLAUSE, REGULATION_TEXT
from .test_properties import SEEDS, markdown_doc, text_doc


def chunks_of(parser: FixedSizeNodeParser | SentenceNodeParser, text: str, fmt: str) -> list[Chunk]:
    return parser._chunk(text, fmt, None)


class TestFixed:
    def test_windows_of_exactly_chunk_size_tokens_with_overlap(self) -> None:
        text = "".join(f"第{i}句保险条款内容。" for i in range(200))
        chunks = chunks_of(FixedSizeNodeParser(chunk_size=50, chunk_overlap=10), text, "text")
        check_chunks(text, chunks, 50)
        assert all(c.token_count == 50 for c in chunks[:-1])
        for a, b in zip(chunks, chunks[1:], strict=False):
            shared = text[b.start_char : a.end_char]
            assert count_tokens(shared) == 10
        assert all(c.title_path == [] and c.prefix_chars == 0 for c in chunks)

    def test_no_overlap(self) -> None:
        text = "保险" * 100
        chunks = chunks_of(FixedSizeNodeParser(chunk_size=30, chunk_overlap=0), text, "text")
        assert [c.end_char for c in chunks[:-1]] == [c.start_char for c in chunks[1:]]


class TestSentence:
    def test_sentence_splitter_on_chinese(self) -> None:
        assert split_sentences_zh("第一句。第二句！\n第三句") == [
            "第一句。",
            "第二句！\n",
            "第三句",
        ]
        text = "".join(f"第{i}句保险条款内容。" for i in range(200))
        chunks = chunks_of(SentenceNodeParser(chunk_size=60, chunk_overlap=10), text, "text")
        check_chunks(text, chunks, 60)
        assert all(c.body.endswith("。") for c in chunks)  # cut at sentence ends

    def test_markdown_sections_give_the_path(self) -> None:
        chunks = chunks_of(
            SentenceNodeParser(chunk_size=200, chunk_overlap=20), INSURANCE_CLAUSE, "markdown"
        )
        check_chunks(INSURANCE_CLAUSE, chunks, 200)
        paths = {tuple(c.title_path) for c in chunks}
        assert (CLAUSE_TITLE, "第三章 责任免除") in paths
        assert (CLAUSE_TITLE, "附表") in paths
        # no section boundary inside a chunk: each chunk holds at most one ## heading
        assert all(c.body.count("\n## ") + c.body.startswith("## ") <= 1 for c in chunks)

    def test_code_hash_lines_do_not_split_sections(self) -> None:
        chunks = chunks_of(SentenceNodeParser(chunk_size=512, chunk_overlap=0), API_DOC, "markdown")
        assert not any("创建客户端" in p for c in chunks for p in c.title_path)


@pytest.mark.parametrize("name", ["fixed", "sentence"])
def test_nodes_follow_the_contract(name: str) -> None:
    parser = (
        FixedSizeNodeParser(chunk_size=100)
        if name == "fixed"
        else SentenceNodeParser(chunk_size=100)
    )
    docs = [
        Document(
            text=INSURANCE_CLAUSE,
            metadata={"doc_id": "a", "fmt": "markdown", "title": CLAUSE_TITLE},
        ),
        Document(text=REGULATION_TEXT, metadata={"doc_id": "b", "fmt": "text", "title": ""}),
    ]
    nodes = parser.get_nodes_from_documents(docs)
    sources = {d.metadata["doc_id"]: d.text for d in docs}
    for n in nodes:
        assert isinstance(n, TextNode)
        m = n.metadata
        assert set(CHUNK_METADATA_KEYS) <= set(m)
        assert n.text == sources[m["doc_id"]][m["start_char"] : m["end_char"]]
        assert (n.start_char_idx, n.end_char_idx) == (m["start_char"], m["end_char"])
        assert m["prefix_chars"] == m["suffix_chars"] == 0 and m["block_types"] == ""
        path = m["title_path"]
        embed = n.get_content(metadata_mode=MetadataMode.EMBED)
        assert embed == (f"{path}\n{n.text}" if path else n.text)
    assert any(n.metadata["title_path"] for n in nodes) == (name == "sentence")


BASELINE_SETTINGS = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@BASELINE_SETTINGS
@given(SEEDS, st.sampled_from([48, 128, 512]), st.sampled_from([0, 16]))
@example(2955, 48, 16)  # a split repeating a line of the chunk before it ("x = compute(1, 2)")
def test_baselines_have_honest_spans(seed: int, size: int, overlap: int) -> None:
    rnd = random.Random(seed)
    for doc, fmt in ((markdown_doc(rnd), "markdown"), (text_doc(rnd), "text")):
        for parser in (
            FixedSizeNodeParser(chunk_size=size, chunk_overlap=overlap),
            SentenceNodeParser(chunk_size=size, chunk_overlap=overlap),
        ):
            chunks = chunks_of(parser, doc.text, fmt)
            check_chunks(doc.text, chunks, size)
