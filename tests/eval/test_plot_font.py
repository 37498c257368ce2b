"""The plots' CJK font: found (Chinese labels drawn as glyphs) or reported missing, visibly."""

from __future__ import annotations

import warnings

import pytest

from rag_app.eval import fonts, report
from rag_app.eval.fonts import NO_CJK_FONT, PlotFontWarning

from .records import sample_run


@pytest.fixture
def no_cjk_font(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(report, "cjk_font", lambda: None)


def test_without_a_cjk_font_the_report_and_a_warning_say_so(no_cjk_font, tmp_path):
    with pytest.warns(PlotFontWarning, match="no CJK font found"):
        path = report.write_report(sample_run(), tmp_path / "report.md")
    assert f"- **plots**: {NO_CJK_FONT}" in path.read_text(encoding="utf-8")


def test_with_a_cjk_font_chinese_labels_are_drawn_without_missing_glyphs(tmp_path):
    fonts.cjk_font.cache_clear()
    name = fonts.cjk_font()
    if name is None:
        pytest.skip("no CJK font installed (run `make ocr-deps` as root)")
    from matplotlib.font_manager import FontProperties, findfont

    assert "DejaVu" not in findfont(FontProperties(family=name))  # the family really resolves
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a PlotFontWarning or a missing-glyph warning fails
        path = report.write_report(sample_run(), tmp_path / "report.md")
    assert "no CJK font" not in path.read_text(encoding="utf-8")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure()
    FigureCanvasAgg(fig)
    fig.text(0.1, 0.5, "拒答率 资料不足", family=name)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fig.canvas.draw()
