"""Follow-up questions read against the previous turn, without an LLM.

A follow-up that lacks what the previous question named takes it from there:

* an elliptic question (``那SKU-1024呢？`` after ``SKU-1023的库存是多少？``; ``犹豫期呢？`` after
  ``保险期间多长？``): the previous question with the new thing in place of the one it replaces —
  a code for a code of the same shape, a value for a value of the same unit, else the subject
  (before the predicate; of ``A的B``, the part the new thing shares more characters with, A by
  default);
* a pronoun (``它的保费是多少？``, ``该产品…``): the previous question's subject in its place.

A question that stands on its own (a predicate of its own and no pronoun) is left alone. The
rules are Chinese grammar (question words, pronouns, 呢), not any data set's vocabulary.
"""

from __future__ import annotations

import os
import re

from pydantic import BaseModel, Field

_END = "？?。.!！ \t"
_LEADS = ("那么", "那", "还有", "另外", "再问一下", "请问", "那请问")
# where a question's predicate starts (the earliest found after its subject); single characters
# that also occur inside nouns (会 of 委员会, 要 of 重要) are not among them
_PREDICATES = (
    "是多少", "是什么", "是谁", "是哪", "是否", "是不是", "有多少", "有哪些", "有几", "有没有",
    "多少", "多长", "多久", "多大", "多高", "多远", "几", "怎么", "怎样", "如何", "为什么",
    "为何", "能否", "能不能", "可以", "可否", "需要", "应该", "应当", "在哪", "在什么", "包括",
    "包含", "属于", "由谁", "吗",
)  # fmt: skip
# what makes a question ask something (a bare "X呢" has none of them)
_ASKING = (
    "多少", "几", "什么", "怎么", "怎样", "如何", "哪", "谁", "吗", "是否", "多久", "多长", "多大",
    "为什么", "为何", "能否", "可否",
)  # fmt: skip
_PRONOUNS = ("它们", "它", "其", "该", "这个", "那个", "此", "这款", "这项", "这种")
_CODE = re.compile(r"[A-Za-z]+[-_]?\d+[A-Za-z0-9-]*")
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]*")  # an identifier: a code, a setting's name
_VALUE = re.compile(r"(\d+(?:\.\d+)?)\s*([^\d\s，。？?、]{0,2})")


class FollowUp(BaseModel):
    """A question as it was understood in its conversation."""

    question: str
    resolved: str = Field(description="The question with what it left to the previous turn.")
    inherited: bool = Field(False, description="Whether anything came from the previous turn.")
    rule: str = Field("standalone", description="standalone | ellipsis | pronoun")


def _core(text: str) -> str:
    core = text.strip().rstrip(_END)
    for lead in _LEADS:
        if core.startswith(lead) and len(core) > len(lead):
            core = core[len(lead) :].lstrip("，, ")
            break
    return core


def _predicate_at(core: str) -> int:
    """Where ``core``'s predicate starts (len(core) when none is found)."""
    found = [core.find(p, 1) for p in _PREDICATES]
    found = [i for i in found if i > 0]
    return min(found, default=len(core))


def _asks(core: str) -> bool:
    return any(p in core for p in _ASKING)


def _subject(previous: str) -> str:
    """The thing the previous question is about: its code, else the part before 的, else the
    part before its predicate."""
    core = _core(previous)
    code = _CODE.search(core)
    if code:
        return code.group(0)
    subject = core[: _predicate_at(core)]
    return subject.split("的", 1)[0] if "的" in subject else subject


def _shared(a: str, b: str) -> int:
    return len(set(a) & set(b))


def _counterpart(core: str, new: str) -> tuple[int, int] | None:
    """The span of ``core`` most like ``new`` (same length, give or take one character; at
    least half of ``new``'s characters in common, in its place): what ``new`` stands in for
    (二类城市 for 一类城市, 女性 for 男性, 伙食标准 for 住宿标准)."""
    best: tuple[int, int, int] | None = None
    for size in (len(new), len(new) - 1, len(new) + 1):
        if size < 2:
            continue
        for start in range(len(core) - size + 1):
            span = core[start : start + size]
            if span == new:
                continue
            same = sum(1 for a, b in zip(span[::-1], new[::-1], strict=False) if a == b)
            if 2 * same >= len(new) and (best is None or same > best[0]):
                best = (same, start, start + size)
    return None if best is None else (best[1], best[2])


def _replace_in(previous: str, new: str) -> str:
    """The previous question with ``new`` in place of what it replaces (see the module)."""
    core = _core(previous)
    if _CODE.fullmatch(new) and (old := _CODE.search(core)):
        return core[: old.start()] + new + core[old.end() :]
    if _WORD.fullmatch(new) and (words := [w for w in _WORD.finditer(core) if len(w[0]) > 1]):
        # an identifier stands in for the identifier it shares the longest prefix with
        def common(word: re.Match[str]) -> int:
            return len(os.path.commonprefix([word[0], new]))

        old_word = max(words, key=common)
        return core[: old_word.start()] + new + core[old_word.end() :]
    value = _VALUE.fullmatch(new)
    if value and value.group(2):
        for old_value in _VALUE.finditer(core):
            if old_value.group(2) == value.group(2):
                return core[: old_value.start()] + new + core[old_value.end() :]
    if (span := _counterpart(core, new)) is not None:
        return core[: span[0]] + new + core[span[1] :]
    cut = _predicate_at(core)
    subject, predicate = core[:cut], core[cut:]
    if "，" in subject:  # 去港澳台地区出差，住宿标准是多少: the asked clause is the last
        scope, _, subject = subject.rpartition("，")
        return f"{scope}，{_replace_subject(subject, new)}{predicate}"
    return _replace_subject(subject, new) + predicate


def _replace_subject(subject: str, new: str) -> str:
    if "的" in subject:
        owner, _, attribute = subject.rpartition("的")
        if _shared(new, attribute) > _shared(new, owner):
            return f"{owner}的{new}"
        return f"{new}的{attribute}"
    return new


class FollowUpResolver:
    """Resolves a question against the previous question of its conversation."""

    def resolve(self, question: str, previous: str | None) -> FollowUp:
        text = question.strip()
        if not previous or not text:
            return FollowUp(question=question, resolved=text)
        core = _core(text)
        pronoun = next((p for p in _PRONOUNS if core.startswith(p)), None)
        if pronoun is not None:
            rest = core[len(pronoun) :]
            if rest.endswith("呢"):  # 它的保费呢: the attribute asked as before
                rest = rest[:-1] + ("是多少" if "多少" in previous else "是什么")
            resolved = _subject(previous) + rest
            return FollowUp(question=question, resolved=resolved + "？", inherited=True,
                            rule="pronoun")  # fmt: skip
        if core.endswith("呢") and not _asks(core[:-1]):
            new = core[:-1].strip().removesuffix("的")
            if new:
                resolved = _replace_in(previous, new)
                return FollowUp(question=question, resolved=resolved + "？", inherited=True,
                                rule="ellipsis")  # fmt: skip
        return FollowUp(question=question, resolved=text)
