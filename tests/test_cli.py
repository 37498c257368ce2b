"""The `rag` command line, driven through Typer's runner against a real temporary KB."""

from __future__ import annotations

import json
import re

from typer.testing import CliRunner

from rag_app.cli import app

runner = CliRunner()

DOC = """# 报销制度

## 时限

报销申请须在出差结束后三十日内提交，逾期不予受理。
"""


def run(*args: str):
    result = runner.invoke(app, list(args))
    return result


def test_ingest_retrieve_docs_chunks_delete_round_trip(kb_dir, tmp_path):
    doc = tmp_path / "expense.md"
    doc.write_text(DOC, encoding="utf-8")
    result = run("ingest", str(doc), "--kb", str(kb_dir), "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["files"][0]["status"] == "SUCCESS"
    doc_id = report["files"][0]["doc_id"]

    result = run("retrieve", "报销要在多少天内提交？", "--kb", str(kb_dir), "--json", "-k", "2")
    hits = json.loads(result.stdout)
    assert hits[0]["doc_id"] == doc_id and "三十日" in hits[0]["text"]

    docs = json.loads(run("docs", "--kb", str(kb_dir), "--json").stdout)
    assert [(d["doc_id"], d["status"]) for d in docs] == [(doc_id, "SUCCESS")]

    chunks = json.loads(run("chunks", doc_id[:8], "--kb", str(kb_dir), "--json").stdout)
    assert chunks and chunks[0]["doc_id"] == doc_id

    human = run("retrieve", "报销时限", "--kb", str(kb_dir))
    assert "expense.md" in human.stdout
    # one score meaning, named: reciprocal-rank fusion of dense + BM25
    assert re.search(r"\] fused 0\.\d{4} · expense\.md", human.stdout), human.stdout
    assert "score" not in human.stdout and "rerank" not in human.stdout

    deleted = json.loads(run("delete", doc_id, "--kb", str(kb_dir), "--json").stdout)
    assert deleted == {"doc_id": doc_id, "deleted": True}
    assert json.loads(run("docs", "--kb", str(kb_dir), "--json").stdout) == []


def test_ingest_exits_1_when_a_file_fails_and_prints_the_reason(kb_dir, tmp_path):
    good = tmp_path / "good.md"
    good.write_text(DOC, encoding="utf-8")
    result = run("ingest", str(good), str(tmp_path / "missing.txt"), "--kb", str(kb_dir))
    assert result.exit_code == 1
    assert "path does not exist" in result.stdout
    assert "1 ingested" in result.stdout and "1 failed" in result.stdout


def test_unknown_document_id_is_a_clear_error(kb_dir, tmp_path):
    doc = tmp_path / "报销.md"
    doc.write_text(DOC, encoding="utf-8")
    assert run("ingest", str(doc), "--kb", str(kb_dir)).exit_code == 0
    result = run("chunks", "nope", "--kb", str(kb_dir))
    assert result.exit_code == 1
    assert "no document with id 'nope'" in result.output


def test_help_teaches_the_commands():
    result = run("--help")
    assert result.exit_code == 0
    for command in ("ingest", "retrieve", "docs", "chunks", "delete", "doctor"):
        assert command in result.stdout


def test_help_shows_what_its_source_says():
    """Square brackets in a help text are text, not Rich markup ([env RAG_KB_DIR …] and [n]
    were dropped), and a docstring's paragraph is one paragraph: Rich keeps single line
    breaks, which left ragged half-empty lines in an 80-column terminal."""
    ask = runner.invoke(app, ["ask", "--help"], env={"COLUMNS": "120"}).stdout
    assert "[env RAG_KB_DIR; default ./.rag]" in ask
    assert "(its [n] is in the answer)" in ask
    assert "table rows picked from the evidence" in ask
    serve = runner.invoke(app, ["serve", "--help"], env={"COLUMNS": "120"}).stdout
    assert "[env RAG_WORKERS; default 1]" in serve
    keys = runner.invoke(app, ["keys", "create", "--help"], env={"COLUMNS": "120"})
    assert keys.exit_code == 0


def test_ask_prints_answer_with_numbered_sources_and_json(kb_dir, tmp_path):
    doc = tmp_path / "expense.md"
    doc.write_text(DOC, encoding="utf-8")
    assert run("ingest", str(doc), "--kb", str(kb_dir)).exit_code == 0
    human = run("ask", "报销申请须在出差结束后多少日内提交？", "--kb", str(kb_dir))
    assert human.exit_code == 0, human.output
    assert "三十日" in human.stdout and "[1] expense.md" in human.stdout
    assert re.search(r"· rerank \d+\.\d{3}", human.stdout) and "fused" not in human.stdout
    data = json.loads(
        run("ask", "报销申请须在出差结束后多少日内提交？", "--kb", str(kb_dir), "--json").stdout
    )
    assert data["refused"] is False and data["sources"][0]["source"].endswith("expense.md")
    refused = json.loads(run("ask", "公司年会在哪里举办？", "--kb", str(kb_dir), "--json").stdout)
    assert refused["refused"] is True and refused["reason"] and refused["explanation"]
    assert all(s["source"].endswith("expense.md") for s in refused["sources"])  # closest ones
    human_refusal = run("ask", "公司年会在哪里举办？", "--kb", str(kb_dir))
    assert refused["explanation"] in human_refusal.stdout.replace("\n", "")
    closest = refused["closest"][0]  # the closest unit, shown under the refusal and cited
    assert refused["sources"][closest["source"] - 1]["source"].endswith("expense.md")
    assert f"最接近的内容：{closest['text']} [{closest['source']}]" in human_refusal.stdout.replace(
        "\n", ""
    )
    # the gate's probability beside its threshold: above it when answered, below when refused
    assert data["threshold"] <= data["confidence"] and refused["confidence"] < refused["threshold"]
    for shown, body in ((human, data), (human_refusal, refused)):
        line = f"gate threshold {body['threshold']:.3g}"
        assert line in shown.stdout.replace("\n", " "), shown.stdout


OTHER = """# 差旅制度

## 住宿

一线城市住宿标准为每晚六百元。
"""


def test_json_names_the_file_filename_as_the_api_does(kb_dir, tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "expense.md").write_text(DOC, encoding="utf-8")
    assert run("ingest", str(tmp_path / "docs"), "--kb", str(kb_dir)).exit_code == 0
    hits = json.loads(run("retrieve", "报销时限", "--kb", str(kb_dir), "--json").stdout)
    answer = json.loads(
        run("ask", "报销申请须在出差结束后多少日内提交？", "--kb", str(kb_dir), "--json").stdout
    )
    docs = json.loads(run("docs", "--kb", str(kb_dir), "--json").stdout)
    for item in [hits[0], answer["sources"][0], docs[0]]:
        assert item["filename"] == "expense.md"  # the API's field (SourceOut, DocumentOut)
        assert item["source"].endswith("expense.md")  # kept for compatibility


def test_show_context_prints_only_the_cited_sources(kb_dir, tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "expense.md").write_text(DOC, encoding="utf-8")
    (tmp_path / "docs" / "travel.md").write_text(OTHER, encoding="utf-8")
    assert run("ingest", str(tmp_path / "docs"), "--kb", str(kb_dir)).exit_code == 0
    question = "报销申请须在出差结束后多少日内提交？"
    data = json.loads(run("ask", question, "--kb", str(kb_dir), "--json").stdout)
    files = [s["filename"] for s in data["sources"]]
    assert data["refused"] is False and "travel.md" in files, files  # listed, not cited
    assert "[" + str(files.index("travel.md") + 1) + "]" not in data["answer"]

    plain = run("ask", question, "--kb", str(kb_dir)).stdout
    shown = run("ask", question, "--kb", str(kb_dir), "--show-context").stdout
    assert "travel.md" in plain and "travel.md" in shown  # both list every source
    assert "## 时限" not in plain  # the chunk text only with --show-context
    assert "## 时限" in shown  # the cited chunk, in full
    assert "## 住宿" not in shown and "每晚六百元" not in shown  # the uncited one is not

    refused = run("ask", "公司年会在哪里举办？", "--kb", str(kb_dir), "--show-context").stdout
    assert "the answer cites no source" in refused
    assert "## 时限" not in refused and "## 住宿" not in refused


def test_short_ids_are_the_shortest_unique_prefixes_of_at_least_8():
    from rag_app.cli_output import short_ids

    ids = ["abcdef0123456789", "abcdef0123aaaaaa", "ffff00001111", "abc"]
    assert short_ids(ids) == {
        "abcdef0123456789": "abcdef01234",
        "abcdef0123aaaaaa": "abcdef0123a",
        "ffff00001111": "ffff0000",
        "abc": "abc",
    }
    assert short_ids(["abcdef0123456789", "abcdef0123456789x"]) == {
        "abcdef0123456789": "abcdef0123456789",  # a prefix of another id: the whole id
        "abcdef0123456789x": "abcdef0123456789x",
    }


def test_docs_table_shows_short_ids_that_rag_chunks_accepts(kb_dir, tmp_path):
    doc = tmp_path / "expense.md"
    doc.write_text(DOC, encoding="utf-8")
    report = json.loads(run("ingest", str(doc), "--kb", str(kb_dir), "--json").stdout)
    doc_id = report["files"][0]["doc_id"]
    assert len(doc_id) > 8
    table = run("docs", "--kb", str(kb_dir)).stdout
    assert doc_id[:8] in table and doc_id not in table
    chunks = json.loads(run("chunks", doc_id[:8], "--kb", str(kb_dir), "--json").stdout)
    assert chunks and chunks[0]["doc_id"] == doc_id


def test_confidence_line_says_when_the_llm_read_a_refusal():
    from rag_app.cli_output import confidence_line

    plain = confidence_line(0.04, 0.072)
    reviewed = confidence_line(0.04, 0.072, reviewed=True)
    assert "gate threshold 0.072" in plain and "LLM" not in plain
    assert reviewed.startswith(plain) and "read by the LLM (RAG_LLM_REVIEW)" in reviewed
    assert confidence_line(0.5, 0.0) == "confidence 0.5 (answer model) · the gate is off"


def test_read_commands_on_a_missing_kb_say_so_and_create_nothing(kb_dir, tmp_path):
    """A mistyped --kb is an error (exit 2) naming the directory, not a new empty KB."""
    typo = tmp_path / "kb-typo"
    for args in (("ask", "报销时限？"), ("retrieve", "报销时限"), ("docs",)):
        result = run(*args, "--kb", str(typo))
        assert result.exit_code == 2, (args, result.output)
        assert "no knowledge base at" in result.output and "kb-typo" in result.output
    assert not typo.exists()


def test_asking_an_empty_kb_warns_that_it_holds_no_documents(kb_dir):
    from rag_app import KnowledgeBase

    KnowledgeBase.open(kb_dir).close()  # created, nothing ingested
    result = run("ask", "报销申请须在多少日内提交？", "--kb", str(kb_dir), "--json")
    assert result.exit_code == 0
    assert "holds no documents" in result.output
    assert json.loads(result.stdout)["refused"] is True  # stdout stays JSON


def test_ask_answers_a_file_of_questions_as_json_lines(kb_dir, tmp_path):
    """--questions FILE loads the models once and prints one JSON object per question; a
    question and --questions together, or an empty file, are errors."""
    doc = tmp_path / "报销.md"
    doc.write_text(DOC, encoding="utf-8")
    assert run("ingest", str(doc), "--kb", str(kb_dir)).exit_code == 0
    questions = tmp_path / "q.txt"
    questions.write_text(
        "报销申请须在出差结束后多少日内提交？\n\n公司年会在哪里举办？\n", encoding="utf-8"
    )
    result = run("ask", "--questions", str(questions), "--kb", str(kb_dir), "--json")
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [a["question"] for a in lines] == [
        "报销申请须在出差结束后多少日内提交？",
        "公司年会在哪里举办？",
    ]
    assert not lines[0]["refused"] and "三十日" in lines[0]["answer"] and lines[1]["refused"]
    human = run("ask", "-q", str(questions), "--kb", str(kb_dir))
    assert human.exit_code == 0 and human.stdout.count("Q:") == 2
    assert run("ask", "问题", "-q", str(questions), "--kb", str(kb_dir)).exit_code == 2
    empty = tmp_path / "empty.txt"
    empty.write_text("\n", encoding="utf-8")
    assert run("ask", "-q", str(empty), "--kb", str(kb_dir)).exit_code == 2


STOCK = """# 库存明细

| SKU | 名称 | 库存 |
|---|---|---|
| SKU-1023 | 螺丝 | 120 |
| SKU-1024 | 螺母 | 80 |
"""


def test_chat_resolves_a_follow_up_and_starts_over_on_new(kb_dir, tmp_path):
    doc = tmp_path / "库存.md"
    doc.write_text(STOCK, encoding="utf-8")
    assert run("ingest", str(doc), "--kb", str(kb_dir)).exit_code == 0
    script = "SKU-1023的库存是多少？\n那SKU-1024呢？\n/sources\n/new\n那SKU-1024呢？\n/quit\n"
    human = runner.invoke(app, ["chat", "--kb", str(kb_dir)], input=script)
    assert human.exit_code == 0, human.output
    assert "（理解为：SKU-1024的库存是多少？）" in human.stdout and "80" in human.stdout
    assert "| SKU-1024 | 螺母 | 80 |" in human.stdout  # /sources: the source text in full
    lines = runner.invoke(app, ["chat", "--kb", str(kb_dir), "--json"], input=script).stdout
    turns = [json.loads(line) for line in lines.splitlines() if line.startswith("{")]
    assert [t["resolved_question"] for t in turns] == [
        "SKU-1023的库存是多少？",
        "SKU-1024的库存是多少？",
        "那SKU-1024呢？",  # after /new: nothing to take it from
    ]
    assert "120" in turns[0]["answer"] and "80" in turns[1]["answer"]


def test_chat_records_feedback_on_the_last_answer(kb_dir, tmp_path):
    doc = tmp_path / "库存.md"
    doc.write_text(STOCK, encoding="utf-8")
    assert run("ingest", str(doc), "--kb", str(kb_dir)).exit_code == 0
    script = "/down 太早了\nSKU-1023的库存是多少？\n那SKU-1024呢？\n/down 应给出名称\n/up\n/quit\n"
    done = runner.invoke(app, ["chat", "--kb", str(kb_dir)], input=script)
    assert done.exit_code == 0, done.output
    assert "no answer yet" in done.output  # the first /down: nothing to rate
    listed = json.loads(run("feedback", "list", "--kb", str(kb_dir), "--json").stdout)
    assert [(f["rating"], f["comment"]) for f in listed] == [("up", ""), ("down", "应给出名称")]
    down = listed[1]
    assert (
        down["question"] == "那SKU-1024呢？"
        and down["resolved_question"] == "SKU-1024的库存是多少？"
    )
    assert down["key_id"] == "cli" and down["sources"][0]["filename"] == "库存.md"


def test_eval_scores_a_conversation_file_per_turn(kb_dir, tmp_path):
    doc = tmp_path / "库存.md"
    doc.write_text(STOCK, encoding="utf-8")
    assert run("ingest", str(doc), "--kb", str(kb_dir)).exit_code == 0
    conversations = tmp_path / "conv.jsonl"
    rows = [
        {"id": "c1", "turns": [
            {"question": "SKU-1023的库存是多少？", "answers": ["120"]},
            {"question": "那SKU-1024呢？", "answers": ["80"], "resolved_has": ["SKU-1024", "库存"],
             "resolved_lacks": ["SKU-1023"]},
        ]},
        {"id": "c2", "split": "check", "turns": [
            {"question": "SKU-1024的库存是多少？", "answers": ["80"]},
            {"question": "SKU-1023的名称是什么？", "answers": ["螺丝"], "standalone": True},
        ]},
    ]  # fmt: skip
    conversations.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows))
    result = run("eval", str(conversations), "--kb", str(kb_dir), "--json", "-")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["overall"]["follow_up_turns"] == 2 and data["overall"]["resolution_accuracy"] == 1
    assert data["overall"]["answered_turns"] == 4
    assert set(data["splits"]) == {"dev", "check"}
    assert [t["resolved"] for t in data["turns"]][1] == "SKU-1024的库存是多少？"


def test_feedback_list_and_export_make_a_question_file_rag_eval_runs(kb_dir, tmp_path):
    from rag_app.kb import KnowledgeBase
    from rag_app.store.feedback import FeedbackRecord

    doc = tmp_path / "库存.md"
    doc.write_text(STOCK, encoding="utf-8")
    assert run("ingest", str(doc), "--kb", str(kb_dir)).exit_code == 0
    with KnowledgeBase.open(kb_dir) as base:
        for rating, comment in (("down", "少了单位"), ("up", "")):
            base.feedback.add(FeedbackRecord(
                tenant="default", key_id="k", rating=rating, comment=comment,
                question="那SKU-1024呢？", resolved_question="SKU-1024的库存是多少？",
                answer="80", sources=[{"doc_id": "d", "chunk_id": "c", "filename": "库存.md"}],
            ))  # fmt: skip
    listed = run("feedback", "list", "--kb", str(kb_dir))
    assert listed.exit_code == 0 and "👎" in listed.stdout and "少了单位" in listed.stdout
    out_file = tmp_path / "fix.jsonl"
    assert run("feedback", "export", str(out_file), "--kb", str(kb_dir)).exit_code == 0
    (case,) = [json.loads(line) for line in out_file.read_text().splitlines()]
    assert case["question"] == "SKU-1024的库存是多少？" and case["category"] == "feedback_down"
    # the rejected answer's first line must not come back; its sources are not gold
    assert case["comment"] == "少了单位" and case["not_answer"] == ["80"]
    assert not case.get("gold_docs")
    evaluated = run("eval", str(out_file), "--kb", str(kb_dir), "--json", "-")
    assert evaluated.exit_code == 0, evaluated.output
    (record,) = json.loads(evaluated.stdout)["records"]
    assert record["category"] == "feedback_down" and record["comment"] == "少了单位"
    assert record["rejected_back"] is True and record["passed"] is False  # "库存：80…" again


def test_the_rag_process_ends_ask_and_retrieve_at_once_with_all_its_output(kb_dir, tmp_path):
    """``python -m rag_app.cli`` (what the ``rag`` script runs): after ask and retrieve it skips
    the interpreter's teardown, so their output must be flushed and their exit codes kept."""
    import subprocess
    import sys

    from rag_app.cli import invoked

    assert invoked(["-v", "ask", "问题", "--kb", "x"]) == "ask" and invoked([]) is None
    doc = tmp_path / "expense.md"
    doc.write_text(DOC, encoding="utf-8")
    assert run("ingest", str(doc), "--kb", str(kb_dir)).exit_code == 0

    def rag(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "rag_app.cli", *args],
                              capture_output=True, text=True, timeout=300)  # fmt: skip

    asked = rag("ask", "报销申请须在多少日内提交？", "--kb", str(kb_dir), "--json")
    assert asked.returncode == 0, asked.stderr
    assert "三十日" in json.loads(asked.stdout)["answer"]  # the whole JSON document arrived
    missing = rag("retrieve", "报销", "--kb", str(tmp_path / "typo"))
    assert missing.returncode == 2 and "no knowledge base at" in missing.stderr


def test_a_one_shot_command_collects_again_after_its_first_answer(kb_dir, tmp_path):
    """``rag ask`` starts with the garbage collector off (its start-up allocates millions of
    objects, nearly none garbage); each question of a file still gets answered, and after the
    first answer the collector runs again over what is new (the start-up's objects frozen)."""
    import subprocess
    import sys

    doc = tmp_path / "expense.md"
    doc.write_text(DOC, encoding="utf-8")
    assert run("ingest", str(doc), "--kb", str(kb_dir)).exit_code == 0
    questions = tmp_path / "questions.txt"
    questions.write_text("报销申请须在多少日内提交？\n差旅住宿标准是多少？\n", encoding="utf-8")
    probe = (
        "import gc, sys\n"
        "from rag_app.cli import run\n"
        "from rag_app.cli import query\n"
        "seen = []\n"
        "emit_answer = query.resume_collection\n"
        "def resume():\n"
        "    seen.append((gc.isenabled(), gc.get_freeze_count()))\n"
        "    emit_answer()\n"
        "    seen.append((gc.isenabled(), gc.get_freeze_count()))\n"
        "    print('SEEN', seen, file=sys.stderr, flush=True)\n"
        "query.resume_collection = resume\n"
        "sys.argv = ['rag', *sys.argv[1:]]\n"
        "run()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, "ask", "--questions", str(questions), "--kb", str(kb_dir),
         "--json"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.strip().splitlines()) == 2  # both answers, as JSON lines
    seen = [line for line in done.stderr.splitlines() if line.startswith("SEEN")][-1]
    steps = eval(seen.removeprefix("SEEN "))  # noqa: S307 - our own repr of (bool, int) pairs
    assert steps[0][0] is False  # off through the start-up and the first answer
    assert steps[1][0] is True and steps[1][1] > 100_000  # then on, the start-up frozen
    assert all(enabled for enabled, _ in steps[2:])
