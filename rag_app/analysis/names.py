"""Firm names: the names of a question whose absence from the evidence is certain to matter."""

from __future__ import annotations

from rag_app.analysis.asked import QuestionAnalysis
from rag_app.analysis.entities import _LATIN, _QUOTED


def firm_names(analysis: QuestionAnalysis) -> list[str]:
    """The names of ``analysis`` that certainly name something: its anonymised names (张某某),
    then the entities it quotes (《员工手册》, “合伙”) or writes in Latin letters (SAP, Redis), in
    order. A word jieba merely tags as a name (明星) is left out: evidence that lacks one of
    these is about something else; evidence that lacks a tagged word may say it otherwise.
    (Read from the analysis only: no feature depends on it.)"""
    question = analysis.text
    quoted = {next(g for g in m.groups() if g) for m in _QUOTED.finditer(question)}
    firm = [e for e in analysis.entities if e in quoted or _LATIN.fullmatch(e)]
    return list(dict.fromkeys(n for n in [*analysis.names, *firm] if len(n) >= 2))
