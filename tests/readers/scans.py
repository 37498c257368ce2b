"""Scanned-PDF fixtures: text rendered into an image with a CJK font, the image put in a PDF."""

from __future__ import annotations

import glob
import io
import shutil
import subprocess

import pytest

_FONT_GLOBS = (
    "/usr/share/fonts/truetype/wqy/wqy-zenhei.ttc",
    "/usr/share/fonts/truetype/wqy/wqy-microhei.ttc",
    "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc",
    "/usr/share/fonts/**/*CJK*.tt[cf]",
    "/usr/share/fonts/**/*CJK*.otf",
)
NO_FONT = "no CJK font to render Chinese test scans (run `make ocr-deps` as root)"
NO_OCR = "OCR engine unavailable (rapidocr-onnxruntime or OpenCV's libGL missing: `make ocr-deps`)"


def cjk_font() -> str | None:
    for pattern in _FONT_GLOBS:
        found = sorted(glob.glob(pattern, recursive=True))
        if found:
            return found[0]
    if shutil.which("fc-list"):
        out = subprocess.run(
            ["fc-list", ":lang=zh", "file"], capture_output=True, text=True, check=False
        ).stdout
        files = sorted(line.split(":")[0].strip() for line in out.splitlines() if line.strip())
        if files:
            return files[0]
    return None


def require_cjk_font() -> str:
    """A CJK font file and a working OCR engine, or the test is skipped saying which is missing."""
    from rag_app.readers.ocr import ocr_available

    font = cjk_font()
    if font is None:
        pytest.skip(NO_FONT)
    if not ocr_available():
        pytest.skip(NO_OCR)
    return font


def render_lines(lines: list[str], font_path: str, size: int = 36) -> bytes:
    """PNG bytes of ``lines`` in black on white, one per row, like a 200-dpi scan."""
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.truetype(font_path, size)
    image = Image.new("L", (1400, 120 + 80 * len(lines)), 255)
    draw = ImageDraw.Draw(image)
    for row, line in enumerate(lines):
        draw.text((60, 60 + 80 * row), line, font=font, fill=0)
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def scanned_pdf(pages: list[list[str] | str], font_path: str, *, title: str = "") -> bytes:
    """A PDF: a ``str`` page is a text layer (Helvetica), a list of lines is an image-only page."""
    from reportlab.lib.utils import ImageReader
    from reportlab.pdfgen import canvas

    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer, pagesize=(595, 842))
    pdf.setTitle(title)
    for page in pages:
        if isinstance(page, str):
            pdf.setFont("Helvetica", 12)
            pdf.drawString(72, 770, page)
        else:
            png = ImageReader(io.BytesIO(render_lines(page, font_path)))
            width, height = png.getSize()
            scale = 500 / width
            pdf.drawImage(png, 48, 800 - height * scale, width * scale, height * scale)
        pdf.showPage()
    pdf.save()
    return buffer.getvalue()
