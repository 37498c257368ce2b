"""Any broken multipart body is a 400 (issue 65): a body cut inside a part's headers got 422
("no file") as if it were a whole body without the field."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from rag_app.service.upload_body import read_upload
from rag_app.service.uploads import UploadRejected

BOUNDARY = "b0und4ry"
CTYPE = f"multipart/form-data; boundary={BOUNDARY}"
WHOLE = (
    f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="a.md"\r\n'
    "Content-Type: text/markdown\r\n\r\n# 标题\r\n"
    f"--{BOUNDARY}--\r\n"
).encode()


def _read(body: bytes) -> tuple[str | None, bytes]:
    async def one() -> AsyncIterator[bytes]:
        yield body

    return asyncio.run(read_upload(CTYPE, one(), 1000))


@pytest.mark.parametrize(
    "cut",
    [
        len(f"--{BOUNDARY}\r\n"),  # after the first boundary line
        WHOLE.index(b"form-data") + 4,  # inside the Content-Disposition header
        WHOLE.index(b"Content-Type"),  # between two headers
        WHOLE.index(b"\r\n\r\n") + 2,  # before the blank line ending the headers
        WHOLE.index("标题".encode()),  # in the file's bytes
    ],
)
def test_a_body_cut_anywhere_is_400(cut: int) -> None:
    with pytest.raises(UploadRejected) as caught:
        _read(WHOLE[:cut])
    assert caught.value.status_code == 400 and "truncated" in caught.value.detail


def test_a_whole_body_reads_and_one_without_the_field_is_422() -> None:
    assert _read(WHOLE) == ("a.md", "# 标题".encode())
    other = WHOLE.replace(b'name="file"', b'name="other"')
    with pytest.raises(UploadRejected) as caught:
        _read(other)
    assert caught.value.status_code == 422
