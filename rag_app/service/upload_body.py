"""The upload's multipart body, read as a stream with hard caps (nothing spooled to disk).

Starlette's form parsing (what an ``UploadFile`` parameter does) reads the whole body into a
temporary file before the route, its key check or its size check run: a 1 GB body without a
valid key was written to disk before its 401. The upload route instead takes no body parameter
(so FastAPI resolves the key first), refuses a declared ``Content-Length`` over the limit
unread, and reads the body through :func:`read_upload`, which stops at the limit.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from python_multipart.exceptions import MultipartParseError
from python_multipart.multipart import MultipartParser, parse_options_header

from rag_app.service.uploads import UploadRejected

FIELD = "file"
FRAMING_SLACK = 64 * 1024  # multipart boundaries and part headers around the file's bytes
MAX_PARTS = 16


def too_large(limit: int) -> UploadRejected:
    return UploadRejected(
        413, f"file too large: more than {limit / 1048576:g} MB (RAG_UPLOAD_MAX_MB)"
    )


def check_declared_length(header: str | None, limit: int) -> None:
    """413 for a declared body larger than the limit allows, before a byte of it is read."""
    if header is None:
        return
    try:
        declared = int(header)
    except ValueError:
        raise UploadRejected(400, "invalid Content-Length header") from None
    if declared > limit + FRAMING_SLACK:
        raise too_large(limit)


@dataclass
class _Parts:
    """Collects the ``file`` part of a multipart body (other parts are skipped)."""

    limit: int
    charset: str = "utf-8"
    filename: str | None = None
    data: bytearray = field(default_factory=bytearray)
    found: bool = False
    files: int = 0
    ended: bool = False
    parts: int = 0
    _in_file: bool = False
    _header_name: bytes = b""
    _header_value: bytes = b""
    _disposition: bytes = b""

    def on_part_begin(self) -> None:
        self.parts += 1
        if self.parts > MAX_PARTS:
            raise UploadRejected(422, f"too many form fields (at most {MAX_PARTS})")
        self._disposition = b""
        self._in_file = False

    def on_header_field(self, data: bytes, start: int, end: int) -> None:
        self._header_name += data[start:end]

    def on_header_value(self, data: bytes, start: int, end: int) -> None:
        self._header_value += data[start:end]
        if len(self._header_value) > 8192:
            raise UploadRejected(422, "a form field's header is too long")

    def on_header_end(self) -> None:
        if self._header_name.lower() == b"content-disposition":
            self._disposition = self._header_value
        self._header_name = self._header_value = b""

    def on_headers_finished(self) -> None:
        _, options = parse_options_header(self._disposition)
        name = options.get(b"name", b"").decode(self.charset, "replace")
        if name == FIELD:
            self.files += 1
            if self.files > 1:
                raise UploadRejected(
                    400, "one file per upload: this body has more than one 'file' field; "
                    "send each file in its own request"
                )  # fmt: skip
            self.found = self._in_file = True
            raw = options.get(b"filename")
            self.filename = None if raw is None else raw.decode(self.charset, "replace")

    def on_part_data(self, data: bytes, start: int, end: int) -> None:
        if self._in_file:
            if len(self.data) + (end - start) > self.limit:
                raise too_large(self.limit)
            self.data += data[start:end]

    def on_part_end(self) -> None:
        self._in_file = False

    def on_end(self) -> None:
        self.ended = True  # the closing boundary was read


class BodyStalled(Exception):
    """The client stopped sending its body for longer than the service waits."""


async def paced(stream: AsyncIterator[bytes], idle: float | None) -> AsyncIterator[bytes]:
    """``stream``'s chunks, raising :class:`BodyStalled` when the next one takes longer than
    ``idle`` seconds (a client that opens a body and dribbles it holds a connection forever)."""
    iterator = stream.__aiter__()
    while True:
        try:
            chunk = await asyncio.wait_for(iterator.__anext__(), idle)
        except StopAsyncIteration:
            return
        except TimeoutError:
            raise BodyStalled(f"no data from the client for {idle:g} s") from None
        yield chunk


async def read_upload(
    content_type: str | None, stream: AsyncIterator[bytes], limit: int, idle: float | None = None
) -> tuple[str | None, bytes]:
    """The file name and bytes of the ``file`` field of a ``multipart/form-data`` body.

    Reads ``stream`` only while the body stays within ``limit`` bytes of file data plus
    ``FRAMING_SLACK`` (413 beyond: the rest is never read); 415 for another content type, 400
    for a malformed or truncated one, 422 for a whole body without the field, 408 when the
    client pauses longer than ``idle`` seconds.
    """
    ctype, params = parse_options_header(content_type or "")
    boundary = params.get(b"boundary")
    if ctype != b"multipart/form-data" or not boundary:
        raise UploadRejected(
            415, "send the file as multipart/form-data in the field 'file' (with a boundary)"
        )
    charset = params.get(b"charset", b"utf-8").decode("latin-1")
    parts = _Parts(limit=limit, charset=charset if charset.lower() == "utf-8" else "latin-1")
    parser = MultipartParser(
        boundary,
        {
            "on_part_begin": parts.on_part_begin,
            "on_header_field": parts.on_header_field,
            "on_header_value": parts.on_header_value,
            "on_header_end": parts.on_header_end,
            "on_headers_finished": parts.on_headers_finished,
            "on_part_data": parts.on_part_data,
            "on_part_end": parts.on_part_end,
            "on_end": parts.on_end,
        },
    )
    received = 0
    try:
        async for chunk in paced(stream, idle):
            received += len(chunk)
            if received > limit + FRAMING_SLACK:
                raise too_large(limit)
            parser.write(chunk)
        parser.finalize()
    except MultipartParseError as exc:
        raise UploadRejected(400, f"malformed multipart body: {exc}") from None
    except BodyStalled as exc:
        raise UploadRejected(408, f"{exc} (RAG_BODY_TIMEOUT): send the file again") from None
    if not parts.ended:  # cut anywhere, a part's headers included: broken, whatever it held
        raise UploadRejected(400, "truncated multipart body: its closing boundary is missing")
    if not parts.found:
        raise UploadRejected(422, "no file: send it in the multipart field 'file'")
    return parts.filename, bytes(parts.data)
