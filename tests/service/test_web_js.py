"""The browser UI's pure helpers (rag_app/web/dom.js, api.js), run under node: times and error
words. The UI's scripts are ES modules with a .js name, which node reads as modules only under a
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
    """``expression`` sees ``ui``: the exports of dom.js and api.js."""
    dom, api = ((modules / name).as_uri() for name in ("dom.js", "api.js"))
    script = (
        f"const ui = {{...(await import({json.dumps(dom)})), ...(await import({json.dumps(api)}))}};"
        f" console.log(JSON.stringify({expression}));"
    )
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


def test_errors_are_words_with_the_servers_reason(modules: Path) -> None:
    texts = run_js(
        modules,
        "[[500, 'Internal Server Error'], [415, \"unsupported file type '.exe'\"], "
        "[503, 'ledger is locked'], [418, 'teapot'], [0, '无法连接服务']]"
        ".map(function (a) { return ui.errText(new ui.ApiError(a[0], a[1], null)); })",
    )
    assert texts == [
        "服务器内部错误（HTTP 500）",
        "文件类型不支持：unsupported file type '.exe'（HTTP 415）",
        "服务暂不可用：ledger is locked（HTTP 503）",
        "请求失败：teapot（HTTP 418）",
        "无法连接服务",
    ]
