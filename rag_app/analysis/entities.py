"""The named entities of a question: quoted titles, Latin names and codes, and the words jieba
tags as names of people, places, organisations or other proper nouns."""

from __future__ import annotations

import re

from rag_app.analysis.lexicon import Lexicon

_QUOTED = re.compile(r"《([^》]{1,40})》|“([^”]{1,40})”|「([^」]{1,40})」|\"([^\"]{1,40})\"")
_LATIN = re.compile(r"[A-Za-z][A-Za-z0-9_.+-]*[A-Za-z0-9]|[A-Za-z]{2,}")
_ENTITY_FLAGS = ("nr", "ns", "nt", "nz", "eng")


def named_entities(question: str, words: list[tuple[str, str]], lexicon: Lexicon) -> list[str]:
    """The entities of ``question``, in order, each once; ``words``: its jieba (word, tag) pairs."""
    out: list[str] = []
    for m in _QUOTED.finditer(question):
        out.append(next(g for g in m.groups() if g))
    latin = list(_LATIN.finditer(question))
    # a question asked in English: its names are its capitalised words (Xinghe Cloud), not
    # every word; in a Chinese question a Latin word is a name or a code (Redis, GPU)
    english = sum(len(m.group(0)) for m in latin) > len(question) / 2
    for m in latin:
        word = m.group(0)
        if lexicon.is_function_word(word.lower()):
            continue
        if english and not (
            (word[0].isupper() and m.start() > 0)
            or any(c.isupper() or c.isdigit() for c in word[1:])
        ):
            continue
        out.append(word)
    for word, flag in words:
        if word[:1] in lexicon.conjunctions:  # "A和云翼" cut as A / 和云翼
            word = word[1:]
        if _LATIN.fullmatch(word):
            continue  # read above
        if len(word) >= 2 and flag.startswith(_ENTITY_FLAGS) and not lexicon.is_function_word(word):
            out.append(word)
    return list(dict.fromkeys(e for e in out if e.strip()))
