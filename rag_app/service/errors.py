"""422 answers that can always be encoded: the offending input is echoed sanitised and short.

FastAPI's own handler echoes each invalid value as it came, so a NaN (JSON can't carry it) or a
lone surrogate (UTF-8 can't) in a request turned its 422 into a 500, and 30,000 rejected ids
came back in full.
"""

from __future__ import annotations

import math
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

MAX_ECHO_CHARS = 200
MAX_ECHO_ITEMS = 10


def safe_text(text: str, limit: int = MAX_ECHO_CHARS) -> str:
    """``text`` encodable as UTF-8 (surrogates as ``\\udXXX`` escapes), cut to ``limit`` chars.

    >>> safe_text("住宿\\ud800标准")
    '住宿\\\\ud800标准'
    """
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text if len(text) <= limit else text[:limit] + "…"


def safe_echo(value: Any, depth: int = 0) -> Any:
    """A JSON-safe, bounded copy of an echoed input value."""
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, str):
        return safe_text(value)
    if isinstance(value, bytes):
        return safe_text(value.decode("utf-8", "replace"))
    if depth > 3:
        return "…"
    if isinstance(value, dict):
        items = list(value.items())
        out = {safe_text(str(k), 64): safe_echo(v, depth + 1) for k, v in items[:MAX_ECHO_ITEMS]}
        if len(items) > MAX_ECHO_ITEMS:
            out["…"] = f"{len(items) - MAX_ECHO_ITEMS} more keys"
        return out
    if isinstance(value, list | tuple | set):
        seq = list(value)
        shown = [safe_echo(v, depth + 1) for v in seq[:MAX_ECHO_ITEMS]]
        if len(seq) > MAX_ECHO_ITEMS:
            shown.append(f"… {len(seq) - MAX_ECHO_ITEMS} more items")
        return shown
    if value is None or isinstance(value, bool | int):
        return value
    return safe_text(str(value))


async def _validation_error(_: Request, exc: RequestValidationError) -> JSONResponse:
    errors = []
    for error in exc.errors():
        item = {k: v for k, v in error.items() if k not in ("input", "ctx", "url")}
        item["msg"] = safe_text(str(error.get("msg", "")), 500)
        item["loc"] = [safe_echo(part) for part in error.get("loc", ())]
        if "input" in error:
            item["input"] = safe_echo(error["input"])
        if error.get("ctx"):
            item["ctx"] = safe_echo(error["ctx"])
        errors.append(item)
    return JSONResponse(status_code=422, content={"detail": errors})


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(RequestValidationError, _validation_error)  # type: ignore[arg-type]
