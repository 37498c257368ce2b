"""Reports of an :class:`~rag_app.eval.runner.EvalRun`: Markdown with tables and PNG plots, JSON,
and the comparison of two runs.

Plots are drawn with matplotlib's Agg canvas (no display, no pyplot state) and saved next to the
Markdown file as ``<stem>_recall.png``, ``<stem>_refusals.png`` and ``<stem>_latency.png``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import warnings
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from rag_app.eval.fonts import NO_CJK_FONT, PlotFontWarning, cjk_font
from rag_app.eval.runner import LOWER_IS_BETTER, METRICS, EvalRun, QuestionRecord

logger = logging.getLogger(__name__)

PLOTS = ("recall", "refusals", "latency")


# ----- formatting -------------------------------------------------------------------------------
def label(key: str, k: int | None = None) -> str:
    text = METRICS.get(key, key)
    return text.replace("@k", f"@{k}") if k is not None else text


def fmt(key: str, value: Any) -> str:
    """Rates as percentages, milliseconds and characters as integers, None as an en dash."""
    if value is None:
        return "–"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if key.endswith(("_ms_avg", "_p50", "_p95", "chars")):
        return f"{value:.0f}"
    if key == "n" or key.startswith("n_") or key == "errors":
        return str(int(value))
    return f"{value * 100:.1f}%" if key != "mrr_at_k" else f"{value:.3f}"


def fmt_delta(key: str, delta: float | None) -> str:
    if delta is None:
        return "–"
    if key.endswith(("_ms_avg", "_p50", "_p95", "chars")):
        return f"{delta:+.0f}"
    if key == "mrr_at_k":
        return f"{delta:+.3f}"
    return f"{delta * 100:+.1f} pp"


def _cell(text: str, limit: int = 80) -> str:
    flat = " ".join(str(text).split()).replace("|", "\\|")
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


# ----- plots ------------------------------------------------------------------------------------
@contextlib.contextmanager
def _plot_style() -> Iterator[None]:
    import matplotlib

    font = cjk_font()
    rc: Any = {"font.size": 9}
    if font:
        rc["font.sans-serif"] = [font, "DejaVu Sans"]
    with matplotlib.rc_context(rc), warnings.catch_warnings():
        # without a CJK font Chinese category names render as boxes: write_plots says so once,
        # not once per glyph
        warnings.filterwarnings("ignore", message=r".*[Gg]lyph.*missing")
        yield


def _save(fig: Any, path: Path) -> Path:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    return path


def plot_recall(run: EvalRun, path: Path) -> Path:
    """Grouped bars per category: Recall@k, MRR@k and case pass rate."""
    from matplotlib.figure import Figure

    cats = run.categories
    names = list(cats)
    series = [("recall_at_k", "#4C72B0"), ("mrr_at_k", "#55A868"), ("case_pass_rate", "#C44E52")]
    with _plot_style():
        fig = Figure(figsize=(max(5.0, 0.9 * len(names) + 2), 3.6))
        ax = fig.add_subplot()
        width = 0.8 / len(series)
        for i, (key, color) in enumerate(series):
            xs = [j + (i - 1) * width for j in range(len(names))]
            ys = [cats[n].get(key) for n in names]
            ax.bar(
                [x for x, y in zip(xs, ys, strict=True) if y is not None],
                [y for y in ys if y is not None],
                width=width,
                color=color,
                label=label(key, run.k),
            )
        ax.set_xticks(range(len(names)), names, rotation=30, ha="right")
        ax.set_ylim(0, 1.05)
        ax.set_ylabel("rate")
        ax.set_title(f"Per category (k={run.k})")
        ax.legend(loc="lower left", fontsize=8)
        ax.grid(axis="y", alpha=0.3)
        return _save(fig, path)


def refusal_matrix(records: list[QuestionRecord]) -> dict[str, dict[str, int]]:
    """Counts of answerable/unanswerable × answered/refused (questions that were asked)."""
    matrix = {
        "answerable": {"answered": 0, "refused": 0},
        "unanswerable": {"answered": 0, "refused": 0},
    }
    for rec in records:
        if rec.passed is None:
            continue
        row = "answerable" if rec.answerable else "unanswerable"
        matrix[row]["refused" if rec.refused else "answered"] += 1
    return matrix


def plot_refusals(run: EvalRun, path: Path) -> Path:
    from matplotlib.figure import Figure

    matrix = refusal_matrix(run.records)
    rows, cols = ["answerable", "unanswerable"], ["answered", "refused"]
    good = {("answerable", "answered"), ("unanswerable", "refused")}
    with _plot_style():
        fig = Figure(figsize=(4.2, 3.2))
        ax = fig.add_subplot()
        values = [[matrix[r][c] for c in cols] for r in rows]
        top = max(1, max(max(v) for v in values))
        ax.imshow(values, cmap="Blues", vmin=0, vmax=top)
        for i, r in enumerate(rows):
            for j, c in enumerate(cols):
                color = "white" if matrix[r][c] > top / 2 else "black"
                verdict = "right" if (r, c) in good else "wrong"
                ax.text(j, i, f"{matrix[r][c]}\n{verdict}", ha="center", va="center", color=color)
        ax.set_xticks(range(2), cols)
        ax.set_yticks(range(2), rows)
        ax.set_title("Refusals")
        return _save(fig, path)


def plot_latency(run: EvalRun, path: Path) -> Path:
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    retrieve = [r.retrieve_ms for r in run.records if r.error is None]
    ask = [r.ask_ms for r in run.records if r.ask_ms is not None]
    with _plot_style():
        fig = Figure(figsize=(5.0, 3.2))
        ax = fig.add_subplot()
        top = max([*retrieve, *ask, 1.0])
        bins = [top * i / 20 for i in range(21)]
        ax.hist(retrieve, bins=bins, alpha=0.6, label="retrieve", color="#4C72B0")
        if ask:
            ax.hist(ask, bins=bins, alpha=0.6, label="ask", color="#DD8452")
        ax.set_xlabel("milliseconds")
        ax.set_ylabel("questions")
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_title("Latency")
        ax.legend()
        return _save(fig, path)


def write_plots(run: EvalRun, directory: Path, stem: str) -> dict[str, Path]:
    """The PNG plots; a :class:`PlotFontWarning` (and a log line) when no CJK font is found."""
    directory.mkdir(parents=True, exist_ok=True)
    if cjk_font() is None:
        logger.warning("%s", NO_CJK_FONT)
        warnings.warn(NO_CJK_FONT, PlotFontWarning, stacklevel=2)
    makers = {"recall": plot_recall, "refusals": plot_refusals, "latency": plot_latency}
    return {name: makers[name](run, directory / f"{stem}_{name}.png") for name in PLOTS}


# ----- Markdown -----------------------------------------------------------------------------------
def failure_reason(rec: QuestionRecord) -> str:
    if rec.error:
        return f"error: {rec.error}"
    if not rec.answerable:
        return "answered an unanswerable question"
    if rec.refused:
        return f"refused ({rec.reason})"
    if rec.keyword_hit is False:
        return "answer lacks the reference values"
    return "answer cites no gold document"


def render_markdown(
    run: EvalRun,
    images: Mapping[str, str] | None = None,
    title: str = "Evaluation report",
    extra: Mapping[str, str] | None = None,
    max_failures: int = 50,
) -> str:
    """The report as Markdown; ``images`` maps plot names to paths relative to the report."""
    o, k = run.overall, run.k
    lines = [f"# {title}", ""]
    meta = {
        "questions": f"{o.get('n', 0)} ({o.get('n_answerable', 0)} answerable, "
        f"{o.get('n_unanswerable', 0)} unanswerable)",
        "k": str(k),
        "tenant": run.tenant,
        "run at": run.created_at,
        "settings": ", ".join(f"{key}={value}" for key, value in run.settings.items()),
        **(extra or {}),
    }
    lines += [f"- **{key}**: {value}" for key, value in meta.items()]
    if o.get("errors"):
        lines.append(f"- **errors**: {o['errors']} questions raised (see the JSON)")

    lines += ["", "## Overall", ""]
    lines += _table(["metric", "value"], [[label(m, k), fmt(m, o.get(m))] for m in METRICS])

    lines += ["", "## Per category", ""]
    cols = [
        "case_pass_rate",
        "recall_at_k",
        "mrr_at_k",
        "source_hit_rate",
        "evidence_hit_rate",
        "keyword_hit_rate",
        "no_answer_accuracy",
        "false_refusal_rate",
        "misleading_rate",
        "qualified_rate",
        "avg_context_chars",
    ]
    rows = [
        [_cell(name, 40), str(s.get("n", 0)), *[fmt(m, s.get(m)) for m in cols]]
        for name, s in run.categories.items()
    ]
    rows.append(["**all**", str(o.get("n", 0)), *[fmt(m, o.get(m)) for m in cols]])
    lines += _table(["category", "n", *[label(m, k) for m in cols]], rows)

    lines += ["", "### Latency per category (ms)", ""]
    lat = [m for m in METRICS if m.startswith(("retrieve_ms", "ask_ms"))]
    rows = [
        [_cell(name, 40), *[fmt(m, s.get(m)) for m in lat]] for name, s in run.categories.items()
    ]
    rows.append(["**all**", *[fmt(m, o.get(m)) for m in lat]])
    lines += _table(["category", *[label(m).replace(" ms", "") for m in lat]], rows)

    matrix = refusal_matrix(run.records)
    lines += ["", "## Refusals", ""]
    lines += _table(
        ["", "answered", "refused"],
        [[row, str(v["answered"]), str(v["refused"])] for row, v in matrix.items()],
    )
    if run.calibration and run.calibration.rows:
        lines += ["", "### Gate thresholds on these questions", "", *render_calibration(run)]
    if run.ragas:
        lines += ["", *render_ragas(run.ragas)]
    if images:
        lines += ["", "## Plots", ""]
        lines += [f"![{name}]({rel})" for name, rel in images.items()]

    failures = [r for r in run.records if r.passed is False]
    lines += ["", f"## Failed cases ({len(failures)})", ""]
    if failures:
        rows = [
            [
                r.id,
                _cell(r.category, 30),
                failure_reason(r),
                _cell(r.question, 60),
                _cell(r.answer, 60),
                "–" if r.rank is None else str(r.rank),
            ]
            for r in failures[:max_failures]
        ]
        lines += _table(["id", "category", "why", "question", "answer", "hit rank"], rows)
        if len(failures) > max_failures:
            lines.append(f"\n… and {len(failures) - max_failures} more (see the JSON).")
    else:
        lines.append("None.")
    lines += ["", "## Definitions", "", *DEFINITIONS.strip().splitlines(), ""]
    return "\n".join(lines)


def render_calibration(run: EvalRun) -> list[str]:
    """The run's gate-threshold table (rag_app/eval/calibration.py); an inexact row's threshold
    marked ``*``."""
    cal = run.calibration
    assert cal is not None
    rows = [
        [f"{r.threshold:.4g}{'' if r.exact else ' *'}", r.label,
         fmt("false_refusal_rate", r.false_refusal), fmt("no_answer_accuracy", r.unanswerable_refused)]
        for r in cal.rows
    ]  # fmt: skip
    return [
        f"{cal.answerable} answerable and {cal.unanswerable} unanswerable questions; the run "
        f"used the threshold {cal.run_threshold:g}. `*`: not exact (a question the run did not "
        "read may score lower there).",
        "",
        *_table(["threshold", "for", "false refusals", "unanswerable refused"], rows),
    ]


def render_ragas(scores: Mapping[str, Any]) -> list[str]:
    """The ragas section: one row per category and overall, one column per metric."""
    names = list(scores.get("metrics", []))
    kind = "offline and LLM-judged" if scores.get("llm") else "offline, no LLM"
    lines = [f"## ragas scores ({kind}; answerable questions)", ""]
    rows = [
        [_cell(cat, 40), *[_num(vals.get(n)) for n in names]]
        for cat, vals in scores.get("categories", {}).items()
    ]
    rows.append(["**all**", *[_num(scores.get("overall", {}).get(n)) for n in names]])
    lines += _table(["category", *names], rows)
    if scores.get("errors"):
        lines.append(f"\n{scores['errors']} metric calls failed (scored as missing).")
    return lines


def _num(value: Any) -> str:
    return "–" if value is None else f"{value:.3f}"


DEFINITIONS = """
- **case pass**: answerable: not refused and the answer holds the reference values (`any`: one,
  `all`: each, `answer_groups`: one of every group); for `reference` answers, the answer cites a
  gold document instead. Unanswerable: refused.
- **Recall@k / MRR@k**: answerable questions with gold spans or rows; a retrieved chunk hits when it
  contains a gold span, or one of its lines holds every cell of a gold row and it holds every
  column name (whitespace removed). Recall@k: first hit within the top k; MRR@k: mean of 1/rank.
- **doc Recall@k**: a gold document among the top-k retrieved chunks. **source hit**: a gold
  document among the answer's cited sources (`gold_docs` match the trailing path components).
  **evidence hit**: a cited source holds the gold span/row (the answer stage's recall, after
  reranking, the evidence gate and neighbour expansion; a refusal cites nothing).
- **keyword hit**: answerable questions with `any`/`all` references whose answer holds them.
- **no-answer acc.**: unanswerable questions refused. **false refusal**: answerable questions
  refused.
- **context chars**: characters in the top-k retrieved chunks, averaged over questions.
- **latency**: wall-clock per call of `retrieve` and `ask` (p50/p95: nearest rank).
"""


def write_report(
    run: EvalRun, path: str | Path, title: str = "Evaluation report", **kw: Any
) -> Path:
    """Write the Markdown report and its plots (next to it); returns the report path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    plots = write_plots(run, path.parent, path.stem)
    images = {name: p.name for name, p in plots.items()}
    if cjk_font() is None:  # said in the report too, next to the plots it spoils
        kw["extra"] = {**kw.get("extra", {}), "plots": NO_CJK_FONT}
    path.write_text(render_markdown(run, images, title=title, **kw), encoding="utf-8")
    return path


# ----- comparison ---------------------------------------------------------------------------------
def _summary_of(data: EvalRun | Mapping[str, Any]) -> Mapping[str, Any]:
    if isinstance(data, EvalRun):
        return data.summary
    return data.get("summary", data)


def load_summary(path: str | Path) -> dict[str, Any]:
    """The summary of a run saved as JSON (a full ``EvalRun`` or just its summary)."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, dict) or "overall" not in _summary_of(data):
        raise ValueError(
            f"{path}: not an evaluation JSON (no summary.overall); use `rag eval --json`"
        )
    return dict(_summary_of(data))


def _delta_block(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    out = {}
    for key in ["n", *METRICS]:
        va, vb = a.get(key), b.get(key)
        delta = None
        if isinstance(va, int | float) and isinstance(vb, int | float):
            delta = round(vb - va, 4)
        out[key] = {"a": va, "b": vb, "delta": delta}
    return out


def compare(a: EvalRun | Mapping[str, Any], b: EvalRun | Mapping[str, Any]) -> dict[str, Any]:
    """Per-metric deltas ``b - a``, overall and for every category of either run."""
    sa, sb = _summary_of(a), _summary_of(b)
    ca, cb = sa.get("categories", {}), sb.get("categories", {})
    names = list(ca) + [n for n in cb if n not in ca]
    return {
        "overall": _delta_block(sa.get("overall", {}), sb.get("overall", {})),
        "categories": {n: _delta_block(ca.get(n, {}), cb.get(n, {})) for n in names},
    }


def improved(key: str, delta: float | None) -> bool | None:
    if not delta:
        return None
    return (delta < 0) if key in LOWER_IS_BETTER else (delta > 0)


def render_compare_markdown(deltas: Mapping[str, Any], a_name: str = "a", b_name: str = "b") -> str:
    blocks = {"all": deltas["overall"], **deltas["categories"]}
    keys = [m for m in METRICS if m in deltas["overall"]]
    lines = [f"Deltas {b_name} − {a_name}", ""]
    rows = []
    for name, block in blocks.items():
        rows.append([_cell(name, 40), *[fmt_delta(m, block[m]["delta"]) for m in keys]])
    lines += _table(["category", *[label(m) for m in keys]], rows)
    return "\n".join(lines)
