"""OCR of page images (scanned PDFs) with RapidOCR: PP-OCR models that ship inside the
``rapidocr-onnxruntime`` wheel and run on onnxruntime's CPU provider (no download at run time).

The engine is loaded once per process, on first use (about a second), and calls are serialized:
one OCR at a time keeps the memory flat and the two-core machines responsive.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["OcrUnavailable", "ocr_available", "ocr_image"]

log = logging.getLogger(__name__)

#: Recognized lines below this confidence are dropped (noise, stamps, specks).
MIN_SCORE = 0.5

_lock = threading.Lock()
_engine: Any = None


class OcrUnavailable(RuntimeError):
    """The OCR engine can't be loaded (the message says why)."""


def _load() -> Any:
    global _engine
    if _engine is None:
        try:
            from rapidocr_onnxruntime import RapidOCR
        except Exception as exc:  # ImportError, or a missing system library under cv2
            raise OcrUnavailable(f"rapidocr-onnxruntime not importable: {exc}") from exc
        try:
            _engine = RapidOCR()
        except Exception as exc:  # noqa: BLE001 - model files missing or unreadable
            raise OcrUnavailable(f"OCR models not loadable: {exc}") from exc
    return _engine


def ocr_available() -> bool:
    """Whether the engine loads (loading it if it was not yet)."""
    try:
        with _lock:
            _load()
    except OcrUnavailable as exc:
        log.warning("%s", exc)
        return False
    return True


def ocr_image(image: Any) -> str:
    """The text of a PIL image: one line per visual row of text, rows top to bottom.

    Raises :class:`OcrUnavailable` when the engine can't be loaded.
    """
    import numpy as np

    pixels = np.asarray(image.convert("RGB"))
    with _lock:
        engine = _load()
        result, _elapsed = engine(pixels)
    boxes = [
        _Box.of(points, str(text).strip())
        for points, text, score in (result or [])
        if float(score) >= MIN_SCORE and str(text).strip()
    ]
    return "\n".join(_join_row(row) for row in _rows(boxes))


@dataclass(frozen=True, slots=True)
class _Box:
    top: float
    bottom: float
    left: float
    right: float
    text: str

    @classmethod
    def of(cls, points: Sequence[Sequence[float]], text: str) -> _Box:
        xs = [float(p[0]) for p in points]
        ys = [float(p[1]) for p in points]
        return cls(min(ys), max(ys), min(xs), max(xs), text)


def _rows(boxes: list[_Box]) -> list[list[_Box]]:
    """Boxes grouped into visual rows (a box whose vertical centre lies within a row joins it),
    rows top to bottom, boxes in a row left to right."""
    rows: list[list[_Box]] = []
    for box in sorted(boxes, key=lambda b: (b.top, b.left)):
        centre = (box.top + box.bottom) / 2
        row = next((r for r in rows if r[0].top <= centre <= r[0].bottom), None)
        if row is None:
            rows.append([box])
        else:
            row.append(box)
    return [sorted(row, key=lambda b: b.left) for row in rows]


def _join_row(row: list[_Box]) -> str:
    """One row's texts, a space between boxes further apart than half the line height (OCR
    splits a line at wide gaps, e.g. after ``第一条`` set with a full-width space)."""
    text = row[0].text
    for before, box in zip(row, row[1:], strict=False):
        gap = box.left - before.right
        text += (" " if gap > (box.bottom - box.top) / 2 else "") + box.text
    return text
