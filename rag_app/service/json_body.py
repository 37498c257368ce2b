"""JSON request bodies read after the key check, with a size cap (``RAG_JSON_MAX_KB``).

A route with a pydantic body parameter has FastAPI read the whole body before any dependency
runs: a 200 MB body without a key got its 401 only after all of it arrived. The query routes
instead take their body through :func:`json_body`, a dependency that depends on the key: the
key is checked first, a declared ``Content-Length`` over the cap is a 413 unread, and the
stream is read only up to the cap. Validation errors are FastAPI's own (422, ``loc`` starting
with ``body``), through the same handler.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine
from typing import Annotated, Any, TypeVar

from fastapi import Depends, HTTPException, Request, status
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, ValidationError

from rag_app.service.auth import KeyInfo
from rag_app.service.deps import ServiceState, get_key, get_state
from rag_app.service.upload_body import BodyStalled, paced

M = TypeVar("M", bound=BaseModel)


def _too_large(limit: int) -> HTTPException:
    return HTTPException(
        status.HTTP_413_CONTENT_TOO_LARGE,
        f"request body too large: more than {limit // 1024} KB (RAG_JSON_MAX_KB)",
    )


async def read_json(request: Request, model: type[M], limit: int, idle: float | None = None) -> M:
    """The body as ``model``: 415 unless JSON, 413 over ``limit`` bytes (declared or read),
    422 for invalid JSON or fields, 408 when the client pauses longer than ``idle`` seconds."""
    ctype = request.headers.get("content-type", "application/json").split(";")[0].strip()
    if ctype.lower() != "application/json":
        raise HTTPException(status.HTTP_415_UNSUPPORTED_MEDIA_TYPE, "send a JSON body")
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.isdigit():
            raise HTTPException(status.HTTP_400_BAD_REQUEST, "invalid Content-Length header")
        if int(declared) > limit:
            raise _too_large(limit)
    raw = bytearray()
    try:
        async for chunk in paced(request.stream(), idle):
            raw += chunk
            if len(raw) > limit:
                raise _too_large(limit)
    except BodyStalled as exc:
        raise HTTPException(status.HTTP_408_REQUEST_TIMEOUT, f"{exc} (RAG_BODY_TIMEOUT)") from None
    try:
        data = json.loads(bytes(raw))
    except (ValueError, RecursionError) as exc:
        pos = getattr(exc, "pos", 0)
        err = {"type": "json_invalid", "loc": ("body", pos), "msg": "JSON decode error",
               "input": {}, "ctx": {"error": str(exc)[:200]}}  # fmt: skip
        raise RequestValidationError([err]) from None
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        errors = [{**e, "loc": ("body", *e["loc"])} for e in exc.errors()]
        raise RequestValidationError(errors) from None


def json_body(model: type[M]) -> Callable[..., Coroutine[Any, Any, M]]:
    """A dependency giving the request's body as ``model``, read only after the key is checked."""

    async def dependency(
        request: Request,
        key: Annotated[KeyInfo, Depends(get_key)],
        state: Annotated[ServiceState, Depends(get_state)],
    ) -> M:
        return await read_json(
            request, model, state.settings.json_max_kb * 1024, state.settings.body_timeout
        )

    return dependency


def body_schema(model: type[BaseModel]) -> dict[str, Any]:
    """``openapi_extra`` documenting ``model`` as the route's JSON body (FastAPI sees no body
    parameter)."""
    return {
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": model.model_json_schema()}},
        }
    }
