"""A chat people read (issue 68, item 3), in headless Debian Chromium at 1280×800.

Every turn shows its answer, also when the conversation is reopened from 历史对话 (titled by its
first question, with a local time); the box is empty once a question is sent; scores, the gate
and timings wait behind 详情; each turn's sources fold away. The document table is one line per
document (≥ 12 in view at 1280×800), its actions in a ⋯ menu; the chunk viewer opens beside the
answer. Errors are Chinese sentences naming the file. Screenshots go to the test's tmp_path, or to
$RAG_SHOTS_DIR when set (e.g. /tmp/shots).
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.service.browser_helpers import (
    INGEST_TIMEOUT_MS,
    Live,
    PageWatch,
    Shots,
    api_get,
    delete,
    launch_chromium,
    live_app,
    row_action,
    save_key,
    sized_page,
    skip_without_browser,
    upload,
)

skip_without_browser()

from playwright.sync_api import expect, sync_playwright  # noqa: E402

# read at import: the autouse fixture clears RAG_* variables before every test
SHOTS_DIR = os.environ.get("RAG_SHOTS_DIR", "")
WIDTH, HEIGHT = 1280, 800

STOCK_FILE = "库存明细.md"
STOCK_MD = """# 库存明细

| SKU | 名称 | 库存 | 仓库 |
| --- | --- | --- | --- |
| SKU-1023 | 螺丝 | 120 | 苏州三号仓 |
| SKU-1024 | 螺母 | 80 | 上海一号仓 |
"""
# a knowledge base of office rules: enough documents to fill the table
TOPICS = [
    ("考勤管理", "员工每天上班时间为 9:00，迟到 30 分钟以上按旷工半天处理。"),
    ("年假规定", "员工每年享有带薪年假 12 天，入职满十年的员工每年享有 15 天。"),
    ("报销流程", "费用报销须在费用发生后 30 日内提交，逾期不予受理。"),
    ("差旅标准", "一线城市住宿标准为每晚 600 元，其他城市为每晚 400 元。"),
    ("会议室预订", "会议室须提前 2 小时在系统中预订，单次预订不超过 4 小时。"),
    ("办公用品", "办公用品每月 5 日统一申领，单人每月不超过 200 元。"),
    ("加班管理", "工作日加班须提前申请，每月加班不超过 36 小时。"),
    ("访客登记", "访客须在前台登记身份证件，由接待员工全程陪同。"),
    ("信息安全", "办公电脑须设置锁屏密码，离开座位时须锁定屏幕。"),
    ("培训制度", "新员工入职一周内须完成安全与合规培训，考试合格后上岗。"),
    ("车辆使用", "公务用车须提前一天申请，由行政部统一调度。"),
    ("印章管理", "公章使用须经部门负责人审批并在用印登记簿登记。"),
    ("绩效考核", "绩效考核每季度进行一次，结果分为 A、B、C、D 四档。"),
]


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory, embed_model: Any) -> Iterator[Live]:
    with live_app(tmp_path_factory.mktemp("browser_chat"), embed_model) as running:
        yield running


@pytest.fixture(scope="module")
def documents(live: Live) -> dict[str, str]:
    """The stock list and 13 office rules, uploaded and ingested: file name -> doc id."""
    ids = {STOCK_FILE: upload(live, STOCK_FILE, STOCK_MD)}
    for i, (topic, text) in enumerate(TOPICS, 1):
        name = f"{i:02d}-{topic}制度.md"
        ids[name] = upload(live, name, f"# {topic}制度\n\n## 规定\n\n{text}\n")
    deadline = time.monotonic() + INGEST_TIMEOUT_MS / 1000
    while time.monotonic() < deadline:
        listed = api_get(live, "/api/documents?limit=100", live.editor_key)["documents"]
        status = {d["doc_id"]: d["status"] for d in listed}
        if all(status.get(i) == "SUCCESS" for i in ids.values()):
            return ids
        assert not any(status.get(i) == "FAILED" for i in ids.values()), listed
        time.sleep(0.5)
    raise AssertionError(f"not ingested in time: {status}")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_playwright() as playwright:
        chromium = launch_chromium(playwright)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context, page = sized_page(browser, WIDTH, HEIGHT)
    try:
        yield page
    finally:
        context.close()


def shots(page: Any, tmp_path: Path, name: str) -> Shots:
    return Shots(page, Path(SHOTS_DIR) / name if SHOTS_DIR else tmp_path)


def ask(page: Any, question: str) -> None:
    page.get_by_test_id("ask-input").fill(question)
    page.get_by_test_id("ask-button").click()


def refuse_with(status: int) -> Any:
    """A route handler answering every request with ``status`` and an English detail."""

    def handler(route: Any) -> None:
        route.fulfill(status=status, json={"detail": "try again later"})

    return handler


def box(locator: Any) -> dict[str, float]:
    found = locator.bounding_box()
    assert found is not None, locator
    return dict(found)


def test_every_turn_shows_its_answer_also_reopened_from_history(
    live: Live, documents: dict[str, str], page: Any, tmp_path: Path
) -> None:
    """Two turns, the second a follow-up: both answers in the thread, in view at 1280×800; the
    box emptied on sending; 详情 folded; the first turn's sources folded and its markers live.
    Reopened after a reload from 历史对话 (first question · local time · turns): both again."""
    watch = PageWatch().attach(page)
    shot = shots(page, tmp_path, "chat")
    page.goto(live.url + "/")
    save_key(page, live.editor_key)
    expect(page.get_by_test_id("doc-row")).to_have_count(len(documents))
    box_input = page.get_by_test_id("ask-input")
    answer = page.get_by_test_id("answer")

    ask(page, "SKU-1023的库存是多少？")
    expect(box_input).to_have_value("")  # sent: the box is for the next question
    expect(page.get_by_test_id("answer-question")).to_have_text("SKU-1023的库存是多少？")
    expect(answer).to_contain_text("120", timeout=INGEST_TIMEOUT_MS)  # the first ask loads models
    # the diagnostics wait behind 详情; the sources show file and path, no scores
    timings = page.get_by_test_id("timings")
    expect(timings).to_be_hidden()
    expect(page.get_by_test_id("source-item").first).to_contain_text(STOCK_FILE)
    expect(page.get_by_test_id("sources")).not_to_contain_text("score")
    expect(page.get_by_test_id("sources")).not_to_contain_text("0.")
    page.get_by_test_id("diagnostics-toggle").click()
    expect(timings).to_be_visible()
    expect(timings).to_contain_text("置信度")
    expect(timings).to_contain_text("相关度 [1] ")
    expect(timings).to_contain_text(" ms")
    shot("details-open")
    page.get_by_test_id("diagnostics-toggle").click()
    expect(timings).to_be_hidden()

    ask(page, "那SKU-1024呢？")
    expect(box_input).to_have_value("")
    expect(page.get_by_test_id("answer-resolved")).to_have_text(
        "理解为：SKU-1024的库存是多少？", timeout=INGEST_TIMEOUT_MS
    )
    expect(answer).to_contain_text("80")
    earlier = page.get_by_test_id("chat-turn")
    expect(earlier).to_have_count(1)
    expect(earlier.get_by_test_id("turn-question")).to_have_text("SKU-1023的库存是多少？")
    first_answer = earlier.get_by_test_id("turn-answer")
    expect(first_answer).to_contain_text("120")
    # both answers readable on one screen, the question box under them
    for node in (first_answer, answer, box_input):
        expect(node).to_be_in_viewport()
    assert box(first_answer)["y"] < box(answer)["y"] < box(box_input)["y"]
    expect(earlier.get_by_test_id("turn-diagnostics").locator(".timings")).to_be_hidden()
    # the earlier turn's sources: folded, a click unfolds them; its [n] opens its own source
    earlier_sources = earlier.get_by_test_id("turn-sources")
    expect(earlier_sources.get_by_test_id("turn-source-file").first).to_be_hidden()
    shot("two-turns")
    earlier_sources.locator("summary").click()
    expect(earlier_sources.get_by_test_id("turn-source-file").first).to_have_text(STOCK_FILE)
    first_answer.get_by_test_id("citation-marker").first.click()
    popup = page.get_by_test_id("citation-popup")
    expect(popup.get_by_test_id("citation-filename")).to_have_text(STOCK_FILE)
    expect(popup.locator("tr.cited")).to_contain_text("120")  # that turn's row highlighted
    page.keyboard.press("Escape")
    expect(popup).to_be_hidden()

    # reopened after a reload: titled by its first question with a local time; both answers
    page.reload()
    history = page.get_by_test_id("chat-history")
    entry = history.locator("option", has_text="SKU-1023的库存是多少？")
    expect(entry).to_have_count(1)
    expect(entry).to_have_text(re.compile(r"^SKU-1023的库存是多少？ · 今天 \d\d:\d\d · 2 轮$"))
    history.select_option(entry.get_attribute("value"))
    expect(earlier).to_have_count(1)
    expect(first_answer).to_contain_text("120")
    expect(answer).to_contain_text("80")
    expect(page.get_by_test_id("answer-question")).to_have_text("那SKU-1024呢？")
    expect(page.get_by_test_id("answer-resolved")).to_have_text("理解为：SKU-1024的库存是多少？")
    expect(first_answer).to_be_in_viewport()
    expect(answer).to_be_in_viewport()
    shot("reopened")
    watch.assert_clean()


def test_one_line_per_document_and_the_chunks_beside_the_answer(
    live: Live, documents: dict[str, str], page: Any, tmp_path: Path
) -> None:
    """At 1280×800 at least 12 document rows lie wholly in view (one line each, actions in a ⋯
    menu); 查看分块 opens the chunks beside the answer, both on screen."""
    watch = PageWatch().attach(page)
    shot = shots(page, tmp_path, "documents")
    page.goto(live.url + "/")
    save_key(page, live.editor_key)
    rows = page.get_by_test_id("doc-row")
    expect(rows).to_have_count(len(documents))
    expect(rows.first).to_have_attribute("data-status", "SUCCESS")
    in_view = page.evaluate(
        """() => {
            const wrap = document.querySelector('.table-wrap').getBoundingClientRect();
            const bottom = Math.min(window.innerHeight, wrap.bottom);
            return [...document.querySelectorAll('[data-testid=doc-row]')].filter((row) => {
                const r = row.getBoundingClientRect();
                return r.height > 0 && r.top >= wrap.top && r.bottom <= bottom + 0.5;
            }).map((row) => row.getBoundingClientRect().height);
        }"""
    )
    assert len(in_view) >= 12, in_view
    assert max(in_view) <= 36, in_view  # one line each
    # the actions are behind ⋯, not beside every row
    stock = rows.filter(has_text=STOCK_FILE)
    expect(stock.get_by_test_id("chunks-button")).to_be_hidden()
    assert page.evaluate("document.documentElement.scrollWidth") <= WIDTH
    shot("documents-1280x800")

    ask(page, "SKU-1024在哪个仓库？")
    answer = page.get_by_test_id("answer")
    expect(answer).to_contain_text("上海一号仓", timeout=INGEST_TIMEOUT_MS)
    row_action(stock, "chunks-button")
    shot("row-menu")
    stock.get_by_test_id("chunks-button").click()
    panel = page.get_by_test_id("chunk-panel")
    expect(panel.get_by_test_id("chunk-item").first).to_be_visible()
    expect(panel.get_by_test_id("chunk-list").locator("table td").first).to_have_text("SKU-1023")
    # beside the answer: side by side, overlapping vertically, both in the viewport
    expect(panel).to_be_in_viewport()
    expect(answer).to_be_in_viewport()
    p, a = box(panel), box(answer)
    assert p["x"] + p["width"] <= a["x"] or a["x"] + a["width"] <= p["x"], (p, a)
    assert p["y"] < a["y"] + a["height"] and a["y"] < p["y"] + p["height"], (p, a)
    assert p["y"] < HEIGHT / 2, p  # not below the fold
    shot("chunks-beside-answer")
    page.get_by_test_id("chunk-close").click()
    expect(panel).to_be_hidden()
    expect(stock).to_be_visible()
    watch.assert_clean()


def test_errors_are_chinese_sentences_naming_the_file(
    live: Live, documents: dict[str, str], page: Any, tmp_path: Path
) -> None:
    """A refused upload names the file and says why in Chinese (the server's words in small type);
    a failed question says why in Chinese and puts the question back in the box."""
    watch = PageWatch().attach(page)
    shot = shots(page, tmp_path, "errors")
    page.goto(live.url + "/")
    save_key(page, live.editor_key)
    expect(page.get_by_test_id("doc-row")).to_have_count(len(documents))
    program, empty = tmp_path / "程序.exe", tmp_path / "空白.md"
    program.write_bytes(b"MZ\x90\x00" + bytes(range(256)))
    empty.write_bytes(b"")
    page.get_by_test_id("upload-input").set_input_files([str(program), str(empty)])
    items = page.get_by_test_id("upload-error-item")
    expect(items).to_have_count(2)
    expect(items.nth(0).locator(".err-main")).to_have_text(
        "「程序.exe」上传失败：不支持此文件类型（.exe）。"
        "支持 Markdown、TXT、HTML、PDF、Word、Excel、CSV、PowerPoint。"
    )
    expect(items.nth(0).get_by_test_id("err-detail")).to_contain_text("HTTP 415")
    expect(items.nth(1).locator(".err-main")).to_have_text("「空白.md」上传失败：文件是空的。")
    for main in items.locator(".err-main").all_inner_texts():
        assert not re.search(r"unsupported|empty|HTTP|doc_id", main), main

    # accepted but unreadable: its row says why in a sentence, a click adds the reader's words
    broken = tmp_path / "损坏.pdf"
    broken.write_bytes(b"%PDF-1.4 not really a PDF")
    page.get_by_test_id("upload-input").set_input_files(str(broken))
    row = page.get_by_test_id("doc-row").filter(has_text="损坏.pdf")
    expect(row).to_have_attribute("data-status", "FAILED", timeout=INGEST_TIMEOUT_MS)
    expect(row.get_by_test_id("doc-status")).to_have_text("失败")
    why = row.get_by_test_id("doc-error-text")
    expect(why.locator(".err-main")).to_have_text(
        "解析失败：不是有效的 PDF 文件（可能已损坏，或扩展名与内容不符）。"
    )
    expect(why.get_by_test_id("doc-error-detail")).to_be_hidden()
    why.click()
    expect(why.get_by_test_id("doc-error-detail")).to_contain_text("not a valid PDF file")
    shot("upload-errors")
    delete(live, row.get_attribute("data-doc-id") or "")

    # a busy server (429) and a broken one (503): the reason in words, the question kept
    for status, words in ((429, "请求过于频繁，请稍后再试。"), (503, "服务暂不可用，请稍后再试。")):
        page.route("**/api/chat", refuse_with(status))
        ask(page, "SKU-1023的库存是多少？")
        error = page.get_by_test_id("ask-error")
        expect(error.locator(".err-main")).to_have_text("提问失败：" + words)
        expect(error.get_by_test_id("err-detail")).to_have_text(f"HTTP {status} · try again later")
        expect(page.get_by_test_id("ask-input")).to_have_value("SKU-1023的库存是多少？")
        expect(page.locator("#answer-box")).to_be_hidden()
        page.unroute("**/api/chat")
    shot("ask-error")
    watch.assert_clean(expected_statuses=(415, 422, 429, 503))


def test_an_editor_corrects_an_answer_and_the_same_question_gets_it(
    live: Live, documents: dict[str, str], page: Any, tmp_path: Path
) -> None:
    """纠正 opens a dialog prefilled with the question and the answer's first line; an empty
    answer, and a source the server no longer has, are said in Chinese inside it; 保存 says it
    is saved. Asked again, the question gets the corrected text with a 人工标注 badge (author,
    local time, 完全匹配)."""
    import httpx

    watch = PageWatch().attach(page)
    shot = shots(page, tmp_path, "annotate")
    page.goto(live.url + "/")
    save_key(page, live.editor_key)
    expect(page.get_by_test_id("doc-row")).to_have_count(len(documents))
    question = "会议室单次最多可以预订多长时间？"
    ask(page, question)
    answer = page.get_by_test_id("answer")
    expect(answer).to_contain_text("4 小时", timeout=INGEST_TIMEOUT_MS)
    expect(page.get_by_test_id("answer-annotation")).to_be_hidden()

    page.get_by_test_id("feedback-correct").click()
    dialog = page.get_by_test_id("annotate-dialog")
    expect(dialog).to_be_visible()
    expect(dialog.get_by_test_id("annotate-question")).to_have_value(question)
    first_line = answer.inner_text().split("\n")[0]
    first_line = re.sub(r"\[\d+\]", "", first_line).strip()
    expect(dialog.get_by_test_id("annotate-answer")).to_have_value(first_line)
    chunk = dialog.get_by_test_id("annotate-chunk")
    expect(chunk.locator("option")).not_to_have_count(1)  # 不引用来源 and the answer's sources
    error = dialog.get_by_test_id("annotate-error")
    # no answer and not 应拒答: said in the dialog, nothing sent
    dialog.get_by_test_id("annotate-answer").fill("")
    dialog.get_by_test_id("annotate-save").click()
    expect(error).to_have_text("请填写正确答案，或勾选“应拒答”。")
    # the server's refusal (a source gone meanwhile) as a Chinese sentence
    corrected = "会议室单次预订不超过 3 小时（2026 年起）。"
    dialog.get_by_test_id("annotate-answer").fill(corrected)
    page.route(
        "**/api/annotations",
        lambda route: route.fulfill(
            status=422, json={"detail": "no current chunk x this key can read"}
        ),
    )
    dialog.get_by_test_id("annotate-save").click()
    expect(error.locator(".err-main")).to_have_text(
        "保存失败：所选来源已不存在（文档可能已重新解析或删除），或此 key 无权读取：请重新选择来源。"
    )
    expect(dialog).to_be_visible()
    page.unroute("**/api/annotations")
    chunk.select_option(index=1)
    shot("dialog")
    dialog.get_by_test_id("annotate-save").click()
    expect(dialog).to_be_hidden()
    expect(page.get_by_test_id("feedback-status")).to_have_text(
        "已保存标注，相同或相近的问题将直接使用此答案。"
    )
    saved = api_get(live, "/api/annotations", live.editor_key)["annotations"]
    assert [(a["question"], a["answer"], a["citation"]) for a in saved] == [
        (question, corrected, "current")
    ]

    ask(page, question)
    expect(answer).to_have_text(corrected, timeout=INGEST_TIMEOUT_MS)
    badge = page.get_by_test_id("answer-annotation")
    expect(badge).to_be_visible()
    expect(badge).to_have_text(
        re.compile(r"^人工标注 · browser test editor · 今天 \d\d:\d\d · 完全匹配$")
    )
    # under the answer, above the sources (the cited chunk is its source)
    assert box(answer)["y"] < box(badge)["y"] < box(page.get_by_test_id("sources"))["y"]
    expect(page.get_by_test_id("source-item")).to_have_count(1)
    # the earlier turn keeps the documents' answer, with a 纠正 of its own and no badge
    earlier = page.get_by_test_id("chat-turn").last
    expect(earlier.get_by_test_id("turn-answer")).to_contain_text("4 小时")
    expect(earlier.get_by_test_id("turn-annotation")).to_be_hidden()
    expect(earlier.get_by_test_id("turn-correct")).to_be_visible()
    shot("annotated-answer")
    for a in saved:  # the module's other tests see the documents' answers
        httpx.delete(f"{live.url}/api/annotations/{a['annotation_id']}", headers=live.editor)
    watch.assert_clean(expected_statuses=(422,))
