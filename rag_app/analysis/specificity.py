"""WordSpecificity: how specific a word is in general Chinese, from jieba's dictionary.

jieba's dictionary holds word counts over a general corpus of about 60 million words. A word it counts often
(欠, 名单, 温度) is everyday language: a question may use it where the documents say it otherwise.
A word it counts rarely or not at all (a drug's or a person's name, a product code) names one
specific thing: evidence that never mentions it is about something else. The score is
``log(total / (count + 1)) / log(total)``, 0..1. A word the dictionary lacks but that cuts into
dictionary words (更高 -> 更 / 高) scores the mean of its pieces, so a phrase of everyday words is
not mistaken for a name; one that does not cut scores 1. A quantity, a numeral with one
character after it (一晚, 两家, 十天), counts a thing and names none: it scores the mean of
its characters, however rarely the dictionary lists the pair.

The counts belong to the dictionary, not to any knowledge base or data set; the same word scores
the same everywhere. Built once (it reads jieba's loaded dictionary); thread-safe (read-only).
"""

from __future__ import annotations

import math
import re

from rag_app.text.tokenizer import _jieba

_QUANTITY = re.compile(
    r"[0-9一二两三四五六七八九十百千万几半每第]+[^0-9一二两三四五六七八九十百千万几半每第]"
)


class WordSpecificity:
    def __init__(self) -> None:
        _jieba()  # jieba's dictionary loaded once, under its lock
        import jieba

        self._tokenizer = jieba.dt
        self._freq: dict[str, int] = jieba.dt.FREQ
        self._total = max(int(jieba.dt.total), 2)

    def _score(self, count: int) -> float:
        return math.log(self._total / (count + 1)) / math.log(self._total)

    def __call__(self, word: str) -> float:
        word = word.strip()
        if not word:
            return 0.0
        if _QUANTITY.fullmatch(word):
            return sum(self._score(self._freq.get(c) or 0) for c in word) / len(word)
        count = self._freq.get(word) or 0
        if count:
            return self._score(count)
        pieces = [p for p in self._tokenizer.lcut(word, HMM=False) if p.strip()]
        if len(pieces) <= 1:
            return 1.0
        return sum(self._score(self._freq.get(p) or 0) for p in pieces) / len(pieces)
