from __future__ import annotations

import pickle
import re

import pytest
from llama_index.core.ingestion import IngestionPipeline
from llama_index.core.schema import Document, MetadataMode, NodeRelationship, TextNode

from rag_app.chunking import (
    CHUNK_METADATA_KEYS,
    Chunk,
    FixedSizeNodeParser,
    SentenceNodeParser,
    StructureAwareNodeParser,
    build_node_parser,
    chunk_document,
    count_tokens,
)

from .helpers import check_chunks, fences_balanced
from .samples import (
    API_DOC,
    CLAUSE_TITLE,
    EXCLUSION_ITEMS,
    EXCLUSION_LEAD_IN,
    INSURANCE_CLAUSE,
    PREMIUM_CAPTION,
    PREMIUM_HEADER,
    PREMIUM_ROWS,
    PREMIUM_SEPARATOR,
    REGULATION_TEXT,
    REGULATION_TITLE,
    WITHDRAWAL_ITEMS,
    WITHDRAWAL_LEAD_IN,
)


def chapter_of(text: str, pos: int, pattern: str) -> str | None:
    """The last top-level heading at or before ``pos``."""
    found = None
    for m in re.finditer(pattern, text, re.MULTILINE):
        if m.start() > pos:
            break
        found = m.group(0)
    return found


class TestInsuranceClause:
    SIZE = 200

    @pytest.fixture(scope="class")
    def chunks(self) -> list[Chunk]:
        return chunk_document(
            INSURANCE_CLAUSE, "markdown", title=CLAUSE_TITLE, chunk_size=self.SIZE, chunk_overlap=32
        )

    def test_invariants(self, chunks: list[Chunk]) -> None:
        check_chunks(INSURANCE_CLAUSE, chunks, self.SIZE)
        assert not any(c.oversized for c in chunks)

    def test_premium_table_split_by_rows_with_header_repeated(self, chunks: list[Chunk]) -> None:
        table_chunks = [c for c in chunks if "table" in c.block_types]
        assert len(table_chunks) >= 4
        head = f"{PREMIUM_CAPTION}\n{PREMIUM_HEADER}\n{PREMIUM_SEPARATOR}\n"
        rows: list[str] = []
        for c in table_chunks:
            if c.prefix_chars:
                assert c.prefix == head
            else:  # the table's own start: caption, header and separator from the source
                lines = [ln for ln in c.body.splitlines() if ln.strip()]
                i = lines.index(PREMIUM_CAPTION)
                assert lines[i + 1 : i + 3] == [PREMIUM_HEADER, PREMIUM_SEPARATOR]
            rows += [ln for ln in c.body.splitlines() if ln in PREMIUM_ROWS]
        assert rows == PREMIUM_ROWS  # every row once, whole, in order
        assert all(c.title_path == [CLAUSE_TITLE, "附表"] for c in table_chunks)

    def test_exclusion_lead_in_carried_into_every_piece(self, chunks: list[Chunk]) -> None:
        list_chunks = [c for c in chunks if any(item in c.text for item in EXCLUSION_ITEMS)]
        assert len(list_chunks) >= 2
        items: list[str] = []
        for c in list_chunks:
            first_item = min(c.text.index(i) for i in EXCLUSION_ITEMS if i in c.text)
            assert EXCLUSION_LEAD_IN in c.text[:first_item]
            if c.prefix_chars:
                assert c.text.startswith(EXCLUSION_LEAD_IN + "\n")
            assert c.title_path == [CLAUSE_TITLE, "第三章 责任免除", "第五条 免责事项"]
            items += [ln for ln in c.body.splitlines() if ln in EXCLUSION_ITEMS]
        assert items == EXCLUSION_ITEMS

    def test_chapters_are_never_mixed(self, chunks: list[Chunk]) -> None:
        pattern = r"^## .*$"
        for c in chunks:
            # leading headings open the content (a title carried before its first chapter)
            offset = c.start_char
            for line in c.body.splitlines(keepends=True):
                if line.strip() and not line.startswith("#"):
                    break
                offset += len(line)
            start = offset
            assert chapter_of(INSURANCE_CLAUSE, start, pattern) == chapter_of(
                INSURANCE_CLAUSE, c.end_char - 1, pattern
            ), c.text[:60]

    def test_title_heading_is_not_a_chunk_of_its_own(self, chunks: list[Chunk]) -> None:
        assert chunks[0].text.startswith(f"# {CLAUSE_TITLE}\n\n## 第一章 总则\n\n第一条")
        assert chunks[0].title_path == [CLAUSE_TITLE, "第一章 总则"]


class TestRegulationPlainText:
    def test_paths_sections_and_list(self) -> None:
        chunks = chunk_document(
            REGULATION_TEXT, "text", title=REGULATION_TITLE, chunk_size=512, chunk_overlap=64
        )
        check_chunks(REGULATION_TEXT, chunks, 512)
        # one chunk per chapter: the budget is large, chapters are sections
        assert [c.title_path for c in chunks] == [
            [REGULATION_TITLE, "第一章 总则"],
            [REGULATION_TITLE, "第二章 缴存"],
            [REGULATION_TITLE, "第三章 提取", "第八条"],
        ]
        assert chunks[0].text.startswith(REGULATION_TITLE + "\n\n第一章 总则\n\n第一条")
        last = chunks[-1]
        assert last.text.startswith("第三章 提取\n\n" + WITHDRAWAL_LEAD_IN)
        assert all(item in last.text for item in WITHDRAWAL_ITEMS)
        assert last.block_types == ["heading", "list", "paragraph"]

    def test_section_level_three_keeps_articles_apart(self) -> None:
        chunks = chunk_document(REGULATION_TEXT, "text", title=REGULATION_TITLE, section_level=3)
        bodies = [c.body for c in chunks]
        assert sum(1 for b in bodies if re.search(r"第[一二三四五六七八]条", b)) == 6
        for b in bodies:
            assert len(re.findall(r"^第[一二三四五六七八]条", b, re.MULTILINE)) <= 1

    def test_small_budget_repeats_the_lead_in(self) -> None:
        # the lead-in (36 tokens) is repeated whole while it is at most half the budget
        chunks = chunk_document(REGULATION_TEXT, "text", chunk_size=80, chunk_overlap=10)
        check_chunks(REGULATION_TEXT, chunks, 80)
        holding = [c for c in chunks if any(i in c.text for i in WITHDRAWAL_ITEMS)]
        assert len(holding) >= 2
        for c in holding:
            assert c.text.find(WITHDRAWAL_LEAD_IN) != -1
            assert c.text.find(WITHDRAWAL_LEAD_IN) < min(
                c.text.find(i) for i in WITHDRAWAL_ITEMS if i in c.text
            )


class TestApiDoc:
    def test_code_block_kept_whole(self) -> None:
        chunks = chunk_document(API_DOC, "markdown", chunk_size=512, chunk_overlap=64)
        check_chunks(API_DOC, chunks, 512)
        code = API_DOC[API_DOC.index("```python") : API_DOC.index("```\n") + 3]
        holding = [c for c in chunks if "```python" in c.text]
        assert len(holding) == 1 and code in holding[0].text
        for c in chunks:
            assert fences_balanced(c.text)
            assert not any("创建客户端" in p or "不是标题" in p for p in c.title_path)
        assert [c.title_path for c in chunks] == [
            ["检索服务 API 文档", "快速开始"],
            ["检索服务 API 文档", "参数说明"],
        ]

    def test_over_long_code_split_by_lines_with_fences(self) -> None:
        chunks = chunk_document(API_DOC, "markdown", chunk_size=45, chunk_overlap=5)
        check_chunks(API_DOC, chunks, 45)
        code_chunks = [c for c in chunks if "code" in c.block_types]
        assert len(code_chunks) >= 2
        for c in code_chunks:
            assert fences_balanced(c.text), c.text
        for c in code_chunks[1:]:
            assert c.text.startswith("```python\n")
        for c in code_chunks[:-1]:
            assert c.text.endswith("\n```") and c.suffix == "\n```"
        code_lines = API_DOC[API_DOC.index("```python") :].split("```\n")[0].splitlines()[1:]
        seen = [ln for c in code_chunks for ln in c.body.splitlines() if ln in code_lines]
        assert [ln for ln in seen if ln] == [ln for ln in code_lines if ln]


class TestOverlap:
    TEXT = (
        "## 第一章 总则\n\n"
        + "".join(f"第{i}句话说明保险责任的第{i}项内容。" for i in range(1, 30))
        + "\n\n## 第二章 附则\n\n本条款自发布之日起施行。\n"
    )

    def test_overlap_is_whole_sentences_from_just_before(self) -> None:
        chunks = chunk_document(self.TEXT, "markdown", chunk_size=60, chunk_overlap=25)
        check_chunks(self.TEXT, chunks, 60)
        with_overlap = [c for c in chunks if c.prefix_chars]
        assert with_overlap
        for c in with_overlap:
            assert c.prefix == self.TEXT[c.start_char - c.prefix_chars : c.start_char]
            assert self.TEXT[c.start_char - c.prefix_chars - 1] in "。！？；\n"
            assert count_tokens(c.prefix) <= 25
            assert c.prefix.rstrip().endswith("。")

    def test_no_overlap_across_sections_or_when_disabled(self) -> None:
        chunks = chunk_document(self.TEXT, "markdown", chunk_size=60, chunk_overlap=25)
        second = next(c for c in chunks if "第二章" in c.text)
        assert second.prefix_chars == 0 and second.body.startswith("## 第二章 附则")
        no_overlap = chunk_document(self.TEXT, "markdown", chunk_size=60, chunk_overlap=0)
        assert all(c.prefix_chars == 0 for c in no_overlap)
        check_chunks(self.TEXT, no_overlap, 60)


class TestValidation:
    def test_overlap_must_be_smaller_than_size(self) -> None:
        with pytest.raises(
            ValueError, match=r"chunk_overlap \(64\) must be smaller than chunk_size \(64\)"
        ):
            StructureAwareNodeParser(chunk_size=64, chunk_overlap=64)
        with pytest.raises(ValueError, match="must be smaller than chunk_size"):
            chunk_document("正文", "text", chunk_size=10, chunk_overlap=20)

    @pytest.mark.parametrize("kwargs", [{"chunk_size": 0}, {"chunk_overlap": -1}])
    def test_field_constraints(self, kwargs: dict[str, int]) -> None:
        with pytest.raises(ValueError):
            StructureAwareNodeParser(**kwargs)

    def test_unknown_format(self) -> None:
        with pytest.raises(ValueError, match="fmt must be one of"):
            chunk_document("正文", "pdf")

    def test_empty_document(self) -> None:
        assert chunk_document("  \n\n ", "text") == []

    def test_build_node_parser(self) -> None:
        assert isinstance(build_node_parser("structure", 256, 32, 3), StructureAwareNodeParser)
        assert isinstance(build_node_parser("sentence"), SentenceNodeParser)
        assert isinstance(build_node_parser("fixed"), FixedSizeNodeParser)
        parser = build_node_parser("structure", 256, 32, 3)
        assert (parser.chunk_size, parser.chunk_overlap, parser.section_level) == (256, 32, 3)  # type: ignore[attr-defined]
        with pytest.raises(ValueError, match="unknown chunker 'semantic'"):
            build_node_parser("semantic")  # type: ignore[arg-type]
        assert StructureAwareNodeParser.class_name() == "StructureAwareNodeParser"


def _documents() -> list[Document]:
    return [
        Document(
            text=INSURANCE_CLAUSE,
            metadata={
                "doc_id": "clause-1",
                "fmt": "markdown",
                "title": CLAUSE_TITLE,
                "tenant": "acme",
            },
        ),
        Document(
            text=REGULATION_TEXT,
            metadata={"doc_id": "reg-1", "fmt": "text", "title": "", "tenant": "acme"},
        ),
    ]


class TestNodes:
    @pytest.fixture(scope="class")
    def nodes(self) -> list[TextNode]:
        parser = StructureAwareNodeParser(chunk_size=200, chunk_overlap=32)
        out = parser.get_nodes_from_documents(_documents())
        assert all(isinstance(n, TextNode) for n in out)
        return out  # type: ignore[return-value]

    def test_text_is_prefix_plus_source_span_plus_suffix(self, nodes: list[TextNode]) -> None:
        docs = {d.metadata["doc_id"]: d.text for d in _documents()}
        for n in nodes:
            m = n.metadata
            src = docs[m["doc_id"]]
            body = n.text[m["prefix_chars"] : len(n.text) - m["suffix_chars"]]
            assert body == src[m["start_char"] : m["end_char"]]
            assert (n.start_char_idx, n.end_char_idx) == (m["start_char"], m["end_char"])
            assert m["token_count"] == count_tokens(n.text)

    def test_metadata_keys_and_scalar_values(self, nodes: list[TextNode]) -> None:
        for n in nodes:
            assert set(CHUNK_METADATA_KEYS) <= set(n.metadata)
            assert {"doc_id", "fmt", "title", "tenant"} <= set(n.metadata)  # inherited
            for value in n.metadata.values():
                assert isinstance(value, str | int | float | bool)
            assert isinstance(n.metadata["oversized"], bool)
        for doc_id in ("clause-1", "reg-1"):
            indexes = [n.metadata["chunk_index"] for n in nodes if n.metadata["doc_id"] == doc_id]
            assert indexes == list(range(len(indexes)))
            starts = [n.metadata["start_char"] for n in nodes if n.metadata["doc_id"] == doc_id]
            assert starts == sorted(starts)

    def test_block_types_and_title_path_strings(self, nodes: list[TextNode]) -> None:
        table = next(n for n in nodes if n.metadata["block_types"] == "table")
        assert table.metadata["title_path"] == f"{CLAUSE_TITLE} > 附表"
        assert "heading,list" in {n.metadata["block_types"] for n in nodes}
        reg = [n for n in nodes if n.metadata["doc_id"] == "reg-1"]
        # empty title: no root; the title line is plain text then
        assert [n.metadata["title_path"] for n in reg[:2]] == ["", "第一章 总则"]

    def test_embed_text_has_the_path_user_text_does_not(self, nodes: list[TextNode]) -> None:
        for n in nodes:
            path = n.metadata["title_path"]
            embed = n.get_content(metadata_mode=MetadataMode.EMBED)
            assert embed == (f"{path}\n{n.text}" if path else n.text)
            assert n.get_content(metadata_mode=MetadataMode.LLM) == embed
            assert n.get_content(metadata_mode=MetadataMode.NONE) == n.text
            for key in ("acme", "clause-1", "markdown", "start_char"):
                assert key not in embed.split("\n", 1)[0]

    def test_empty_path_embeds_just_the_text(self) -> None:
        doc = Document(
            text="没有标题的一段正文。", metadata={"doc_id": "x", "fmt": "text", "title": ""}
        )
        (node,) = StructureAwareNodeParser().get_nodes_from_documents([doc])
        assert node.metadata["title_path"] == ""
        assert node.get_content(metadata_mode=MetadataMode.EMBED) == "没有标题的一段正文。"

    def test_relationships(self, nodes: list[TextNode]) -> None:
        docs = _documents()
        clause = [n for n in nodes if n.metadata["doc_id"] == "clause-1"]
        assert all(n.ref_doc_id == docs[0].id_ for n in clause) or all(
            n.source_node is not None for n in clause
        )
        assert clause[1].relationships[NodeRelationship.PREVIOUS].node_id == clause[0].node_id
        assert clause[0].relationships[NodeRelationship.NEXT].node_id == clause[1].node_id

    def test_later_metadata_keys_can_be_excluded_again(self) -> None:
        from rag_app.chunking import restrict_embed_metadata

        doc = Document(
            text="# 标题\n\n正文。", metadata={"doc_id": "x", "fmt": "markdown", "title": ""}
        )
        (node,) = StructureAwareNodeParser().get_nodes_from_documents([doc])
        node.metadata["version"] = 3
        restrict_embed_metadata(node)
        assert node.get_content(metadata_mode=MetadataMode.EMBED) == "标题\n# 标题\n\n正文。"


class TestPipelineIntegration:
    @pytest.mark.parametrize("name", ["structure", "sentence", "fixed"])
    def test_pickle_and_to_dict_round_trip(self, name: str) -> None:
        parser = build_node_parser(name, 128, 16)  # type: ignore[arg-type]
        clone = pickle.loads(pickle.dumps(parser))
        assert clone.to_dict() == parser.to_dict()
        docs = _documents()
        before = [n.get_content() for n in parser.get_nodes_from_documents(docs)]
        after = [n.get_content() for n in clone.get_nodes_from_documents(docs)]
        assert before == after

    def test_runs_in_an_ingestion_pipeline(self) -> None:
        pipeline = IngestionPipeline(transformations=[StructureAwareNodeParser(chunk_size=256)])
        nodes = pipeline.run(documents=_documents())
        assert nodes and all("title_path" in n.metadata for n in nodes)


def test_node_spans_are_not_re_found_in_the_document() -> None:
    """The base class would re-find node text: an overlap prefix would move the start back."""
    doc = Document(text=TestOverlap.TEXT, metadata={"doc_id": "o", "fmt": "markdown", "title": ""})
    nodes = StructureAwareNodeParser(chunk_size=60, chunk_overlap=25).get_nodes_from_documents(
        [doc]
    )
    with_prefix = [n for n in nodes if n.metadata["prefix_chars"]]
    assert with_prefix
    for n in with_prefix:
        assert isinstance(n, TextNode)
        assert n.start_char_idx == n.metadata["start_char"]
        assert doc.text.find(n.text) == n.metadata["start_char"] - n.metadata["prefix_chars"]


def test_public_api() -> None:
    import rag_app.chunking as chunking

    assert {
        "StructureAwareNodeParser",
        "FixedSizeNodeParser",
        "SentenceNodeParser",
        "chunk_document",
        "Chunk",
        "count_tokens",
        "build_node_parser",
    } <= set(chunking.__all__)
    for name in chunking.__all__:
        assert hasattr(chunking, name)


class TestOddInputs:
    def test_crlf_and_ideographic_indent(self) -> None:
        text = (
            "第一章 总则\r\n\r\n第一条 本办法适用于全市。\r\n"
            "\u3000\u3000第二条 有下列情形之一的：\r\n（一）甲；\r\n（二）乙。\r\n"
        )
        chunks = chunk_document(text, "text", chunk_size=30, chunk_overlap=5)
        check_chunks(text, chunks, 30)
        assert [c.title_path for c in chunks] == [
            ["第一章 总则", "第一条"],
            ["第一章 总则", "第二条"],
        ]
        assert chunks[1].block_types == ["list"]
        assert not any(c.text.endswith("\r") for c in chunks)

    def test_unbreakable_ascii_line_is_cut_into_full_pieces(self) -> None:
        blob = "aGVsbG8gd29ybGQ" * 7000  # 105,000 characters, 26,250 tokens, no separator
        text = f"# 附件\n\n{blob}\n\n正文。"
        chunks = chunk_document(text, "markdown", chunk_size=512, chunk_overlap=0)
        check_chunks(text, chunks, 512)
        assert len(chunks) <= 26250 // 512 + 2
        assert chunks[0].text.startswith("# 附件\n\naGVs")  # no heading-only chunk

    def test_title_equal_to_first_heading_is_not_repeated(self) -> None:
        chunks = chunk_document(
            "# 员工手册\n\n## 考勤\n\n每天九点上班。", "markdown", title="员工手册"
        )
        assert chunks[0].title_path == ["员工手册", "考勤"]
        chunks = chunk_document("## 考勤\n\n每天九点上班。", "markdown", title="员工手册")
        assert chunks[0].title_path == ["员工手册", "考勤"]
