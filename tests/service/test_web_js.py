"""The browser UI's pure helpers (rag_app/web/app.js), run under node: times and error words."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

APP_JS = Path(__file__).resolve().parents[2] / "rag_app" / "web" / "app.js"
NODE = shutil.which("node") or shutil.which("nodejs")

pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed")


def run_js(expression: str, tz: str = "Asia/Shanghai") -> object:
    script = (
        f"const ui = require({json.dumps(str(APP_JS))}); console.log(JSON.stringify({expression}));"
    )
    assert NODE is not None
    out = subprocess.run(
        [NODE, "-e", script],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "TZ": tz},
        timeout=60,
    )
    return json.loads(out.stdout)


def test_times_are_local_with_their_zone_and_zoneless_server_times_are_utc() -> None:
    shown = run_js(
        "['2024-05-01T08:30:00', '2024-05-01T08:30:00.5+00:00', '2024-05-01T08:30:00Z']"
        ".map(ui.fmtTime)"
    )
    assert shown == ["2024-05-01 16:30:00 UTC+8"] * 3
    assert run_js("ui.fmtTime('2024-05-01T08:30:00')", tz="UTC") == "2024-05-01 08:30:00 UTC+0"
    assert run_js("ui.fmtTime('')") == "—"


def test_errors_are_words_with_the_servers_reason() -> None:
    texts = run_js(
        "[[500, 'Internal Server Error'], [415, \"unsupported file type '.exe'\"], "
        "[503, 'ledger is locked'], [418, 'teapot'], [0, '无法连接服务']]"
        ".map(function (a) { return ui.errText(new ui.ApiError(a[0], a[1], null)); })"
    )
    assert texts == [
        "服务器内部错误（HTTP 500）",
        "文件类型不支持：unsupported file type '.exe'（HTTP 415）",
        "服务暂不可用：ledger is locked（HTTP 503）",
        "请求失败：teapot（HTTP 418）",
        "无法连接服务",
    ]
