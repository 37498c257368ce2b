"""EnglishQuestionAnalyzer: what a question written in English asks for.

The Chinese reading (:class:`~rag_app.analysis.question.QuestionAnalyzer`) works on jieba's words
and tags, which say nothing of English: "What is the dress code for new employees?" would have
no answer type and no asked thing, and its function words would count as terms. This reads the
question word (lexicon ``english.answer_types``: "how long" asks for a duration), skips the
auxiliaries, articles and pronouns after it, and takes the run of content words that follows as
the asked phrase ("dress code"), up to the next function word; after a measure and a partitive
("how many days of annual leave") the phrase after the partitive is asked, elsewhere the
partitive ends it ("the phone extension of Facilities" asks for the extension). yes/no, how and
why questions ask no one thing, as in Chinese. All words are the lexicon's, general English.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, Field

from rag_app.analysis.lexicon import EnglishLexicon

_WORD = re.compile(r"[a-z0-9][a-z0-9'\-]*")
# a Chinese character (CJK unified ideographs, extension A, compatibility ideographs); also what
# rag_app.answer.model.han_share counts
HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_OPEN_TYPES = ("yes_no", "method", "reason")
_QUANTITY_TYPES = ("number", "money")  # their word after the cue may be a measure (days of …)


def is_english(question: str) -> bool:
    """Written in Latin letters without a Chinese character (a mixed question is read as
    Chinese: jieba reads its English words as nouns)."""
    return HAN.search(question) is None and re.search(r"[A-Za-z]", question) is not None


class EnglishReading(BaseModel):
    """Typed output of :class:`EnglishQuestionAnalyzer`."""

    answer_type: str = "other"
    cue: str | None = None
    asked: list[str] = Field(
        default_factory=list, description="The asked phrase's words, lower-cased."
    )


class EnglishQuestionAnalyzer:
    """Reads English questions with the lexicon's ``english`` words. Read-only, thread-safe."""

    def __init__(self, lexicon: EnglishLexicon) -> None:
        pairs = [(tuple(c.split()), t.type) for t in lexicon.answer_types for c in t.cues]
        self._cues = sorted(pairs, key=lambda p: -len(p[0]))  # longest first: "how long" > "how"
        self._skipped = frozenset(lexicon.skipped)
        self._stop = frozenset(lexicon.stopwords)
        self._partitives = frozenset(lexicon.partitives)

    def is_stopword(self, word: str) -> bool:
        return word.lower() in self._stop

    def __call__(self, question: str) -> EnglishReading:
        words = _WORD.findall(question.lower())
        found = self._cue(words)
        if found is None:
            return EnglishReading()
        at, cue, answer_type = found
        if answer_type in _OPEN_TYPES:
            return EnglishReading(answer_type=answer_type, cue=" ".join(cue))
        i = at + len(cue)
        while i < len(words) and words[i] in self._skipped:
            i += 1
        asked, i = self._run(words, i)
        if (
            answer_type in _QUANTITY_TYPES
            and asked
            and i < len(words)
            and words[i] in self._partitives
        ):  # how many days of leave
            j = i + 1
            while j < len(words) and words[j] in self._skipped:
                j += 1
            after, _ = self._run(words, j)
            asked = after or asked
        return EnglishReading(answer_type=answer_type, cue=" ".join(cue), asked=asked)

    def _cue(self, words: list[str]) -> tuple[int, tuple[str, ...], str] | None:
        """The first question word (the longest at its place); a yes/no cue only first."""
        for at in range(len(words)):
            for cue, answer_type in self._cues:
                if tuple(words[at : at + len(cue)]) == cue and (answer_type != "yes_no" or at == 0):
                    return at, cue, answer_type
        return None

    def _run(self, words: list[str], i: int) -> tuple[list[str], int]:
        run: list[str] = []
        while i < len(words) and words[i] not in self._stop:
            run.append(words[i])
            i += 1
        return run, i
