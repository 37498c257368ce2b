"""The UI's Markdown parser (rag_app/web/markdown.js) under node: blocks and inline tokens keep
their character ranges in the source text, which is what lets the citation pop-up mark a cited
sentence or table row. The DOM half (render) is covered by tests/service/test_browser.py."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

MARKDOWN_JS = Path(__file__).resolve().parents[2] / "rag_app" / "web" / "markdown.js"
NODE = shutil.which("node") or shutil.which("nodejs")

pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed")

TABLE = (
    "## 第四条 交通标准\n\n| 职级 | 火车 | 飞机 |\n| --- | --- | --- |\n"
    "| 普通员工 | 二等座 | 经济舱 |\n| 部门负责人 | 一等座 | 经济舱 |"
)


def run_js(expression: str, **values: object) -> object:
    bindings = "".join(f"const {name} = {json.dumps(v)};" for name, v in values.items())
    script = (
        f"const md = require({json.dumps(str(MARKDOWN_JS))}); {bindings}"
        f"console.log(JSON.stringify({expression}));"
    )
    assert NODE is not None
    out = subprocess.run(
        [NODE, "-e", script], capture_output=True, text=True, check=True, timeout=60
    )
    return json.loads(out.stdout)


def _slice(text: str, span: list[int]) -> str:
    return text[span[0] : span[1]]


def test_a_table_keeps_each_rows_range_and_its_cells() -> None:
    blocks = run_js("md.parse(text)", text=TABLE)
    assert isinstance(blocks, list)
    assert [b["type"] for b in blocks] == ["heading", "table"]
    assert _slice(TABLE, blocks[0]["parts"][0]) == "第四条 交通标准"
    rows = blocks[1]["rows"]
    assert [r["header"] for r in rows] == [True, False, False]  # the separator is no row
    lines = TABLE.split("\n")
    assert [TABLE[r["from"] : r["to"]] for r in rows] == [lines[2], lines[4], lines[5]]
    assert [_slice(TABLE, c) for c in rows[2]["cells"]] == ["部门负责人", "一等座", "经济舱"]
    # the answer step's row citation (start/end in the source text) falls on that row
    start = TABLE.index("| 部门负责人")
    assert (rows[2]["from"], rows[2]["to"]) == (start, len(TABLE))


def test_blocks_and_inline_tokens() -> None:
    text = (
        "- 一项 **粗体** 和 `代码`\n- 二项 [链接](https://x.cn)\n\n1. 甲\n2. 乙\n\n"
        "```py\nx = 1\n```\n> 引用\n> 二行\n\n正文一行\n续行 *强调*\n\n<img src=x onerror=alert(1)>"
    )
    blocks = run_js("md.parse(text)", text=text)
    assert isinstance(blocks, list)
    assert [b["type"] for b in blocks] == ["list", "list", "code", "quote", "para", "para"]
    assert [b["ordered"] for b in blocks[:2]] == [False, True]
    assert [_slice(text, i["parts"][0]) for i in blocks[1]["items"]] == ["甲", "乙"]
    assert _slice(text, blocks[2]["parts"][0]) == "x = 1"
    assert [_slice(text, p) for p in blocks[3]["parts"]] == ["引用", "二行"]
    assert [_slice(text, p) for p in blocks[4]["parts"]] == ["正文一行", "续行 *强调*"]
    # HTML is no block of its own: it stays text (render puts it in a text node)
    assert _slice(text, blocks[5]["parts"][0]) == "<img src=x onerror=alert(1)>"

    first = blocks[0]["items"][0]["parts"][0]
    tokens = run_js("md.inline(text, a, b)", text=text, a=first[0], b=first[1])
    assert isinstance(tokens, list)
    assert [(t["type"], text[t["from"] : t["to"]]) for t in tokens] == [
        ("text", "一项 "),
        ("strong", "粗体"),
        ("text", " 和 "),
        ("code", "代码"),
    ]
    second = blocks[0]["items"][1]["parts"][0]
    link = run_js("md.inline(text, a, b)[1]", text=text, a=second[0], b=second[1])
    assert isinstance(link, dict)
    assert (text[link["from"] : link["to"]], link["href"]) == ("链接", "https://x.cn")


def test_marks_cut_text_where_repeated_and_cited_ranges_begin_and_end() -> None:
    marks = [{"from": 0, "to": 3, "kind": "repeat"}, {"from": 2, "to": 6, "kind": "cite"}]
    pieces = run_js("md.pieces(0, 10, marks)", marks=marks)
    assert pieces == [
        {"from": 0, "to": 2, "kinds": {"repeat": True}},
        {"from": 2, "to": 3, "kinds": {"repeat": True, "cite": True}},
        {"from": 3, "to": 6, "kinds": {"cite": True}},
        {"from": 6, "to": 10, "kinds": {}},
    ]


def test_server_offsets_count_code_points() -> None:
    # "𠀀" (U+20000) is one code point for Python, two UTF-16 units for JavaScript
    assert run_js("[1, 2, 9].map(function (n) { return md.unitIndex('𠀀ab', n); })") == [2, 3, 4]
    assert run_js("md.unitIndex('abc', 2)") == 2
