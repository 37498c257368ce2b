"""A question's walk goes down the stages once (issue 66, item 5).

``KnowledgeBase.ask`` is run under ``sys.setprofile`` and every call into a ``rag_app`` module
is recorded. The walk is the sequence of *stays*: control *enters* a module when one of its
functions is called while no frame of that module is on the call stack (a callback into a
module still at work, a generator it made, a recursion or a return are part of its stay, not
entries), and consecutive entries into one module are one stay. Each module of the walk
belongs to a stage (:data:`STAGES`, listed explicitly below); the stages must come in the order
analysis → retrieval → evidence → decision → synthesis without climbing back, and no module may
be entered more than twice per question. The orchestrators (:data:`FACADE`) sit above the
stages and are counted but not ordered; the shared modules of :data:`EXEMPT` are not stages at
all (why: the comment on each).
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

import pytest

import rag_app

PACKAGE = str(Path(rag_app.__file__).resolve().parent) + "/"

# stage of a module, by its path under rag_app/ (the first matching prefix wins)
STAGES: tuple[tuple[str, str], ...] = (
    ("analysis/", "analysis"),
    ("retrieval/", "retrieval"),
    ("postprocess/rerank.py", "evidence"),
    ("postprocess/neighbors.py", "evidence"),
    ("postprocess/gate.py", "decision"),
    ("answer/", "decision"),
    ("synthesis/", "synthesis"),
)
ORDER = ("analysis", "retrieval", "evidence", "decision", "synthesis")

# the orchestrators: the facade and the engine call each stage in turn; their entries count
# (at most twice), their place in the order does not
FACADE = ("kb.py", "kb_parts.py", "annotations.py", "query.py", "engine.py")

EXEMPT: tuple[str, ...] = (
    # the bottom layer (tokenizer, numerals): text functions any stage uses, importing nothing
    # else of rag_app
    "text/",
    # the public values (Answer, Source, Citation) and the settings, read by every stage
    "types.py",
    "config.py",
    # the evidence node's typed chunk record and its one accessor: the value retrieval hands
    # down, read where a stage needs a chunk field (issue 66 item 2 wants one accessor)
    "retrieval/record.py",
    # the stage timer (a context manager every stage opens) and the LLM time budget
    "retrieval/timing.py",
    "llm_budget.py",
    # the typed values one stage hands the next: reading a property of one (the analysis's
    # expects_value, the decision's outcome) is reading the value, not going back to the
    # stage that made it; the Request (retrieval/scope.py) is the facade's
    "analysis/asked.py",
    "answer/decision.py",
    "retrieval/scope.py",
    # the lexicon: the vocabulary (normalisation, question cues, value patterns) every stage
    # reads, as it reads the tokenizer's tables
    "analysis/lexicon.py",
    # how specific a word is in general Chinese (jieba's dictionary counts): vocabulary data
    # like the lexicon, read by the gate's question features and the refusal's reason
    "analysis/specificity.py",
    # the keyword index's term statistics (IDF): index data, like the ledger's, read by the
    # reranker and the decision for the question's terms
    "retrieval/stats.py",
    # log-odds, one numeric helper of the fitted models and the question features
    "answer/odds.py",
    # storage and the models it serves: the ledger, the keyword index, Chroma and the
    # embedding models, which retrieval, neighbour expansion and the reading stage each call
    "store/",
    "embeddings.py",
    "e5_model.py",
    "e5_numpy.py",
    "e5_torch.py",
    "usem3_cache.py",
)


# climbs left on purpose, (from module, into module): why
ALLOWED_CLIMBS: dict[tuple[str, str], str] = {
    # Caveats.lacking reads the question's firm names (analysis/names.py) itself; caveat.py is
    # being changed by its owner: the names belong in the analysis stage's AskedQuestion
    ("answer/caveat.py", "analysis/names.py"): "caveat.py reads firm names itself (to move)",
}


@dataclass(frozen=True)
class Stay:
    module: str  # path under rag_app/
    function: str  # the function control entered it by
    stage: str | None  # None: a facade module
    caller: str | None = None  # the module control came from (None: outside rag_app)


def _module(code: CodeType) -> str | None:
    name = code.co_filename
    if not name.startswith(PACKAGE):
        return None
    return name[len(PACKAGE) :]


def _exempt(module: str) -> bool:
    return module.startswith(EXEMPT)


def stage_of(module: str) -> str | None:
    if module in FACADE:
        return None
    for prefix, stage in STAGES:
        if module.startswith(prefix):
            return stage
    raise AssertionError(f"rag_app/{module} has no stage: add it to STAGES, FACADE or EXEMPT")


def record_walk(call: Callable[[], Any]) -> list[Stay]:
    """The stays of ``call`` (see the module docstring)."""
    stays: list[Stay] = []

    def profile(frame: FrameType, event: str, arg: object) -> None:
        if event != "call":
            return
        module = _module(frame.f_code)
        if module is None or _exempt(module):
            return
        caller, frame_back = None, frame.f_back
        while frame_back is not None:  # already at work lower on the stack: part of its stay
            below = _module(frame_back.f_code)
            if below == module:
                return
            if caller is None and below is not None and not _exempt(below):
                caller = below
            frame_back = frame_back.f_back
        if stays and stays[-1].module == module:
            return
        stays.append(Stay(module, frame.f_code.co_name, stage_of(module), caller))

    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    return stays


@dataclass(frozen=True)
class WalkSummary:
    stays: int
    modules: int
    climbs: int
    most_entered: tuple[str, int]

    def __str__(self) -> str:
        module, n = self.most_entered
        return (
            f"{self.stays} stays in {self.modules} modules, {self.climbs} climbs back up; "
            f"most entered: {module} ({n})"
        )


def climbs(stays: list[Stay]) -> list[int]:
    """Indexes of the stays whose stage comes before the previous staged stay's (but the
    :data:`ALLOWED_CLIMBS`, which leave the stage they climb from unchanged)."""
    out, last = [], -1
    for i, s in enumerate(stays):
        if s.stage is None or (s.caller, s.module) in ALLOWED_CLIMBS:
            continue
        rank = ORDER.index(s.stage)
        if rank < last:
            out.append(i)
        last = rank
    return out


def summary(stays: list[Stay]) -> WalkSummary:
    entries = Counter(s.module for s in stays)
    return WalkSummary(len(stays), len(entries), len(climbs(stays)), entries.most_common(1)[0])


def describe(stays: list[Stay]) -> str:
    up = set(climbs(stays))
    return "\n".join(
        f"{i:3d} {'↑' if i in up else ' '} {s.stage or '-':9s} {s.module:32s} {s.function}"
        f"  ← {s.caller}"
        for i, s in enumerate(stays)
    )


# answered plainly, a table row, a compound question, a list, one answered with a caveat, two
# refusals with their reasons (a term the evidence lacks, an entity no passage names)
QUESTIONS = (
    "公司电脑登录密码最少要设置几位？",
    "30岁男性20年交，每万元保额年交保费是多少？",
    "安心守护终身重大疾病保险的中症疾病保险金按基本保险金额的多少给付？最多赔几次？",
    "根据信息安全管理制度，哪些情形应当立即上报信息安全事件？",
    "信息安全管理制度规定的机房温度标准是多少？",
    "员工差旅报销管理办法中规定的通讯费补贴标准是多少？",
    "2022年卡塔尔世界杯的冠军是哪支球队？",
)


@pytest.mark.parametrize("question", QUESTIONS)
def test_a_question_walks_down_the_stages_once(sample_kb, question: str) -> None:  # type: ignore[no-untyped-def]
    sample_kb.ask(question)  # the engine and its models built, caches warm
    stays = record_walk(lambda: sample_kb.ask(question))
    walk = f"{question}: {summary(stays)}\n{describe(stays)}"
    entries = Counter(s.module for s in stays)
    assert max(entries.values()) <= 2, walk
    assert not climbs(stays), walk
    stages = [s.stage for s in stays if s.stage is not None]
    assert stages[0] == "analysis" and stages[-1] == "synthesis", walk


def test_the_walk_sees_a_climb_and_a_third_entry() -> None:
    """The checks can fail: a walk that goes back up and enters a module three times."""
    stays = [
        Stay("analysis/question.py", "f", "analysis"),
        Stay("answer/locator.py", "f", "decision"),
        Stay("synthesis/extractive.py", "f", "synthesis"),
        Stay("answer/locator.py", "f", "decision"),
        Stay("synthesis/extractive.py", "f", "synthesis"),
        Stay("answer/locator.py", "f", "decision"),
    ]
    assert climbs(stays) == [3, 5]
    assert summary(stays).most_entered == ("answer/locator.py", 3)


if __name__ == "__main__":  # print the walks: python tests/test_question_walk.py [question …]
    import tempfile

    from rag_app import KnowledgeBase

    root = Path(__file__).resolve().parents[1]
    with tempfile.TemporaryDirectory() as tmp:
        kb = KnowledgeBase.open(Path(tmp) / "kb", cross_reader=False)
        kb.ingest([root / "data" / "knowledge"])
        for q in sys.argv[1:] or QUESTIONS:
            kb.ask(q)
            walked = record_walk(partial(kb.ask, q))
            print(f"{q}: {summary(walked)}\n{describe(walked)}\n")
        kb.close()
