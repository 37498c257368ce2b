"""The question lexicon: general Chinese question words, value patterns and function words (and
the English words that read a question written in English).

Loaded from ``lexicon.json`` next to this module (or a file of the user's): the words are data,
not code, and none of them comes from an evaluation set's question templates.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

DEFAULT_LEXICON = Path(__file__).with_name("lexicon.json")


class AnswerTypeCue(BaseModel):
    type: str
    cues: list[str]


class EnglishLexicon(BaseModel):
    """The words that read a question written in English (:mod:`rag_app.analysis.english`)."""

    model_config = ConfigDict(frozen=True)

    answer_types: list[AnswerTypeCue] = Field(
        default_factory=list,
        description="Question words by answer type ('how long' -> duration); a yes/no cue "
        "(is, does, can) only opens a question.",
    )
    skipped: list[str] = Field(
        default_factory=list,
        description="Words between the question word and the asked thing (auxiliaries, "
        "articles, pronouns: 'what is *the* dress code').",
    )
    stopwords: list[str] = Field(
        default_factory=list,
        description="Function words: never terms, and they end the asked phrase.",
    )
    partitives: list[str] = Field(
        default_factory=list,
        description="Words after a measure ('how many days *of* leave'): the asked thing "
        "follows them.",
    )


class Lexicon(BaseModel):
    """Vocabulary of question analysis. Build once (:meth:`load`) and share: it is read-only."""

    model_config = ConfigDict(frozen=True)

    version: int = 1
    answer_types: list[AnswerTypeCue]
    value_patterns: dict[str, str] = Field(default_factory=dict)
    units: list[str] = Field(default_factory=list)
    function_words: list[str] = Field(default_factory=list)
    conjunctions: list[str] = Field(
        default_factory=list,
        description="Single-character conjunctions (和, 与) that jieba may "
        "glue to the next name (和云翼): stripped from entities.",
    )
    vague_nouns: list[str] = Field(
        default_factory=list,
        description="Nouns that never say what is asked (数据, 情况) or name only its kind "
        "(标准, 要求, 名称: in '机房的温度标准是多少' the asked thing is 温度).",
    )
    period_suffixes: list[str] = Field(
        default_factory=list,
        description="Endings of nouns that name a span of time (等待期, 试用期, 年假): "
        "'X的等待期有多长' asks for a duration.",
    )
    distributives: list[str] = Field(
        default_factory=list,
        description="Adverbs that spread a predicate over several subjects (各自, 分别): in "
        "'A和B两个小区各自成交了多少套' the asked thing follows them (成交), not the subjects.",
    )
    few_markers: list[str] = Field(
        default_factory=list,
        description="Characters after which 几 means 'a few', not 'how many' (这几个, 前几年, "
        "十几岁): a question word starting with 几 right after one is not a cue.",
    )
    state_cues: list[str] = Field(
        default_factory=list,
        description="Question words of manner (如何, 怎样) that ask how a thing *is* when they "
        "end the question right after a noun ('明天的天气如何', '机房的温度怎样'): the noun is "
        "the asked thing; before a verb ('如何办理') they ask how to do it.",
    )
    light_verbs: list[str] = Field(
        default_factory=list,
        description="Verbs whose object is the action itself (进行, 开展): in '哪一年进行了资产收购' "
        "the asked thing is the object (资产收购).",
    )
    comparatives: list[str] = Field(
        default_factory=list,
        description="Words that make a stated value a bound, before or after it (超过7亿, "
        "5000元以上, 介于…之间): the answer need not state that value.",
    )
    range_marks: list[str] = Field(
        default_factory=list,
        description="Marks between the two ends of a range (20000至30000元, 10-20天).",
    )
    surnames: list[str] = Field(
        default_factory=list,
        description="Chinese surnames (欧阳, 王): with an anonymising mark they make a name.",
    )
    anonymised_marks: list[str] = Field(
        default_factory=list,
        description="Marks that stand for a given name in anonymised text (张某某, 欧阳某).",
    )
    char_variants: list[list[str]] = Field(default_factory=list)
    english: EnglishLexicon = Field(default_factory=EnglishLexicon)
    _values: dict[str, re.Pattern[str]] = PrivateAttr(default_factory=dict)
    _cue_index: list[tuple[str, str]] = PrivateAttr(default_factory=list)
    _cue_regex: re.Pattern[str] | None = PrivateAttr(default=None)
    _function: frozenset[str] = PrivateAttr(default=frozenset())
    _pseudonym: re.Pattern[str] | None = PrivateAttr(default=None)

    @classmethod
    def load(cls, path: str | Path | None = None) -> Lexicon:
        target = Path(path) if path is not None else DEFAULT_LEXICON
        try:
            data = json.loads(target.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise ValueError(f"could not read the question lexicon {target}: {exc}") from exc
        data.pop("about", None)
        return cls.model_validate(data)

    def model_post_init(self, context: object) -> None:
        self._values = {k: re.compile(v) for k, v in self.value_patterns.items()}
        # longest cue first, so "多少天" (duration) wins over "多少" (number)
        pairs = [(cue, t.type) for t in self.answer_types for cue in t.cues]
        pairs.sort(key=lambda p: -len(p[0]))
        self._cue_index = pairs
        alternatives = "|".join(re.escape(c) for c, _ in pairs)
        # a lookahead finds a cue at every position (longest first), so one that starts inside
        # another is found too: 是什么|时候 holds 什么时候
        self._cue_regex = re.compile(f"(?=({alternatives}))") if pairs else None
        self._function = frozenset(self.function_words)
        if self.surnames and self.anonymised_marks:
            names = "|".join(map(re.escape, sorted(self.surnames, key=len, reverse=True)))
            marks = "|".join(map(re.escape, sorted(self.anonymised_marks, key=len, reverse=True)))
            self._pseudonym = re.compile(f"(?P<surname>{names})(?P<mark>{marks})")

    def value_pattern(self, answer_type: str) -> re.Pattern[str] | None:
        return self._values.get(answer_type)

    def cues(self, question: str) -> list[tuple[int, int, str, str]]:
        """Question-word matches (start, end, cue, answer type), left to right, the longest at
        each position; a match inside an earlier one is dropped (什么 in 是什么), one that reaches
        past it is kept (什么时候 in 是什么时候)."""
        if self._cue_regex is None:
            return []
        kinds = dict(self._cue_index)
        out: list[tuple[int, int, str, str]] = []
        for m in self._cue_regex.finditer(question):
            cue, start = m.group(1), m.start()
            if out and start + len(cue) <= out[-1][1]:
                continue
            if cue.startswith("几") and start > 0 and question[start - 1] in self.few_markers:
                continue
            out.append((start, start + len(cue), cue, kinds[cue]))
        return out

    def pseudonym_spans(self, text: str, starts: Collection[int]) -> list[tuple[int, int]]:
        """Where the anonymised names of ``text`` are (张某某, 欧阳某: a surname and a mark), as
        (start, end), each starting where one of its words starts (``starts``: not the 高某 of
        提高某项). A surname that is also a function word takes the long mark only: 于某某, but
        not the 于某 of 于某日签订."""
        if self._pseudonym is None:
            return []
        shortest = min(map(len, self.anonymised_marks))
        return [
            m.span()
            for m in self._pseudonym.finditer(text)
            if m.start() in starts
            and not (self.is_function_word(m["surname"]) and len(m["mark"]) == shortest)
        ]

    def is_function_word(self, word: str) -> bool:
        return word in self._function

    def is_vague(self, word: str) -> bool:
        return word in self.vague_nouns

    def normalize(self, text: str) -> str:
        """Map spelling variants to one form (缴→交, 帐→账), for fuzzy matching on both sides."""
        for variants in self.char_variants:
            canonical = variants[-1]
            for v in variants[:-1]:
                if v in text:
                    text = text.replace(v, canonical)
        return text
