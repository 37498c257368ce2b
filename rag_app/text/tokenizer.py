"""Chinese-aware tokenization for the keyword index: jieba search-mode segmentation + stopwords.

Segmentation is jieba's ``cut_for_search``. Its dictionary/HMM work runs, where possible, in
rjieba (jieba-rs, Rust), which gives jieba's own output ~15x faster: jieba splits a text into
blocks (``re_han_default``) and segments each block on its own, so a block of CJK characters,
letters and digits only goes to rjieba, and a block holding any of jieba's joiner characters
(``+#&._%-``, where jieba-rs's handling of runs like "2022-06-01" differs) to jieba itself. The
output equals ``jieba.lcut_for_search`` (checked on 9.6 M characters of the shared data and in
tests/text/test_tokenizer.py); without rjieba installed, jieba does all of it, and so does a
one-shot command on the compact dictionary (its few short texts gain nothing from rjieba, which
takes 0.1 s to load).

Article labels such as 第三十三条 / 第33条 also produce one canonical token (``第33条``), so a
question written with Arabic numerals finds an article written with Chinese numerals and back;
a year and month (2021年3月, 2021年03月, 2021-03-01, 2021/3) one token ``2021年03月``
(:func:`month_tokens`).
"""

from __future__ import annotations

import importlib
import io
import logging
import marshal
import re
import sys
import threading
import unicodedata
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

from rag_app.text.jieba_tables import CompactTable, CountView, TagView, load_table, save_table
from rag_app.text.numerals import chinese_number

logger = logging.getLogger(__name__)

STOPWORDS = frozenset(
    """
    的 了 是 在 和 与 及 或 等 对 为 以 于 由 被 把 将 就 都 也 还 又 而 并 且 但 从 向 到 之 其 此 该 这 那
    这个 那个 这些 那些 什么 哪些 哪个 哪里 哪 怎么 怎样 如何 为何 为什么 多少 几 吗 呢 吧 啊 呀 么 请问
    请 一下 是否 可以 能否 能 会 要 需要 应该 应当 有 没有 个 些 我 你 他 她 它 我们 你们 他们 自己
    规定 内容 根据 按照 关于 具体 一般 情况 问题 时候 时 中 上 下 内 外 吗？ 呢？
    a an the of to in on for and or is are was were be been by with as at from that this these
    those it its what which who whom how when where why do does did can could should would will
    """.split()
)

_LABEL = re.compile(r"第([零〇一二两三四五六七八九十百千\d]+)(编|章|节|条|款|项)")
_WORD = re.compile(r"\w", re.UNICODE)

_jieba_lock = threading.Lock()
_jieba_ready = False
# jieba's dictionary for this process: its own dicts, or a compact table (use_compact_dictionary)
_compact_dir: Path | None = None
_compact_table: CompactTable | None = None


@lru_cache(maxsize=1)
def _rjieba_search() -> Callable[[str], list[str]] | None:
    """rjieba's ``cut_for_search`` (the optional accelerator with jieba's output, see the module
    docstring), imported on first use (0.1 s: it builds its own dictionary); None without it."""
    try:
        import rjieba
    except ImportError:  # pragma: no cover - a dependency; jieba alone gives the same tokens
        return None
    return rjieba.cut_for_search  # type: ignore[no-any-return]


# a block of only these goes to rjieba; one with jieba's joiners (+#&._%-) stays with jieba
_PLAIN_BLOCK = re.compile(r"[\u4E00-\u9FD5a-zA-Z0-9]+")


def leading_label(text: str) -> str | None:
    """The canonical label a text opens with ('  第十二条 …' -> '第12条'), or None."""
    match = _LABEL.match(text.lstrip())
    labels = label_tokens(match.group(0)) if match else []
    return labels[0] if labels else None


def label_tokens(text: str) -> list[str]:
    """Canonical tokens for 第X条-style labels: '第三十三条' -> ['第33条']."""
    out = []
    for match in _LABEL.finditer(text):
        number = chinese_number(match.group(1))
        if number is not None:
            out.append(f"第{number}{match.group(2)}")
    return out


_MONTH = re.compile(
    r"(?<!\d)((?:19|20)\d\d)(?:"
    r"\s*年\s*(\d{1,2})\s*月"  # 2021年3月
    r"|([-/.])(\d{1,2})\3\d{1,2}(?![\d.])"  # 2021-03-01, 2021.03.01
    r"|[-/](\d{1,2})(?![\d.]|[-/]\d))"  # 2021-03, 2021/3 (not 2021.5: a number)
)


def month_tokens(text: str) -> list[str]:
    """Canonical tokens for a year and month, ``2021年03月``, however they are written
    (2021年3月, 2021年03月, 2021-03-01, 2021/3, 2021.03.01; not the number 2021.5). Apart, the
    two numbers name no month: every record of 2021 holds "2021", and nearly every dated one a
    "03" (a day, a time)."""
    out = []
    for match in _MONTH.finditer(text):
        year, month = match.group(1), match.group(2) or match.group(4) or match.group(5)
        if 1 <= int(month) <= 12:
            out.append(f"{year}年{int(month):02d}月")
    return out


def canonical_forms(text: str) -> list[str]:
    """The canonical tokens ``tokenize`` adds for ``text`` (第33条, 2021年03月): appended to a
    text that is searched for a question's terms, they let a term in canonical form be found
    in a text that writes it otherwise (第三十三条, 2021年3月)."""
    normalized = unicodedata.normalize("NFKC", text).lower()
    return [*label_tokens(normalized), *month_tokens(normalized)]


class _WholeFileMarshal:
    """``marshal`` as jieba uses it for its dictionary cache, with ``load`` reading the file
    whole first: ``marshal.load`` on an open file reads it piece by piece (1.2 s for jieba's
    9 MB cache on 2 cores, against 0.3 s from memory), a third of a one-shot command's start-up.
    Same bytes, same objects; writing is marshal's own."""

    dump = staticmethod(marshal.dump)

    @staticmethod
    def load(fh: Any) -> Any:
        return marshal.loads(fh.read())


def use_compact_dictionary(cache_dir: Path) -> None:
    """Have jieba look words up in a :class:`~rag_app.text.jieba_tables.CompactTable` cached in
    ``cache_dir`` (written there the first time) instead of loading its dicts: for a command
    that reads a few questions and exits (0.6 s less start-up; the same words, counts and tags).
    No effect once jieba is loaded in this process."""
    global _compact_dir
    with _jieba_lock:
        if not _jieba_ready:
            _compact_dir = cache_dir


def _jieba():  # type: ignore[no-untyped-def]
    global _jieba_ready, _compact_table
    import jieba

    if not _jieba_ready:
        with _jieba_lock:
            if not _jieba_ready:
                jieba.setLogLevel(logging.WARNING)
                if getattr(jieba, "marshal", None) is marshal:  # jieba 0.42's module global
                    jieba.marshal = _WholeFileMarshal  # type: ignore[attr-defined]
                if _compact_dir is not None and jieba.dt.dictionary == jieba.DEFAULT_DICT:
                    _compact_table = _compact_jieba(jieba, _compact_dir)
                else:
                    jieba.initialize()
                _jieba_ready = True
    return jieba


def _compact_jieba(jieba: Any, cache_dir: Path) -> CompactTable | None:
    """Point jieba's default tokenizer at the cached table (None: there was none; jieba then
    loads its own dicts, from which the table is built and cached for the next command)."""
    table = load_table(cache_dir)
    if table is not None:
        jieba.dt.FREQ, jieba.dt.total = CountView(table), table.total
        jieba.dt.initialized = True
        return None if "jieba.posseg" in sys.modules else table
    jieba.initialize()
    posseg = importlib.import_module("jieba.posseg")
    built = CompactTable.build(jieba.dt.FREQ, jieba.dt.total, posseg.dt.word_tag_tab)
    if built is not None:
        save_table(cache_dir, built)
    return None


def _jieba_posseg():  # type: ignore[no-untyped-def]
    """``jieba.posseg`` over the loaded dictionary: with a compact table, its part-of-speech
    table is the compact one (the module's import would otherwise parse ``dict.txt``)."""
    jieba = _jieba()
    if _compact_table is not None and "jieba.posseg" not in sys.modules:
        with _jieba_lock:
            if "jieba.posseg" not in sys.modules:
                jieba.dt.get_dict_file = lambda: io.BytesIO()  # posseg's import reads no tags
                try:
                    posseg = importlib.import_module("jieba.posseg")
                finally:
                    del jieba.dt.get_dict_file
                posseg.dt.word_tag_tab = TagView(_compact_table)
    return importlib.import_module("jieba.posseg")


# What ``tokenize`` makes of a text: change it whenever its output changes. A knowledge base
# whose keyword index holds tokens of another version re-tokenises it from its chunk rows when a
# writer opens it (store/retokenize.py): a keyword-only change needs no re-chunking or
# re-embedding. 3: the canonical year-month token (2021年03月).
TOKENS_VERSION = "3"


def tokenize(text: str) -> list[str]:
    """Index/query tokens: jieba ``lcut_for_search``, lower-cased, no punctuation or stopwords."""
    normalized = unicodedata.normalize("NFKC", text).lower()
    jieba = _jieba()
    tokens: list[str] = []
    plain = _PLAIN_BLOCK.fullmatch
    # a one-shot command (the compact table) tokenizes a question or two: jieba's own is as fast
    # as importing rjieba, and gives the same tokens
    fast = None if _compact_table is not None else _rjieba_search()
    rust: Callable[[str], list[str]] = fast if fast is not None else jieba.lcut_for_search
    for block in jieba.re_han_default.split(normalized):
        if not block:
            continue
        if plain(block):  # every word of it is word characters, no whitespace
            tokens.extend(tok for tok in rust(block) if tok not in STOPWORDS)
        elif _WORD.search(block):  # punctuation and whitespace alone give no token
            for tok in jieba.lcut_for_search(block):
                tok = tok.strip()
                if tok and _WORD.search(tok) and tok not in STOPWORDS:
                    tokens.append(tok)
    tokens.extend(label_tokens(normalized))
    tokens.extend(month_tokens(normalized))
    return tokens


def with_number_variants(tokens: list[str]) -> list[str]:
    """``tokens`` with the twin of each month- or day-like number: 3 and 03 alike, so a question's
    "2021年3月" finds a table of "2021年03月" (or 2021-03-01) in the keyword index, which holds
    the tokens as written. Each twin follows its number; other numbers have none."""
    out: list[str] = []
    for tok in tokens:
        out.append(tok)
        if tok.isascii() and tok.isdigit():
            if len(tok) == 1 and tok != "0":
                out.append("0" + tok)
            elif len(tok) == 2 and tok[0] == "0" and tok[1] != "0":
                out.append(tok[1])
    return list(dict.fromkeys(out))


@lru_cache(maxsize=4096)
def query_tokens(question: str) -> tuple[str, ...]:
    """Distinct tokens of a question, in order of appearance."""
    return tuple(dict.fromkeys(tokenize(question)))
