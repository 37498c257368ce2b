"""jieba's dictionary in a compact, exact form that loads in milliseconds, for one-shot commands.

jieba keeps its dictionary as two Python dicts: ``Tokenizer.FREQ`` (every word's count, and each
word's prefixes with count 0: 498k entries, read from jieba's 9 MB marshal cache in about 0.3 s
on 2 cores) and ``POSTokenizer.word_tag_tab`` (every word's part of speech, parsed from
``dict.txt`` line by line when ``jieba.posseg`` is imported: about 0.3 s). A ``rag ask`` looks up
a few hundred words (the question's tags, the specificity of its words) and pays 0.6 s, a fifth
of its start-up, to build half a million entries.

:class:`CompactTable` holds the same entries as arrays: the words as one string, their 64-bit
hashes sorted, and each word's count and tag. A look-up hashes the word, finds the hash by
bisection and compares the stored word (so a hash collision can never answer for another word):
about 1 µs against a dict's 0.05 µs, which a question's few hundred look-ups never notice, and
which is why ingestion and ``rag serve`` keep jieba's own dicts. :class:`CountView` and
:class:`TagView` give it jieba's mapping interface (``in``, ``[]``, ``get``, and writes, kept
in an overlay: ``jieba.add_word`` still works).

The table is built from jieba's own loaded dicts the first time (so it holds exactly their
entries) and cached in the start-up cache folder (``RAG_CACHE_DIR``), keyed by jieba's version
and its dictionary file's size and time; any problem reading it falls back to jieba's loading.
"""

from __future__ import annotations

import hashlib
import logging
import marshal
import os
import zlib
from array import array
from bisect import bisect_left
from collections.abc import Iterator, MutableMapping
from pathlib import Path
from typing import Any

import numpy as np

logger = logging.getLogger(__name__)

FORMAT = 1
_NO_TAG = 255


def _hash(word: str) -> int:
    raw = word.encode("utf-8")
    return zlib.crc32(raw) << 32 | zlib.adler32(raw)


class CompactTable:
    """jieba's words, each with its count (-1: not among ``FREQ``'s keys) and its tag (an index
    into ``tag_names``; 255: no tag), ordered by the hash of the word. Read-only."""

    def __init__(
        self,
        total: int,
        words: str,
        starts: array,
        hashes: array,
        counts: array,
        tags: bytes,
        tag_names: list[str],
    ) -> None:
        self.total = total
        self._words = words  # the words joined by "\n", in hash order
        self._starts = starts  # word i is _words[_starts[i] : _starts[i + 1] - 1]
        self._hashes = hashes
        self._counts = counts
        self._tags = tags
        self._tag_names = tag_names

    def __len__(self) -> int:
        return len(self._hashes)

    def index(self, word: str) -> int:
        """The word's position, or -1 when the table does not hold it."""
        h = _hash(word)
        i = bisect_left(self._hashes, h)
        found = i < len(self._hashes) and self._hashes[i] == h
        if found and self._words[self._starts[i] : self._starts[i + 1] - 1] == word:
            return i
        return -1

    def count(self, i: int) -> int:
        return self._counts[i]

    def tag(self, i: int) -> str | None:
        code = self._tags[i]
        return None if code == _NO_TAG else self._tag_names[code]

    def words(self) -> list[str]:
        return self._words[:-1].split("\n") if self._words else []

    @classmethod
    def build(cls, freq: dict[str, int], total: int, tags: dict[str, str]) -> CompactTable | None:
        """The table of jieba's loaded ``FREQ`` / ``total`` and ``word_tag_tab``; None when they
        cannot be held (a word with a line break, two words with one hash, over 255 tags)."""
        names = sorted(set(tags.values()))
        if len(names) >= _NO_TAG:
            return None
        code = {name: i for i, name in enumerate(names)}
        unordered = list(set(freq) | set(tags))
        keys = np.fromiter(map(_hash, unordered), dtype=np.uint64, count=len(unordered))
        order = np.argsort(keys, kind="stable")
        ordered = [unordered[i] for i in order.tolist()]
        sorted_keys = keys[order]
        if bool((sorted_keys[1:] == sorted_keys[:-1]).any()) or any("\n" in w for w in ordered):
            return None
        hashes = array("Q", sorted_keys.tobytes())
        lengths = np.fromiter(map(len, ordered), dtype=np.int64, count=len(ordered)) + 1
        starts = array("I", np.concatenate([[0], np.cumsum(lengths)]).astype(np.uint32).tobytes())
        counts = array("q", [freq.get(w, -1) for w in ordered])
        codes = bytes([code.get(tags.get(w, ""), _NO_TAG) for w in ordered])
        words = "".join(w + "\n" for w in ordered)
        return cls(total, words, starts, hashes, counts, codes, names)

    def dumps(self) -> bytes:
        return marshal.dumps(
            (
                FORMAT,
                self.total,
                self._tag_names,
                self._words,
                self._starts.tobytes(),
                self._hashes.tobytes(),
                self._counts.tobytes(),
                self._tags,
            )
        )

    @classmethod
    def loads(cls, data: bytes) -> CompactTable:
        fmt, total, names, words, starts_b, hashes_b, counts_b, tags = marshal.loads(data)
        if fmt != FORMAT:
            raise ValueError(f"jieba table format {fmt}, expected {FORMAT}")
        starts, hashes, counts = array("I"), array("Q"), array("q")
        starts.frombytes(starts_b)
        hashes.frombytes(hashes_b)
        counts.frombytes(counts_b)
        if not (len(hashes) == len(counts) == len(tags) == len(starts) - 1):
            raise ValueError("jieba table arrays differ in length")
        return cls(total, words, starts, hashes, counts, tags, names)


class _View(MutableMapping[str, Any]):
    """A mapping over a :class:`CompactTable`, with writes (jieba's ``add_word``) kept aside."""

    def __init__(self, table: CompactTable) -> None:
        self._table = table
        self._added: dict[str, Any] = {}
        self._removed: set[str] = set()

    def _value(self, i: int) -> Any:
        raise NotImplementedError

    def get(self, key: Any, default: Any = None) -> Any:
        if key in self._added:
            return self._added[key]
        if not isinstance(key, str) or key in self._removed:
            return default
        i = self._table.index(key)
        if i < 0:
            return default
        value = self._value(i)
        return default if value is None else value

    def __getitem__(self, key: str) -> Any:
        missing = object()
        value = self.get(key, missing)
        if value is missing:
            raise KeyError(key)
        return value

    def __contains__(self, key: object) -> bool:
        missing = object()
        return self.get(key, missing) is not missing

    def __setitem__(self, key: str, value: Any) -> None:
        self._removed.discard(key)
        self._added[key] = value

    def __delitem__(self, key: str) -> None:
        if key not in self:
            raise KeyError(key)
        self._added.pop(key, None)
        self._removed.add(key)

    def __iter__(self) -> Iterator[str]:
        yield from self._added
        for word in self._table.words():
            if word not in self._added and word not in self._removed and word in self:
                yield word

    def __len__(self) -> int:
        return sum(1 for _ in self)


class CountView(_View):
    """``Tokenizer.FREQ``: a word (or a word's prefix) -> its count."""

    def _value(self, i: int) -> Any:
        count = self._table.count(i)
        return None if count < 0 else count


class TagView(_View):
    """``POSTokenizer.word_tag_tab``: a word -> its part of speech."""

    def _value(self, i: int) -> Any:
        return self._table.tag(i)


def _key() -> str:
    import jieba

    source = Path(jieba.__file__).resolve().parent / jieba.DEFAULT_DICT_NAME
    stat = source.stat()
    parts = [f"format={FORMAT}", f"jieba={jieba.__version__}", f"{stat.st_size}:{stat.st_mtime_ns}"]
    return hashlib.sha1("|".join(parts).encode()).hexdigest()[:16]


def table_path(cache_dir: Path) -> Path:
    return cache_dir / f"jieba-{_key()}.bin"


def load_table(cache_dir: Path) -> CompactTable | None:
    """The cached table of jieba's default dictionary, or None (not written yet, or unreadable)."""
    try:
        path = table_path(cache_dir)
        return CompactTable.loads(path.read_bytes()) if path.exists() else None
    except Exception as exc:  # an acceleration only: jieba's own loading still works
        logger.warning("jieba table cache unreadable, using jieba's dictionary: %s", exc)
        return None


def save_table(cache_dir: Path, table: CompactTable) -> None:
    """Write ``table`` atomically (a temporary file, then a rename); problems are logged."""
    try:
        path = table_path(cache_dir)
        path.parent.mkdir(parents=True, exist_ok=True)
        part = path.with_name(f".{path.name}.{os.getpid()}")  # rag_app/text imports no cache_files
        try:
            part.write_bytes(table.dumps())
            os.replace(part, path)
        finally:
            part.unlink(missing_ok=True)
    except Exception as exc:
        logger.warning("could not write the jieba table cache: %s", exc)
