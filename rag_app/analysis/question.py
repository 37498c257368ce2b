"""QuestionAnalysis: what a question asks for, read once and shared by every answer stage."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from functools import lru_cache
from itertools import accumulate, takewhile

from pydantic import BaseModel, Field

from rag_app.analysis.entities import named_entities
from rag_app.analysis.lexicon import Lexicon
from rag_app.analysis.values import bounds_among, value_matches
from rag_app.retrieval.tokenizer import label_tokens, query_tokens

# answer types whose answer is a value of a recognisable form (lexicon value_patterns)
VALUE_TYPES = ("duration", "date", "money", "ratio", "number", "person", "organization", "place")
# answer types that ask no single thing: no asked head
OPEN_TYPES = ("yes_no", "method", "reason")

_CLAUSE_MARKS = ("，", ",", "；", ";", "。", "：", ":")
_CONTENT_FLAGS = ("n", "v", "a", "eng", "l", "i", "j", "t", "s", "vn", "an")
# words that join into one asked phrase before the question word (等待|期, 机房|温度|标准)
_JOINED_FLAGS = ("n", "v", "a", "eng", "l", "i", "j", "s", "q", "b", "g", "k")
_NOUN_FLAGS = ("n", "eng", "j", "l", "s")  # nouns; a verbal noun (vn: 设置, 赔付) only if none
_NOUN_PASSES = (_NOUN_FLAGS, ("vn", "an"))
# question words jieba may tag as a noun (多长/n, 多大/n): still the question word, not a noun cue
_INTERROGATIVES = ("多", "几", "什么", "哪", "何", "谁", "怎")
# a verb jieba glues to the word before the question word (等待|期有|多长): not part of the head
_VERBS_BEFORE_CUE = ("有", "是")
_COPULAS = ("是", "为")


class QuestionAnalysis(BaseModel):
    """A question read for answering (typed output of :class:`QuestionAnalyzer`)."""

    text: str
    answer_type: str = Field(
        "other",
        description="choice (谁更…), duration, date, money, ratio, number, person, "
        "organization, place, reason, method, list, yes_no, definition, what, other",
    )
    cue: str | None = Field(None, description="The question word that set the answer type.")
    head: str | None = Field(None, description="The asked thing next to the question word.")
    entities: list[str] = Field(default_factory=list, description="Names, titles, codes.")
    constraints: list[str] = Field(
        default_factory=list, description="Values the answer must be about (5000元, 63岁, 2021年)."
    )
    bounds: list[str] = Field(
        default_factory=list,
        description="The constraints that bound a range or a comparison (超过7亿, 20000至30000元): "
        "the evidence need not state them.",
    )
    terms: list[str] = Field(default_factory=list, description="Content tokens (index tokens).")
    focus: list[str] = Field(
        default_factory=list,
        description="Terms of the clause that asks (not a scope clause such as '根据…，'), "
        "other than the entities: what the answer must be about.",
    )
    phrase: list[str] = Field(
        default_factory=list,
        description="Terms of the asked phrase, the content words around the head "
        "('机房温度上限是多少' -> 机房, 温度): one answer unit should hold them together.",
    )
    asked: str = Field(
        "", description="The asked phrase as written (机房温度), for semantic matching."
    )
    labels: list[str] = Field(default_factory=list, description="第X条 labels, canonical.")
    names: list[str] = Field(
        default_factory=list, description="Anonymised names (张某某), also among the terms."
    )
    subjects: list[str] = Field(
        default_factory=list,
        description="The names and entities of a question asked of several subjects at once "
        "(A和B分别…, A与B谁更…); empty otherwise.",
    )

    @property
    def expects_value(self) -> bool:
        return self.answer_type in VALUE_TYPES


def _jieba_posseg():  # type: ignore[no-untyped-def]
    from rag_app.retrieval.tokenizer import _jieba

    _jieba()  # initialised once, under its lock
    import jieba.posseg

    return jieba.posseg


class QuestionAnalyzer:
    """Reads questions with one lexicon. Built once per knowledge base; thread-safe (its memo is
    guarded by a lock and bounded)."""

    MAX_MEMO = 512

    def __init__(self, lexicon: Lexicon | None = None) -> None:
        self.lexicon = lexicon if lexicon is not None else default_lexicon()
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
        starts = set(accumulate((len(w) for w, _ in words), initial=0))
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
            self._head(question, words, chosen, named_spans)
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
        return QuestionAnalysis(
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
        seen = [sp for sp in _word_spans(words) if sp[1] <= start]
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
        start = max(question.rfind(m, 0, at) for m in _CLAUSE_MARKS) + 1
        end = min(
            (i for i in (question.find(m, at) for m in _CLAUSE_MARKS) if i >= 0),
            default=len(question),
        )
        clause = question[start:end].lower()
        return [t for t in terms if t in clause and not any(t in e.lower() for e in entities)]

    def _head(
        self,
        question: str,
        words: list[tuple[str, str]],
        cue: tuple[int, int, str, str],
        named: Sequence[tuple[int, int]] = (),
    ) -> tuple[str | None, str]:
        """The content word right after the cue ("多少保费") with the run of content words it
        starts; else, before the cue and in its clause, the nearest run of joined words that holds
        a noun, without a trailing verb or vague noun ("售价达到了多少" -> 售价, "销量数据" ->
        销量), unless that run is one word right after 的 (its tag aside: "他的身高是多少" ->
        身高): its last word is the head (with the one before when it is a single character:
        等待|期 -> 等待期) and the run is the asked phrase ("电池容量是多少" -> 电池容量; a trailing
        vague noun left out: "机房温度标准是多少" -> 机房温度).
        Else the nearest content word of two or more characters in that clause, else (jieba cut
        the word into untagged pieces) the run of words before the cue in that clause.

        A piece of a person's name is never the head: an anonymised name's surname (柳 of
        柳|某某) or a one-char word jieba tags as a name (戈 of 戈|登出|生于); the name is a term
        of its own (``named``: where the anonymised names are, :meth:`Lexicon.pseudonym_spans`)."""
        start, end = cue[0], cue[1]
        spans = _word_spans(words)
        lex = self.lexicon

        def content(i: int) -> bool:
            lo, hi, word, flag = spans[i]
            if len(word) == 1 and flag.startswith("nr"):
                return False
            if any(lo < b and a < hi for a, b in named):
                return False
            return flag.startswith(_CONTENT_FLAGS) and not lex.is_function_word(word)

        def noun(i: int, flags: tuple[str, ...]) -> bool:
            word, flag = spans[i][2], spans[i][3]
            return flag.startswith(flags) and content(i) and not lex.is_vague(word)

        def run(i: int, step: int) -> str:
            j = i
            while 0 <= j + step < len(spans) and content(j + step):
                j += step
            lo, hi = min(i, j), max(i, j)
            return "".join(spans[k][2] for k in range(lo, hi + 1))

        after = [i for i, s in enumerate(spans) if s[0] >= end]
        if after and spans[after[0]][2] == "的":  # 多长的宽限期
            after = after[1:]
        if after and spans[after[0]][2] in lex.light_verbs:  # 哪一年进行了资产收购
            rest = [i for i in after[1:] if spans[i][3] != "ul"]
            if rest and content(rest[0]):
                asked = run(rest[0], 1)
                last = max(i for i in rest if spans[i][1] <= spans[rest[0]][0] + len(asked))
                return spans[last][2], asked
        if after and spans[after[0]][0] - end <= 2:
            i = after[0]
            one_char_verb = len(spans[i][2]) == 1 and spans[i][3].startswith("v")
            if content(i) and not lex.is_vague(spans[i][2]) and not one_char_verb:
                return spans[i][2], run(i, 1)
        before = [i for i in range(len(spans) - 1, -1, -1) if spans[i][1] <= start]
        clause = list(takewhile(lambda i: spans[i][2] not in _CLAUSE_MARKS, before))
        clause = self._predicate(spans, clause, content)
        chunks: list[list[int]] = [[]]  # runs of joined words before the cue, nearest first
        for i in clause:
            if spans[i][3].startswith(_JOINED_FLAGS) and not lex.is_function_word(spans[i][2]):
                chunks[-1].insert(0, i)
            elif chunks[-1]:
                chunks.append([])
        cue_word = next((sp for sp in spans if sp[0] <= start < sp[1]), None)
        # not when the cue opens with a noun ("价格是多少", "日期是"): what precedes it (成交)
        # qualifies that noun
        owned = None
        if (
            cue_word is None
            or not cue_word[3].startswith((*_NOUN_FLAGS, "t"))
            or cue_word[2].startswith(_INTERROGATIVES)  # 多长/n is a question word
        ):
            owned = self._after_de(spans, clause, noun)
        if owned:
            return owned, owned
        if (
            cue_word is not None
            and cue_word[0] == start
            and cue_word[3].startswith((*_NOUN_FLAGS, "t"))
            and not cue_word[2].startswith(_INTERROGATIVES)
            and (not clause or spans[clause[0]][2] == "的")
        ):
            # the cue opens with a noun owned by what precedes it ("合同的有效期是多少"): that
            # noun is the asked thing, not its owner (合同)
            return cue_word[2], cue_word[2]
        if (
            cue_word is not None
            and cue_word[0] == start
            and cue_word[2].endswith(tuple(lex.period_suffixes))
            and not cue_word[2].startswith(_INTERROGATIVES)  # 保留|多长时间 asks of 日志
            and clause
            and chunks[0]
            and chunks[0][-1] == clause[0]
            and spans[clause[0]][3].startswith("v")
        ):
            # a span of time named by the verb before it (备份|保留期限是多少, 还款|期限): the
            # span (保留期限) is asked, not the subject before it (备份)
            asked = "".join(spans[i][2] for i in chunks[0]) + cue_word[2]
            return spans[clause[0]][2] + cue_word[2], asked
        for flags in _NOUN_PASSES:
            for chunk in chunks:
                whole = chunk
                # a trailing verb or vague noun is not the asked thing (售价|达到, 销量|数据)
                while chunk and (
                    spans[chunk[-1]][3].startswith(("v", "a", "d"))
                    and not noun(chunk[-1], flags)
                    or lex.is_vague(spans[chunk[-1]][2])
                ):
                    chunk = chunk[:-1]
                if (
                    chunk
                    and len(spans[chunk[-1]][2]) == 1
                    and _copula_subject(spans, whole)
                    and not lex.is_vague(spans[whole[-1]][2])
                ):
                    # a one-char head is a piece (年|交|保费/v是多少): the subject of a copula
                    # is nominal, whatever jieba's tag
                    return spans[whole[-1]][2], "".join(spans[i][2] for i in whole)
                suffixed = len(chunk) > 1 and len(spans[chunk[-1]][2]) == 1  # 等待|期
                if chunk and (suffixed or any(noun(i, flags) for i in chunk)):
                    last = chunk[-1]
                    head = spans[chunk[-2]][2] + spans[last][2] if suffixed else spans[last][2]
                    return head, "".join(spans[i][2] for i in chunk)
        for i in clause:
            if content(i) and len(spans[i][2]) >= 2 and not lex.is_vague(spans[i][2]):
                return spans[i][2], run(i, -1)
        # jieba cut the asked word into pieces it does not tag as content (年/m 假/a): the
        # nearest run of words before the cue, up to a function word, taken whole
        piece: list[int] = []
        for i in clause:
            word, flag = spans[i][2], spans[i][3]
            if flag.startswith(("x", "d", "p", "c", "u", "r")) or lex.is_function_word(word):
                if piece:
                    break
                continue
            piece.insert(0, i)
        text = "".join(spans[i][2] for i in piece)
        if len(text) >= 2 and not lex.is_vague(text):
            return text, text
        return None, ""

    def _predicate(
        self,
        spans: list[tuple[int, int, str, str]],
        clause: list[int],
        content: Callable[[int], bool],
    ) -> list[int]:
        """The clause before the cue (nearest word first), cut at a distributive adverb (各自,
        分别) that has a content word of two or more characters between it and the cue: in
        "A和B两个小区各自成交了多少套" the subjects come before 各自 and the asked thing (成交)
        after it; "A与B各自的利润总额是多少" keeps its head (利润总额), which is after 各自 too."""
        for n, i in enumerate(clause):
            if spans[i][2] in self.lexicon.distributives:
                if any(content(j) and len(spans[j][2]) >= 2 for j in clause[:n]):
                    return clause[:n]
                return clause
        return clause

    def _after_de(
        self,
        spans: list[tuple[int, int, str, str]],
        clause: list[int],
        noun: Callable[[int, tuple[str, ...]], bool],
    ) -> str | None:
        """ "他的身高是多少", "员工的年假是多少天": the words between the last 的 and the question
        word (a copula aside) are the asked attribute, however jieba tags them (身高/v, 生日/t,
        年/m 假/a). Only when they hold no noun (a noun is found the usual way) and are at most
        three words of two or more characters in all."""
        lex = self.lexicon
        run: list[int] = []
        for i in clause:  # nearest first
            word, flag = spans[i][2], spans[i][3]
            if word == "的":
                break
            if not run and (lex.is_function_word(word) or flag.startswith(("d", "r"))):
                continue  # the copula or an adverb before the question word (分别是, 各自)
            if flag.startswith(("x", "p", "c", "r", "u")) or lex.is_function_word(word):
                return None
            run.insert(0, i)
            if len(run) > 3:
                return None
        else:
            return None  # no 的 in the clause
        text = "".join(spans[i][2] for i in run)
        if len(text) > 2 and text.endswith(_VERBS_BEFORE_CUE):  # 等待|期有|多长: jieba glued 有
            text = text[:-1]
        if len(text) < 2 or lex.is_vague(text):
            return None
        if any(noun(i, f) for i in run for f in _NOUN_PASSES):
            return None
        return text


def _word_spans(words: list[tuple[str, str]]) -> list[tuple[int, int, str, str]]:
    """jieba's words with where each starts and ends in the question: (start, end, word, flag)."""
    ends = list(accumulate(len(w) for w, _ in words))
    return [(e - len(w), e, w, f) for (w, f), e in zip(words, ends, strict=True)]


def _copula_subject(spans: list[tuple[int, int, str, str]], run: list[int]) -> bool:
    """The run's last word has two or more characters and a copula (是, 为) follows it."""
    last = run[-1]
    return len(spans[last][2]) >= 2 and last + 1 < len(spans) and spans[last + 1][2] in _COPULAS


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
