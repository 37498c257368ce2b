"""Server-sent events for ``stream: true`` on /api/ask and /api/chat.

The events, in order:

* ``delta`` ``{"text": …}``: the answer's text as it is written: an LLM's reply as it streams
  (the caveat line first when the evidence may not hold what was asked); an extractive answer,
  or a refusal, line by line once it is composed;
* ``answer``: the whole response, as the non-streaming call returns it (its ``answer`` is the
  text that counts: invented citation markers removed, or the extractive fallback when the LLM
  failed), with its sources and citations;
* ``error`` ``{"status": …, "detail": …}`` instead of ``answer`` when answering failed;
* ``end`` ``{}``.

Errors found before answering (an empty question, an unknown collection or conversation) are
plain HTTP errors, not a stream.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
from collections.abc import Callable, Iterator
from typing import Any

from fastapi import HTTPException
from fastapi.responses import StreamingResponse
from pydantic import BaseModel

from rag_app.synthesis.citations import TextSink

logger = logging.getLogger(__name__)

# (event, payload); None ends the stream
_Item = tuple[str, Any] | None


def sse(event: str, data: Any) -> str:
    """One server-sent event: its name and its data as one line of JSON."""
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True) or [text]


class AnswerStream:
    """Runs ``produce`` (which answers, handing text to the sink it is given, and returns the
    response model) in a thread of its own and yields its events as they come."""

    def __init__(self, produce: Callable[[TextSink], BaseModel]) -> None:
        self.produce = produce
        self._items: queue.Queue[_Item] = queue.Queue()

    def _run(self) -> None:
        try:
            out = self.produce(lambda text: self._items.put(("delta", text)))
            self._items.put(("answer", out))
        except HTTPException as exc:
            self._items.put(("error", {"status": exc.status_code, "detail": exc.detail}))
        except Exception:
            logger.exception("a streamed answer failed")
            self._items.put(("error", {"status": 500, "detail": "internal error"}))
        finally:
            self._items.put(None)

    def events(self) -> Iterator[str]:
        threading.Thread(target=self._run, name="answer-stream", daemon=True).start()
        streamed = False
        while (item := self._items.get()) is not None:
            kind, payload = item
            if kind == "delta":
                streamed = True
                yield sse("delta", {"text": payload})
            elif kind == "answer":
                if not streamed:  # extractive, or a refusal: composed at once
                    for line in _lines(str(getattr(payload, "answer", ""))):
                        yield sse("delta", {"text": line})
                yield sse("answer", payload.model_dump(mode="json"))
            else:
                yield sse("error", payload)
        yield sse("end", {})

    def response(self) -> StreamingResponse:
        return StreamingResponse(
            self.events(),
            media_type="text/event-stream",
            # no proxy buffering: each event reaches the client as it is written
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )
