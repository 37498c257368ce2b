"""What ``ingest`` is given: files and folders expanded into input files, the stable document id of
each, the short reason shown for an unexpected failure, and whether a failure was the platform's."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import httpx
from sqlalchemy.exc import OperationalError

from rag_app.types import FileResult

# failures of the platform, not of the file: the vector store (a Chroma server, or `rag serve`'s
# child) or the ledger's database unreachable, or gone mid-request
_PLATFORM_ERRORS: tuple[type[BaseException], ...] = (
    httpx.ConnectError,
    httpx.ConnectTimeout,
    httpx.RemoteProtocolError,
    httpx.ReadError,
    httpx.WriteError,
    ConnectionRefusedError,
    ConnectionResetError,
    OperationalError,
)


@dataclass(frozen=True)
class InputFile:
    path: Path
    rel_path: str
    explicit: bool  # named on the command line (not found by walking a folder)


def internal_error(exc: BaseException) -> str:
    """A short, secret-free description of an unexpected failure (details go to the log)."""
    return f"internal error ({type(exc).__name__}); see the server log"


def platform_error(exc: BaseException) -> bool:
    """Whether ``exc`` (or an exception it was raised from) is the platform's failure: a worker
    gives such a job back to the queue instead of failing its file."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, _PLATFORM_ERRORS):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


def make_doc_id(tenant: str, rel_path: str) -> str:
    """Stable id from the tenant and the path relative to the ingested root."""
    return hashlib.sha1(f"{tenant}\n{rel_path}".encode()).hexdigest()[:24]


def collect_files(paths: Iterable[str | Path]) -> tuple[list[InputFile], list[FileResult]]:
    """Expand files and folders (recursively, skipping hidden entries) into input files."""
    found: list[InputFile] = []
    problems: list[FileResult] = []
    for raw in paths:
        path = Path(raw).expanduser()
        if path.is_dir():
            for item in sorted(path.rglob("*")):
                rel = item.relative_to(path)
                if any(part.startswith(".") for part in rel.parts) or not item.is_file():
                    continue
                found.append(InputFile(item, rel.as_posix(), explicit=False))
        elif path.is_file():
            found.append(InputFile(path, path.name, explicit=True))
        else:
            problems.append(
                FileResult(path=str(raw), status="FAILED", reason=f"path does not exist: {raw}")
            )
    return found, problems
