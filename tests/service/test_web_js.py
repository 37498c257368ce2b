"""The browser UI's pure helpers (rag_app/web/dom.js, api.js, messages.js), run under node:
times, errors as Chinese sentences, and answers streamed as server-sent events (the parser, apiStream on a fake fetch). The UI's scripts are ES modules with a .js name, which node reads as modules only under a
package.json saying so: the test imports copies of them from a directory that has one."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

WEB_DIR = Path(__file__).resolve().parents[2] / "rag_app" / "web"
NODE = shutil.which("node") or shutil.which("nodejs")

pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed")


@pytest.fixture(scope="module")
def modules(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("web_js")
    for script in WEB_DIR.glob("*.js"):
        shutil.copy(script, directory / script.name)
    (directory / "package.json").write_text('{"type": "module"}', encoding="utf-8")
    return directory


def run_js(modules: Path, expression: str, tz: str = "Asia/Shanghai") -> object:
    """``expression`` sees ``ui``: the exports of dom.js, api.js and messages.js."""
    imports = ", ".join(
        f"...(await import({json.dumps((modules / name).as_uri())}))"
        for name in ("dom.js", "api.js", "messages.js")
    )
    script = f"const ui = {{{imports}}}; console.log(JSON.stringify({expression}));"
    assert NODE is not None
    out = subprocess.run(
        [NODE, "--input-type=module", "-e", script],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "TZ": tz},
        timeout=60,
    )
    return json.loads(out.stdout)


def test_times_are_local_with_their_zone_and_zoneless_server_times_are_utc(
    modules: Path,
) -> None:
    shown = run_js(
        modules,
        "['2024-05-01T08:30:00', '2024-05-01T08:30:00.5+00:00', '2024-05-01T08:30:00Z']"
        ".map(ui.fmtTime)",
    )
    assert shown == ["2024-05-01 16:30:00 UTC+8"] * 3
    assert (
        run_js(modules, "ui.fmtTime('2024-05-01T08:30:00')", tz="UTC")
        == "2024-05-01 08:30:00 UTC+0"
    )
    assert run_js(modules, "ui.fmtTime('')") == "—"


def test_errors_are_chinese_sentences_with_the_servers_words_apart(modules: Path) -> None:
    """errText: a Chinese sentence (a known server message its own, else its status's);
    errDetail: the status and the server's words, for the small line under it."""
    cases = [
        [500, "Internal Server Error"],
        [415, "unsupported file type '.exe' (supported: .md, .txt)"],
        [413, "file too large: more than 50 MB (RAG_UPLOAD_MAX_MB)"],
        [422, "empty file"],
        [409, "collection 'HR制度' exists"],
        [401, "invalid or revoked API key"],
        [403, "role 'reader' cannot change documents"],
        [404, "no document 3f2a"],
        [429, "slow down"],
        [503, "ledger is locked"],
        [502, "Bad Gateway"],
        [418, "teapot"],
        [422, "body.question: String should have at most 2000 characters"],
    ]
    got = run_js(
        modules,
        f"{json.dumps(cases)}.map(function (a) {{"
        " var e = new ui.ApiError(a[0], a[1], null); return [ui.errText(e), ui.errDetail(e)]; })",
    )
    assert got == [
        ["服务器内部错误，请稍后再试。", "HTTP 500"],
        [
            "不支持此文件类型（.exe）。支持 Markdown、TXT、HTML、PDF、Word、Excel、CSV、PowerPoint。",
            "HTTP 415 · unsupported file type '.exe' (supported: .md, .txt)",
        ],
        [
            "文件过大：超过上传上限 50 MB。",
            "HTTP 413 · file too large: more than 50 MB (RAG_UPLOAD_MAX_MB)",
        ],
        ["文件是空的。", "HTTP 422 · empty file"],
        ["集合「HR制度」已存在，请换一个名称。", "HTTP 409 · collection 'HR制度' exists"],
        ["API key 无效或已被吊销。", "HTTP 401 · invalid or revoked API key"],
        ["只读 key（reader）不能修改文档。", "HTTP 403 · role 'reader' cannot change documents"],
        ["找不到该文档（可能已被删除）。", "HTTP 404 · no document 3f2a"],
        ["请求过于频繁，请稍后再试。", "HTTP 429 · slow down"],
        ["服务暂不可用，请稍后再试。", "HTTP 503 · ledger is locked"],
        ["服务暂不可用，请稍后再试。", "HTTP 502"],  # a body that only repeats the status
        ["请求失败。", "HTTP 418 · teapot"],
        ["请求内容无效。", "HTTP 422 · body.question: String should have at most 2000 characters"],
    ]
    # made here (no connection, a cut stream): said in Chinese, the technical cause apart
    made = run_js(
        modules,
        "(function () { var e = new ui.ApiError(0, 'Failed to fetch', null, '无法连接服务。');"
        " return [ui.errText(e), ui.errDetail(e)]; })()",
    )
    assert made == ["无法连接服务。", "Failed to fetch"]


def test_a_documents_parse_failure_is_a_chinese_sentence(modules: Path) -> None:
    """The readers' messages (rag_app/readers) as the document row says them."""
    messages = [
        "not a valid PDF file (PdfiumError: Failed to load document (PDFium: Data format error).)",
        "encrypted PDF: a password is required to open it",
        "PDF has no extractable text (scanned or image-only?; OCR is off)",
        "PDF has 3000 pages (limit 2000)",
        "empty workbook (no cell text in any sheet)",
        "cannot decode text (tried UTF-8, GB18030, UTF-16)",
        "parse exceeded 120 s (set RAG_PARSE_TIMEOUT)",
        "something new",
        "",
    ]
    got = run_js(modules, f"{json.dumps(messages)}.map(ui.parseErrText)")
    assert got == [
        "不是有效的 PDF 文件（可能已损坏，或扩展名与内容不符）。",
        "PDF 已加密，需要密码才能打开。",
        "PDF 中没有可提取的文字（可能是扫描件，OCR 未开启）。",
        "PDF 共 3000 页，超过上限 2000 页。",
        "文件中没有可读取的文字。",
        "无法识别文字编码（已尝试 UTF-8、GB18030、UTF-16）。",
        "解析超时（超过 120 秒）。",
        "解析失败。",
        "解析失败。",
    ]


def test_list_times_are_short_and_local(modules: Path) -> None:
    """fmtShortTime: 今天/昨天 HH:MM, this year's M月D日 HH:MM, another year's date; epoch
    seconds (a conversation's times) or a zoneless server time (UTC) alike."""
    now = "2024-05-02T10:00:00+08:00"
    got = run_js(
        modules,
        f"[1714616400, '2024-05-02T01:30:00', '2024-05-01T08:30:00Z', '2024-03-05T08:30:00Z',"
        f" '2023-12-31T08:30:00Z', null, 'bogus'].map(function (v) {{"
        f" return ui.fmtShortTime(v, {json.dumps(now)}); }})",
    )
    assert got == [
        "今天 10:20",
        "今天 09:30",
        "昨天 16:30",
        "3月5日 16:30",
        "2023-12-31",
        "—",
        "bogus",
    ]


# the events /api/chat streams (rag_app/service/streaming.py), a keep-alive comment among them
EVENTS = [
    ("delta", '{"text": "一线城市住宿标准为每晚 600 元[1]"}'),
    ("delta", '{"text": "。\\n其他城市 400 元。"}'),
    ("answer", '{"answer": "一线城市住宿标准为每晚 600 元[1]。", "sources": [{}]}'),
    ("end", "{}"),
]


def _stream_text(newline: str) -> str:
    lines: list[str] = []
    for i, (name, data) in enumerate(EVENTS):
        if i == 1:
            lines.append(": keep-alive")
        lines += [f"event: {name}", f"data: {data}", ""]
    return newline.join(lines) + newline


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_server_sent_events_split_anywhere_parse_the_same(modules: Path, newline: str) -> None:
    """The parser gets the stream as it arrives: whole, a character at a time, or cut in two at
    every point (between CR and LF too); LF, CR LF and CR all end lines."""
    text = _stream_text(newline)
    got = run_js(
        modules,
        f"""(function (text) {{
            function run(pieces) {{
                var got = [];
                var parser = ui.sseParser(function (name, data) {{ got.push([name, data]); }});
                pieces.forEach(function (p) {{ parser.push(p); }});
                parser.end();
                return got;
            }}
            var whole = run([text]);
            var same = run(text.split("")).length === whole.length &&
                JSON.stringify(run(text.split(""))) === JSON.stringify(whole);
            for (var i = 0; i <= text.length; i++) {{
                var two = run([text.slice(0, i), text.slice(i)]);
                if (JSON.stringify(two) !== JSON.stringify(whole)) same = "split at " + i;
            }}
            return {{whole: whole, same: same}};
        }})({json.dumps(text)})""",
    )
    assert got == {"whole": [list(e) for e in EVENTS], "same": True}


def test_server_sent_events_data_lines_join_and_a_last_event_counts(modules: Path) -> None:
    got = run_js(
        modules,
        """(function () {
            var got = [];
            var parser = ui.sseParser(function (name, data) { got.push([name, data]); });
            parser.push("data: a\\ndata:b\\nid: 7\\n\\nevent: x\\n\\nevent: last\\ndata: {}");
            parser.end();
            return got;
        })()""",
    )
    # no event name: "message"; an event without data is none; the unterminated last one counts
    assert got == [["message", "a\nb"], ["last", "{}"]]


def _stream_js(body: str, status: int = 200, content_type: str = "text/event-stream") -> str:
    """An expression: apiStream against a fake fetch that answers ``body`` in 5-byte pieces
    (a UTF-8 character cut in two), with what it was sent, the pieces and the outcome."""
    return f"""await (async function () {{
        var sent = null;
        var bytes = new TextEncoder().encode({json.dumps(body)});
        globalThis.fetch = async function (path, init) {{
            sent = {{path: path, body: JSON.parse(init.body)}};
            var stream = new ReadableStream({{start: function (c) {{
                for (var i = 0; i < bytes.length; i += 5) c.enqueue(bytes.slice(i, i + 5));
                c.close();
            }}}});
            return new Response(stream, {{
                status: {status}, headers: {{"Content-Type": {json.dumps(content_type)}}},
            }});
        }};
        var deltas = [];
        var out = {{canStream: ui.canStream()}};
        try {{
            out.answer = await ui.apiStream("/api/chat", {{question: "q", collection: null}},
                function (piece, sofar) {{ deltas.push([piece, sofar]); }});
        }} catch (err) {{
            out.error = [err instanceof ui.ApiError, err.status, ui.errText(err)];
        }}
        out.sent = sent;
        out.deltas = deltas;
        return out;
    }})()"""


def test_a_streamed_answer_is_the_answer_event_with_the_deltas_on_the_way(modules: Path) -> None:
    got = run_js(modules, _stream_js(_stream_text("\r\n")))
    assert isinstance(got, dict)
    assert got["canStream"] is True
    assert got["sent"] == {
        "path": "/api/chat",
        "body": {"question": "q", "collection": None, "stream": True},
    }
    first = "一线城市住宿标准为每晚 600 元[1]"
    assert got["deltas"] == [
        [first, first],
        ["。\n其他城市 400 元。", first + "。\n其他城市 400 元。"],
    ]
    # the answer event's text counts (here shorter than the deltas)
    assert got["answer"] == {"answer": "一线城市住宿标准为每晚 600 元[1]。", "sources": [{}]}


def test_a_streamed_failure_an_http_error_and_a_cut_stream_are_errors(modules: Path) -> None:
    failed = (
        'event: delta\ndata: {"text": "一"}\n\nevent: error\ndata: '
        + json.dumps({"status": 503, "detail": "ledger is locked"})
        + "\n\nevent: end\ndata: {}\n\n"
    )
    got = run_js(modules, _stream_js(failed))
    assert isinstance(got, dict)
    assert got["error"] == [True, 503, "服务暂不可用，请稍后再试。"]
    assert got["deltas"] == [["一", "一"]]

    not_found = json.dumps({"detail": "no collection '财务'"})
    got = run_js(modules, _stream_js(not_found, 404, "application/json"))
    assert isinstance(got, dict)
    assert got["error"] == [True, 404, "集合「财务」不存在（可能已被删除）。"]

    cut = 'event: delta\ndata: {"text": "一线"}\n\n'
    got = run_js(modules, _stream_js(cut))
    assert isinstance(got, dict)
    assert got["error"][:2] == [True, 0] and "连接中断" in got["error"][2]

    # a server that answers with JSON all the same: that is the answer
    got = run_js(modules, _stream_js(json.dumps({"answer": "好"}), 200, "application/json"))
    assert isinstance(got, dict)
    assert got["answer"] == {"answer": "好"} and got["deltas"] == []
