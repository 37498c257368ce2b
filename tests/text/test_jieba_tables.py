"""jieba's dictionary as a compact table (rag_app/text/jieba_tables.py): the same entries as
jieba's dicts, and the same words, tags and specificity through it as through jieba's own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rag_app.text.jieba_tables import CompactTable, CountView, TagView, load_table, save_table

ROOT = Path(__file__).resolve().parents[2]

FREQ = {"密码": 120, "密": 5, "修改": 300, "修": 8, "改": 9, "修改意见": 0, "一次": 40}
TAGS = {"密码": "n", "密": "a", "修改": "v", "修": "v", "改": "v", "一次": "m", "蓝": "a"}


def table() -> CompactTable:
    built = CompactTable.build(FREQ, 482, TAGS)
    assert built is not None
    return built


def test_the_views_answer_as_the_dicts_do_for_every_word_and_for_words_not_held() -> None:
    counts, tags = CountView(table()), TagView(table())
    for word in [*FREQ, *TAGS, "不在", "", "密码 ", "修改意"]:
        assert counts.get(word) == FREQ.get(word), word
        assert (word in counts) == (word in FREQ), word
        assert tags.get(word, "x") == TAGS.get(word, "x"), word
        assert (word in tags) == (word in TAGS), word
    assert counts["修改意见"] == 0  # a prefix jieba adds: held, with count 0
    with pytest.raises(KeyError):
        counts["蓝"]  # a tag-only word is not among the counts
    assert dict(counts) == FREQ and len(counts) == len(FREQ)
    assert dict(tags) == TAGS


def test_writes_go_to_an_overlay_as_jieba_add_word_makes_them() -> None:
    counts = CountView(table())
    counts["新词"] = 7
    counts["密码"] = 1
    del counts["修"]
    assert counts.get("新词") == 7 and counts["密码"] == 1
    assert "修" not in counts and counts.get("修") is None
    with pytest.raises(KeyError):
        del counts["不在"]
    assert dict(counts) == {**{k: v for k, v in FREQ.items() if k != "修"}, "新词": 7, "密码": 1}


def test_a_table_survives_the_cache_and_a_bad_cache_file_is_ignored(tmp_path: Path) -> None:
    save_table(tmp_path, table())
    loaded = load_table(tmp_path)
    assert loaded is not None and loaded.total == 482
    assert dict(CountView(loaded)) == FREQ and dict(TagView(loaded)) == TAGS
    (path,) = tmp_path.glob("jieba-*.bin")
    path.write_bytes(b"not a table")
    assert load_table(tmp_path) is None
    assert load_table(tmp_path / "missing") is None


def test_words_a_table_cannot_hold_give_no_table() -> None:
    assert CompactTable.build({"两\n行": 1}, 1, {}) is None
    assert CompactTable.build(FREQ, 1, {f"w{i}": f"t{i}" for i in range(300)}) is None


PROBE = r"""
import json, sys
from pathlib import Path
from rag_app.text import tokenizer
from rag_app.analysis.specificity import WordSpecificity
if sys.argv[1] != "-":
    tokenizer.use_compact_dictionary(Path(sys.argv[1]))
posseg = tokenizer._jieba_posseg()
texts = json.loads(sys.stdin.read())
spec = WordSpecificity()
out = {
    "compact": type(posseg.dt.word_tag_tab).__name__,
    "tags": [[(w.word, w.flag) for w in posseg.lcut(t)] for t in texts],
    "search": [tokenizer.tokenize(t) for t in texts],
    "specificity": [[round(spec(w), 12) for w in t.split()] for t in texts],
    "total": posseg.dt.tokenizer.total,
}
print(json.dumps(out, ensure_ascii=False))
"""


def _probe(cache: str, texts: list[str]) -> dict[str, object]:
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, cache],
        input=json.dumps(texts),
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env=env,
    )
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def test_jieba_reads_the_sample_documents_the_same_through_the_compact_table(
    tmp_path: Path,
) -> None:
    lines = []
    for path in sorted((ROOT / "data" / "knowledge").glob("*.md")):
        lines += [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    texts = [
        *lines[:: max(1, len(lines) // 150)],
        "张某某和李某某分别于2021年3月签约",
        "SKU-2050的库存",
    ]
    texts.append("更高 一晚 十天 犯罪活动罪会判 阿莫西林胶囊 ERP")
    plain = _probe("-", texts)
    first = _probe(str(tmp_path), texts)  # builds the table from jieba's dicts, writes it
    assert list(tmp_path.glob("jieba-*.bin")), "the table was not cached"
    second = _probe(str(tmp_path), texts)  # reads it
    assert plain["compact"] == "dict" and first["compact"] == "dict"
    assert second["compact"] == "TagView"
    for key in ("tags", "search", "specificity", "total"):
        assert first[key] == plain[key], key
        assert second[key] == plain[key], key
