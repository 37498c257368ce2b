"""A font with Chinese glyphs for the evaluation plots (matplotlib), found or reported missing."""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
from pathlib import Path

__all__ = ["NO_CJK_FONT", "PlotFontWarning", "cjk_font"]

_CJK_FONTS = (
    "Noto Sans CJK SC",
    "Noto Sans SC",
    "Source Han Sans SC",
    "WenQuanYi Micro Hei",
    "WenQuanYi Zen Hei",
    "SimHei",
    "Microsoft YaHei",
    "PingFang SC",
    "Heiti SC",
    "AR PL UMing CN",
)


class PlotFontWarning(UserWarning):
    """No CJK font: the plots' Chinese labels are drawn as boxes."""


NO_CJK_FONT = (
    "no CJK font found: Chinese labels in the PNG plots are drawn as boxes "
    "(install one, e.g. `make ocr-deps` as root, or apt-get install fonts-wqy-zenhei)"
)
# font files that hold Chinese glyphs, by file name (when fontconfig can't be asked)
_CJK_FILE_RE = re.compile(r"(?i)(cjk|wqy|sourcehan|simhei|simsun|msyh|droidsansfallback|uming)")


def _cjk_font_files() -> list[str]:
    """Font files with Chinese glyphs: fontconfig's answer, else a file-name match."""
    if shutil.which("fc-list"):
        try:
            out = subprocess.run(
                ["fc-list", ":lang=zh", "file"], capture_output=True, text=True, timeout=10
            ).stdout
        except (OSError, subprocess.SubprocessError):
            out = ""
        files = sorted({line.split(":")[0].strip() for line in out.splitlines() if line.strip()})
        if files:
            return files
    from matplotlib import font_manager

    return sorted(f for f in font_manager.findSystemFonts() if _CJK_FILE_RE.search(Path(f).name))


@functools.cache
def cjk_font() -> str | None:
    """The family name of a font with Chinese glyphs that matplotlib can use, else ``None``.

    A known family in matplotlib's font cache first; else a CJK font file on the system (one
    installed after matplotlib built its cache) is added to the font manager.
    """
    from matplotlib import font_manager

    names = {f.name for f in font_manager.fontManager.ttflist}
    known = next((n for n in _CJK_FONTS if n in names), None)
    if known:
        return known
    for path in _cjk_font_files():
        try:
            font_manager.fontManager.addfont(path)
            return str(font_manager.FontProperties(fname=path).get_name())
        except Exception:  # noqa: BLE001 - an unreadable font file: try the next one
            continue
    return None
