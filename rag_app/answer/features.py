"""Generic features of an answer unit for a question (no domain vocabulary).

Each unit of the evidence gets a vector of :data:`FEATURES`: IDF-weighted fuzzy coverage of the
question's terms (in the unit, in its node with the heading path), char-bigram overlap, the rarest
question term that is missing, the asked head, the question's entities and constraint values,
a value of the asked answer type, embedding similarity, and position. The fitted
:class:`~rag_app.answer.model.AnswerModel` combines them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import partial

import numpy as np
from llama_index.core.schema import NodeWithScore

from rag_app.analysis.asked import QuestionAnalysis
from rag_app.analysis.lexicon import Lexicon
from rag_app.answer.decision import AnswerUnit
from rag_app.retrieval.record import record_of
from rag_app.text.matching import (
    DIGITS,
    bigrams,
    inherited_bigrams,
    term_credit,
    weighted_coverage,
)

FEATURES: tuple[str, ...] = (
    "cov_unit",  # IDF-weighted fuzzy coverage of the question terms in the unit (+lead-in/header)
    "cov_ctx",  # ... in the unit's node and heading path
    "cov_heading",  # ... in the heading path alone
    "bigram_unit",  # share of the question's char bigrams in the unit
    "bigram_ctx",  # ... in the node
    "miss_ctx",  # IDF share of the rarest question term missing from the node (0: none missing)
    "miss_all",  # ... missing from all the evidence
    "head_unit",  # the asked head is in the unit (1; up to spelling variants), or most of its chars
    "head_ctx",  # ... in the node
    "phrase_unit",  # IDF-weighted coverage of the asked phrase's terms (机房温度) in the unit
    "phrase_ctx",  # ... in the node
    "focus_unit",  # IDF-weighted coverage of the asking clause's terms but the entities
    "focus_ctx",  # ... in the node
    "entity_unit",  # share of the question's entities in the unit (1 when it names none)
    "entity_ctx",  # ... in the node
    "has_entity",
    "constraint_unit",  # share of the question's values (5000元, 63岁) in the unit (1 when none)
    "constraint_ctx",
    "expects_value",  # the question asks for a number, date, amount, person, place...
    "value_unit",  # the unit holds a value of the asked type
    "value_gap",  # expects a value and the unit holds none
    "value_with_head",  # the unit holds a value of the asked type and the asked head
    "dense",  # cosine of the question and the unit embeddings
    "dense_gap",  # dense minus the best dense of the evidence
    "rank",  # 1 / number of the unit's evidence node
    "first_in_node",
    "column",  # a row: best coverage of the question by one column name
    # the unit read under its heading path: a title names the subject of each sentence below it
    # ("它的面积约为0.304平方公里" under "# 乍都节公园"); these rank units, the gate reads the
    # unit's own words (the support model, rag_app/answer/model.py)
    "cov_titled",
    "bigram_titled",
    "head_titled",
    "phrase_titled",
    "focus_titled",
    "entity_titled",
    "head_bound",  # the asked head labels a value in the unit ("体温：36.8°C", "等待期为180日")
    # 1 when the evidence (with its heading paths) holds at least one of the values the question
    # states (2021年10月 read as one date; bounds such as 超过7亿 aside), or it states none; 0
    # when it holds none of them. The same for every unit
    "constraint_any",
    # the unit holds a value of the form of a stated value (2021年09月 for 2021年10月) and the
    # evidence none of the stated values: the unit is about another period, age or amount
    "constraint_rival",
    # coverage of the question by the unit's own words: a row's cells without their column
    # names, an item without its lead-in (a header or lead-in is shared by every unit under it)
    "cov_own",
    # a row whose own cells meet no question word (a number only whole, as a stated value) and
    # no stated value: matched only through the title and column names every row of its table
    # shares (not a model feature: such rows share their probability, spread_header_rows in
    # rag_app/answer/model.py)
    "row_header_only",
)
TITLED: frozenset[str] = frozenset(f for f in FEATURES if f.endswith("_titled"))
_FEATURE_SET = frozenset(FEATURES)

_YEAR_MONTH = re.compile(r"(\d{4})\s*年\s*(\d{1,2})\s*月")
_ANY_YEAR_MONTH = re.compile(r"\d{4}\s*年\s*\d{1,2}\s*月|(?<!\d)\d{4}[-/.]\d{1,2}(?!\d)")
# a year as written (2021年, 2021-07) or as the value of a year key (年份：2021, a table's column)
_ANY_YEAR = re.compile(
    r"(?<!\d)\d{4}\s*年|(?<!\d)\d{4}[-/.]\d{1,2}(?!\d)|年[份度]?\s*[:：]\s*\d{4}(?!\d)"
)
_LEADING_ZEROS = re.compile(r"^0+(?=\d)")
DENSE_UNITS = 8  # units embedded per question (the best by lexical coverage)


def _bound(head: str) -> re.Pattern[str]:
    """The head, then within three chars a colon or a copula: it labels what follows."""
    return re.compile(re.escape(head) + r"[^，。；,;]{0,3}?(?:[:：]|为|是|约|达)")


def _norm(lexicon: Lexicon, text: str) -> str:
    return lexicon.normalize(text.lower())


def _share(items: Sequence[str], text: str) -> float:
    return sum(1.0 for x in items if x in text) / len(items) if items else 1.0


def _number(digits: str) -> str:
    """A number as written, without leading zeros: 7月 meets 2021-07-01."""
    return _LEADING_ZEROS.sub("", digits)


def _numbers_in(items: Sequence[str], text: str) -> float:
    """Share of the question's values whose number occurs in ``text`` (units may differ)."""
    if not items:
        return 1.0
    found = {_number(n) for n in DIGITS.findall(text)}
    hits = 0.0
    for item in items:
        nums = [_number(n) for n in DIGITS.findall(item)]
        hits += 1.0 if nums and all(n in found for n in nums) else 0.0
    return hits / len(items)


def stated_values(analysis: QuestionAnalysis) -> list[str]:
    """The values the question states as written, a year with its month as one (2021年10月),
    bounds aside (超过7亿, 20000至30000元: the answer need not state them)."""
    question = analysis.text
    dates = list(_YEAR_MONTH.finditer(question))
    values = [
        c
        for c in analysis.constraints
        if c not in analysis.bounds
        and not any(m.start() <= question.find(c) < m.end() for m in dates)
    ]
    return [*(m.group(0) for m in dates), *values]


def any_value_in(values: Sequence[str], text: str) -> float:
    """1 when ``text`` holds one of ``values`` (a question's :func:`stated_values`), or there
    are none; else 0. A year with its month is found as written or as 2021-10 (2021-10-01)."""
    if not values:
        return 1.0
    for value in values:
        date = _YEAR_MONTH.fullmatch(value)
        if date is None:
            if _numbers_in([value], text) == 1.0:
                return 1.0
            continue
        year, month = date.group(1), int(date.group(2))
        if re.search(rf"{year}\s*(?:年\s*0?{month}\s*月|[-/.]0?{month}(?!\d))", text):
            return 1.0
    return 0.0


def value_form(value: str) -> re.Pattern[str] | None:
    """A pattern of the values written in the same form as ``value`` (a stated value): any year
    and month for 2021年10月, any year for 2021年, any number of the same unit for 63岁 or 5000元;
    None for a bare number (it has no form to tell)."""
    if _YEAR_MONTH.fullmatch(value):
        return _ANY_YEAR_MONTH
    if re.fullmatch(r"\d{4}\s*年", value):
        return _ANY_YEAR
    unit = DIGITS.sub("", value).strip()
    if not unit:
        return None
    return re.compile(rf"(?<![\d.])\d+(?:\.\d+)?\s*{re.escape(unit)}")


def _value_forms(values: Sequence[str], normalize: Callable[[str], str]) -> list[re.Pattern[str]]:
    return [f for v in values if (f := value_form(normalize(v))) is not None]


def _rival_in(values: Sequence[str], forms: Sequence[re.Pattern[str]], text: str) -> str | None:
    """The first value in ``text`` of one of ``forms`` when ``text`` holds none of ``values``."""
    if not forms or any_value_in(values, text) == 1.0:
        return None
    return next((m.group(0) for form in forms if (m := form.search(text))), None)


def rival_value(
    analysis: QuestionAnalysis, text: str, normalize: Callable[[str], str] = str.lower
) -> str | None:
    """A value in ``text`` of the form of a stated value of the question ("2021年09月" for
    2021年10月, "60岁" for 63岁), when ``text`` holds none of the stated values: the passage
    is about another period, age or amount. None otherwise. ``normalize``: how ``text`` was
    normalised (the stated values' units are read the same way: 天 and 日 alike)."""
    values = stated_values(analysis)
    return _rival_in(values, _value_forms(values, normalize), text)


def row_vector(row: dict[str, float]) -> list[float]:
    """A unit's named features as the model's columns, in :data:`FEATURES` order; a feature
    computed but not declared, or declared but not computed, is an error (no silent shift)."""
    if row.keys() != _FEATURE_SET:
        extra, missing = row.keys() - _FEATURE_SET, _FEATURE_SET - row.keys()
        raise KeyError(f"unit features differ from FEATURES: extra {extra}, missing {missing}")
    return [row[f] for f in FEATURES]


class FeatureExtractor:
    """Computes the feature matrix of the units of one question's evidence.

    ``embed``: a function from (question, texts) to cosine similarities (the KB's embedding
    model); None leaves the dense features at 0."""

    def __init__(
        self,
        lexicon: Lexicon,
        embed: Callable[[str, list[str]], list[float]] | None = None,
    ) -> None:
        self.lexicon = lexicon
        self.embed = embed

    def matrix(
        self,
        analysis: QuestionAnalysis,
        weights: dict[str, float],
        units: Sequence[AnswerUnit],
        nodes: Sequence[NodeWithScore],
    ) -> np.ndarray:
        lex = self.lexicon
        w = {
            _norm(lex, t): v
            for t, v in weights.items()
            if t in analysis.terms or not analysis.terms
        }
        wmax = max(w.values(), default=1.0) or 1.0
        q_bigrams = bigrams(_norm(lex, analysis.text))
        head = _norm(lex, analysis.head) if analysis.head else None
        fw = {k: v for k, v in w.items() if k in {_norm(lex, t) for t in analysis.focus}}
        pw = {k: v for k, v in w.items() if k in {_norm(lex, t) for t in analysis.phrase}}
        entities = [_norm(lex, e) for e in analysis.entities]
        ctx_texts = []
        paths_raw = [record_of(n.node).title_path for n in nodes]
        for node, path in zip(nodes, paths_raw, strict=True):
            ctx_texts.append(_norm(lex, path + "\n" + node.node.get_content()))
        paths = [_norm(lex, path) for path in paths_raw]
        everything = "\n".join(ctx_texts)
        missing_all = [t for t in w if term_credit(t, everything) < 1.0]
        miss_all = max((w[t] for t in missing_all), default=0.0) / wmax
        stated = stated_values(analysis)
        constraint_any = any_value_in(stated, everything)
        # the forms of the stated values, read once: a unit is a rival only when no passage
        # holds a stated value
        forms = [] if constraint_any else _value_forms(stated, partial(_norm, lex))
        node_stats = []
        for ctx, path in zip(ctx_texts, paths, strict=True):
            missing = [t for t in w if term_credit(t, ctx) < 1.0]
            node_stats.append(
                (
                    weighted_coverage(w, ctx),
                    weighted_coverage(w, path),
                    len(q_bigrams & bigrams(ctx)) / len(q_bigrams) if q_bigrams else 0.0,
                    max((w[t] for t in missing), default=0.0) / wmax,
                    term_credit(head, ctx) if head else 1.0,
                    weighted_coverage(pw, ctx) if pw else 1.0,
                    weighted_coverage(fw, ctx) if fw else 1.0,
                    _share(entities, ctx),
                    _numbers_in(analysis.constraints, ctx),
                )
            )
        ew = dict.fromkeys(entities, 1.0)
        bound = _bound(head) if head else None
        value = self.lexicon.value_pattern(analysis.answer_type) if analysis.expects_value else None
        # the question's words but its numbers (a number is read whole, as a stated value: the
        # digits of 63 are not a partial match of a cell 1633)
        words = {t: v for t, v in w.items() if not DIGITS.fullmatch(t)}
        rows = []
        texts = [_norm(lex, u.scoring_text) for u in units]
        for u, text in zip(units, texts, strict=True):
            (
                cov_ctx,
                cov_head,
                bg_ctx,
                miss_ctx,
                head_ctx,
                phrase_ctx,
                focus_ctx,
                ent_ctx,
                con_ctx,
            ) = node_stats[u.source - 1]
            has_value = bool(value.search(u.text)) if value is not None else False
            if u.kind == "row" and analysis.answer_type in ("number", "money", "ratio", "duration"):
                has_value = has_value or any(c.isdigit() for c in u.text)
            column = max((weighted_coverage(w, _norm(lex, h)) for h in u.header), default=0.0)
            head_unit = term_credit(head, text) if head else 1.0
            title = paths[u.source - 1]
            cov_unit = weighted_coverage(w, text)
            # the unit's own words: a row's cells, an item without its lead-in (a sentence's
            # are its text, so its coverage is cov_unit's)
            cells = _norm(lex, " ".join(u.cells) if u.cells else u.text)
            own = cov_unit if cells == text else weighted_coverage(w, cells)
            has = 1.0 if has_value else 0.0
            row = {
                "cov_unit": cov_unit,
                "cov_ctx": cov_ctx,
                "cov_heading": cov_head,
                "bigram_unit": len(q_bigrams & bigrams(text)) / len(q_bigrams)
                if q_bigrams
                else 0.0,
                "bigram_ctx": bg_ctx,
                "miss_ctx": miss_ctx,
                "miss_all": miss_all,
                "head_unit": head_unit,
                "head_ctx": head_ctx,
                "phrase_unit": weighted_coverage(pw, text) if pw else 1.0,
                "phrase_ctx": phrase_ctx,
                "focus_unit": weighted_coverage(fw, text) if fw else 1.0,
                "focus_ctx": focus_ctx,
                "entity_unit": _share(entities, text),
                "entity_ctx": ent_ctx,
                "has_entity": 1.0 if entities else 0.0,
                "constraint_unit": _numbers_in(analysis.constraints, text),
                "constraint_ctx": con_ctx,
                "expects_value": 1.0 if analysis.expects_value else 0.0,
                "value_unit": has,
                "value_gap": 1.0 if analysis.expects_value and not has_value else 0.0,
                "value_with_head": min(has, head_unit),
                "dense": 0.0,  # filled by _dense when the model weighs it
                "dense_gap": 0.0,
                "rank": 1.0 / u.source,
                "first_in_node": 1.0 if u.index == 0 else 0.0,
                "column": column,
                "cov_titled": weighted_coverage(w, text, title),
                "bigram_titled": inherited_bigrams(q_bigrams, text, title),
                "head_titled": weighted_coverage({head: 1.0}, text, title) if head else 1.0,
                "phrase_titled": weighted_coverage(pw, text, title) if pw else 1.0,
                "focus_titled": weighted_coverage(fw, text, title) if fw else 1.0,
                "entity_titled": weighted_coverage(ew, text, title) if ew else 1.0,
                "head_bound": 1.0 if bound is not None and bound.search(text) else 0.0,
                "constraint_any": constraint_any,
                "constraint_rival": float(_rival_in(stated, forms, text) is not None),
                "cov_own": own,
                "row_header_only": 1.0
                if u.kind == "row"
                and weighted_coverage(words, cells) == 0.0
                and not (analysis.constraints and _numbers_in(analysis.constraints, cells))
                else 0.0,
            }
            rows.append(row_vector(row))
        x = np.asarray(rows, dtype=np.float64).reshape(len(units), len(FEATURES))
        if self.embed is not None and len(units):
            self._dense(analysis, units, x)
        return x

    def _dense(
        self, analysis: QuestionAnalysis, units: Sequence[AnswerUnit], x: np.ndarray
    ) -> None:
        """Embed the best units by lexical coverage; the others get the lowest similarity."""
        assert self.embed is not None
        i_cov, i_dense, i_gap = (
            FEATURES.index("cov_unit"),
            FEATURES.index("dense"),
            FEATURES.index("dense_gap"),
        )
        order = np.argsort(-x[:, i_cov], kind="stable")[:DENSE_UNITS]
        sims = self.embed(analysis.text, [units[i].scoring_text for i in order])
        x[:, i_dense] = min(sims) if sims else 0.0
        for i, s in zip(order, sims, strict=True):
            x[i, i_dense] = s
        x[:, i_gap] = x[:, i_dense] - x[:, i_dense].max()
