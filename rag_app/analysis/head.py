"""HeadFinder: the asked thing of a question, next to its question word.

"X的等待期有多长" asks for 等待期, "多少保费" for 保费, "A和B各自成交了多少套" for 成交. The
reading works on jieba's words and their part-of-speech tags with the lexicon's word lists (vague
nouns, light verbs, distributive adverbs, period suffixes); :class:`~rag_app.analysis.question.
QuestionAnalyzer` calls it once per question that asks for one thing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import accumulate, takewhile

from rag_app.analysis.lexicon import Lexicon

CLAUSE_MARKS = ("，", ",", "；", ";", "。", "：", ":")
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


class HeadFinder:
    """Finds the asked head with one lexicon; stateless past it, so thread-safe."""

    def __init__(self, lexicon: Lexicon) -> None:
        self.lexicon = lexicon

    def __call__(
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
        spans = word_spans(words)
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
        clause = list(takewhile(lambda i: spans[i][2] not in CLAUSE_MARKS, before))
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


def word_spans(words: list[tuple[str, str]]) -> list[tuple[int, int, str, str]]:
    """jieba's words with where each starts and ends in the question: (start, end, word, flag)."""
    ends = list(accumulate(len(w) for w, _ in words))
    return [(e - len(w), e, w, f) for (w, f), e in zip(words, ends, strict=True)]


def _copula_subject(spans: list[tuple[int, int, str, str]], run: list[int]) -> bool:
    """The run's last word has two or more characters and a copula (是, 为) follows it."""
    last = run[-1]
    return len(spans[last][2]) >= 2 and last + 1 < len(spans) and spans[last + 1][2] in _COPULAS
