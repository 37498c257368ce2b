"""QuestionAnalyzer: what a question asks for (:class:`~rag_app.analysis.asked.QuestionAnalysis`),
read once, first, and shared by every later stage."""

from __future__ import annotations

import threading
from functools import lru_cache

from rag_app.analysis.asked import AskedQuestion, QuestionAnalysis
from rag_app.analysis.compound import question_parts
from rag_app.analysis.english import HAN, EnglishQuestionAnalyzer, is_english
from rag_app.analysis.entities import named_entities
from rag_app.analysis.head import CLAUSE_MARKS, HeadFinder, word_spans
from rag_app.analysis.lexicon import Lexicon
from rag_app.analysis.values import bounds_among, value_matches
from rag_app.text.tokenizer import _jieba_posseg, label_tokens, query_tokens

# answer types that ask no single thing: no asked head
OPEN_TYPES = ("yes_no", "method", "reason")


def _split_glued(words: list[tuple[str, str]], lex: Lexicon) -> list[tuple[str, str]]:
    """jieba's words and tags, with a function word its HMM glued to a word no dictionary holds
    cut off: a conjunction or 的 it opens ("于某某|和元|某某") and a verb or 的 it ends
    ("轻|症能|赔", "犯罪活动罪会|判"), so that the head is not half a word and a function word.
    The rest keeps jieba's tag. A function word inside a name the HMM found (乍都节, 广西荣和)
    stays: 都 is an adverb, and a conjunction is cut only where it opens the word."""
    posseg = _jieba_posseg()
    dictionary = posseg.dt.tokenizer.FREQ
    tags = posseg.dt.word_tag_tab

    def glued(char: str, kinds: tuple[str, ...]) -> bool:
        return lex.is_function_word(char) and tags.get(char, "x").startswith(kinds)

    out: list[tuple[str, str]] = []
    for word, flag in words:
        if len(word) < 2 or dictionary.get(word) or len(HAN.findall(word)) < len(word):
            out.append((word, flag))
            continue
        head = word[0] if glued(word[0], ("c", "uj")) else ""
        tail = word[-1] if len(word) - len(head) >= 2 and glued(word[-1], ("v", "uj")) else ""
        rest = word[len(head) : len(word) - len(tail)]
        out.extend(
            [
                *([(head, tags[head])] if head else []),
                (rest, flag if len(rest) > 1 else tags.get(rest, "x")),
                *([(tail, tags[tail])] if tail else []),
            ]
        )
    return out


class QuestionAnalyzer:
    """Reads questions with one lexicon. Built once per knowledge base; thread-safe (its memo is
    guarded by a lock and bounded)."""

    MAX_MEMO = 512

    def __init__(self, lexicon: Lexicon | None = None) -> None:
        self.lexicon = lexicon if lexicon is not None else default_lexicon()
        self._head_finder = HeadFinder(self.lexicon)
        self._english = EnglishQuestionAnalyzer(self.lexicon.english)
        self._memo: dict[str, QuestionAnalysis] = {}
        self._lock = threading.Lock()

    def __call__(self, question: str) -> QuestionAnalysis:
        question = question.strip()
        with self._lock:
            hit = self._memo.get(question)
        if hit is not None:
            return hit
        result = self.analyze(question)
        with self._lock:
            if len(self._memo) >= self.MAX_MEMO:
                self._memo.clear()
            self._memo[question] = result
        return result

    def asked(self, question: str) -> AskedQuestion:
        """The analysis stage of an answer: ``question`` read, and each question of a compound
        one (:func:`~rag_app.analysis.compound.question_parts`) read too."""
        return AskedQuestion(
            analysis=self(question),
            parts=[self(part) for part in question_parts(question, self.lexicon)],
        )

    def analyze(self, question: str) -> QuestionAnalysis:
        lex = self.lexicon
        cues = lex.cues(question)
        order = {t.type: i for i, t in enumerate(lex.answer_types)}
        chosen = min(cues, key=lambda c: (order.get(c[3], 99), c[0]), default=None)
        words = [(w.word, w.flag) for w in _jieba_posseg().lcut(question)]
        if (
            chosen is not None
            and chosen[3] == "method"
            and self._asks_state(question, words, chosen)
        ):
            chosen = (*chosen[:3], "what")  # "明天的天气如何": what the weather will be, not how to
        entities = named_entities(question, words, lex)
        values = [m for m in value_matches(question) if not any(m.group(0) in e for e in entities)]
        constraints = [m.group(0) for m in values]
        bounds = bounds_among(question, values, lex)
        # an anonymised name (柳某某) is one term: jieba cuts it, and its mark is in every record
        starts = {0, *(end for _, end, _, _ in word_spans(words))}  # where a word starts
        named_spans = lex.pseudonym_spans(question, starts)
        names = list(dict.fromkeys(question[a:b] for a, b in named_spans))
        terms = [
            t
            for t in query_tokens(_blank_cues(question, cues))
            if not lex.is_function_word(t) and t not in lex.anonymised_marks
        ]
        terms = list(dict.fromkeys([*names, *terms]))
        # asked of several subjects at once (A和B分别…, A与B谁更…, two people side by side): the
        # gate checks that the evidence names each of them
        named = list(dict.fromkeys([*names, *entities]))
        each = (
            any(w in lex.distributives for w, _ in words)
            or (chosen is not None and chosen[3] == "choice")
            or _side_by_side(question, names, lex.conjunctions)
        )
        # a head only where one thing is asked for: not in a yes/no, how or why question, whose
        # own words ("老公欠的债我要还吗") need not be the documents'
        head, phrase = (
            self._head_finder(question, _split_glued(words, lex), chosen, named_spans)
            if chosen is not None and chosen[3] not in OPEN_TYPES
            else (None, "")
        )
        focus = self._focus(question, chosen, terms, entities)
        answer_type = chosen[3] if chosen else "other"
        if (
            answer_type == "number"
            and chosen is not None
            and head
            and len(head) >= 2
            and head.endswith(tuple(lex.period_suffixes))
            and 0 <= question.find(head) < chosen[0]
        ):
            # "X的等待期有多长 / 是多少": the size of a span of time is a duration; a count after
            # the question word ("有几个学期") stays a number
            answer_type = "duration"
        analysis = QuestionAnalysis(
            text=question,
            answer_type=answer_type,
            cue=chosen[2] if chosen else None,
            head=head,
            entities=entities,
            constraints=constraints,
            bounds=bounds,
            terms=terms,
            focus=focus,
            phrase=[t for t in terms if t in phrase.lower()],
            asked=phrase,
            labels=label_tokens(question),
            names=names,
            subjects=named if each and len(named) >= 2 else [],
        )
        return self._read_english(analysis) if is_english(question) else analysis

    def _read_english(self, analysis: QuestionAnalysis) -> QuestionAnalysis:
        """A question written in English (:mod:`rag_app.analysis.english`): its answer type
        and asked phrase (the head, "dress code") from the English reading; function words
        (the, is, for) are not terms."""
        english = self._english
        reading = english(analysis.text)
        terms = [t for t in analysis.terms if not english.is_stopword(t)]
        asked = " ".join(reading.asked)
        return analysis.model_copy(
            update={
                "answer_type": reading.answer_type,
                "cue": reading.cue,
                "head": asked or None,
                "terms": terms,
                "focus": [t for t in analysis.focus if not english.is_stopword(t)],
                "phrase": [t for t in terms if t in reading.asked],
                "asked": asked,
            }
        )

    def _asks_state(
        self, question: str, words: list[tuple[str, str]], cue: tuple[int, int, str, str]
    ) -> bool:
        """A question word of manner that ends the question (呢 and marks aside) right after a
        noun asks how that thing is ("他当时的心情如何？", "机房的温度怎样"), not how to do
        something ("如何办理", "应该怎样处理"); nor does one after a vague noun, which asks
        broadly ("X的违约情况如何")."""
        lex = self.lexicon
        start = cue[0]
        word = next((w for w in lex.state_cues if question.startswith(w, start)), None)
        if word is None or question[start + len(word) :].strip("呢吗？?。！! ") != "":
            return False
        seen = [sp for sp in word_spans(words) if sp[1] <= start]
        if not seen or seen[-1][1] != start:
            return False
        noun, flag = seen[-1][2], seen[-1][3]
        if lex.is_vague(noun):  # "X的违约情况如何" asks broadly: no one thing is asked
            return False
        if (flag.startswith("n") and not flag.startswith("nr")) or flag in ("vn", "an"):
            return True
        # a word right after 的 is owned, so nominal, whatever jieba's tag ("项目的预算/v如何")
        owned = len(seen) > 1 and seen[-2][2] == "的"
        return owned and not flag.startswith(("d", "r", "x", "u", "p", "c"))

    @staticmethod
    def _focus(
        question: str,
        cue: tuple[int, int, str, str] | None,
        terms: list[str],
        entities: list[str],
    ) -> list[str]:
        at = cue[0] if cue else len(question)
        start = max(question.rfind(m, 0, at) for m in CLAUSE_MARKS) + 1
        end = min(
            (i for i in (question.find(m, at) for m in CLAUSE_MARKS) if i >= 0),
            default=len(question),
        )
        clause = question[start:end].lower()
        return [t for t in terms if t in clause and not any(t in e.lower() for e in entities)]


def _side_by_side(question: str, names: list[str], conjunctions: list[str]) -> bool:
    """Two anonymised names joined by a conjunction or 、 with no 的 between them (A和B, A、B):
    several people asked about; in "张某的律师李某某" the first only qualifies the second."""
    at = sorted((question.find(n), n) for n in names)
    for (i, a), (j, _) in zip(at, at[1:], strict=False):
        gap = question[i + len(a) : j]
        if "的" not in gap and any(c in gap for c in (*conjunctions, "、")):
            return True
    return False


def _blank_cues(question: str, cues: list[tuple[int, int, str, str]]) -> str:
    """The question with its question words (and a copula right before one) blanked out, so
    "等待期是多少天" gives the terms of 等待期 only."""
    chars = list(question)
    for start, end, _, _ in cues:
        if start > 0 and chars[start - 1] == "是":
            start -= 1
        for i in range(start, end):
            chars[i] = " "
    return "".join(chars)


@lru_cache(maxsize=1)
def default_lexicon() -> Lexicon:
    """The bundled lexicon (read-only, loaded once per process)."""
    return Lexicon.load()
