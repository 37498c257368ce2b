"""Legacy Word (.doc) and PowerPoint (.ppt) files, converted by LibreOffice and read as .docx/.pptx.

LibreOffice runs headless, once per file, with a private profile in a temporary folder (so calls
never share or lock a user profile and run side by side), in a session of its own, under
:data:`CONVERT_TIMEOUT_S`:

* ``timeout -k 5`` (coreutils) bounds it on its own: at the limit LibreOffice's whole process
  group gets SIGTERM, then SIGKILL 5 s later, even if this process is gone;
* ``setpriv --pdeathsig SIGTERM`` (util-linux) ends it when the process that started it dies (a
  parse child killed for its own time limit leaves no office process behind);
* here, the wait gives up a few seconds after the limit and kills the process group.

The work folder goes with the call; one left by a killed process is removed by a later call
once it is an hour old.

Without ``soffice``/``libreoffice`` on PATH the file fails with a reason naming ``make
office-deps``. A .doc that is really a .docx (a ZIP package) is read directly; RTF saved as
.doc is converted like a Word 97 file.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from rag_app.readers.archive import DEFAULT_UNPACKED_MAX_MB, check_archive
from rag_app.readers.base import ParsedFile, ReaderError

__all__ = ["CONVERT_TIMEOUT_S", "OLE2_MAGIC", "convert", "find_soffice", "read_doc", "read_ppt"]

CONVERT_TIMEOUT_S = 120.0
OLE2_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
ZIP_MAGIC = b"PK\x03\x04"
RTF_MAGIC = b"{\\rtf"
_GRACE_S = 10.0
_PREFIX = "rag-office-"
_STALE_S = 3600.0
_SOFFICE_NAMES = ("soffice", "libreoffice")
_INSTALL_HINT = (
    "install it with `make office-deps` (Debian: apt-get install libreoffice-writer-nogui "
    "libreoffice-impress-nogui)"
)


def find_soffice() -> str | None:
    """LibreOffice's command on PATH, if any."""
    for name in _SOFFICE_NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


def _command(soffice: str, profile: Path, target: str, outdir: Path, source: Path) -> list[str]:
    command = [
        soffice,
        f"-env:UserInstallation={profile.as_uri()}",
        "--headless",
        "--invisible",
        "--norestore",
        "--nologo",
        "--nodefault",
        "--nolockcheck",
        "--convert-to",
        target,
        "--outdir",
        str(outdir),
        str(source),
    ]
    limit = shutil.which("timeout")
    if limit:
        command = [limit, "-k", "5", "-s", "TERM", f"{CONVERT_TIMEOUT_S:g}", *command]
    setpriv = shutil.which("setpriv")
    if setpriv:
        command = [setpriv, "--pdeathsig", "SIGTERM", *command]
    return command


def _sweep_stale(folder: Path) -> None:
    """Remove the work folders of conversions whose process was killed before it could (a parse
    child past its time limit): ours, in the same temporary directory, untouched for an hour."""
    now = time.time()
    for stale in folder.glob(f"{_PREFIX}*"):
        with contextlib.suppress(OSError):
            if stale.is_dir() and now - stale.stat().st_mtime > _STALE_S:
                shutil.rmtree(stale, ignore_errors=True)


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.communicate(timeout=_GRACE_S)


def convert(data: bytes, source_ext: str, target_ext: str) -> bytes:
    """``data`` (a ``source_ext`` file) converted by LibreOffice to ``target_ext`` (``"docx"``,
    ``"pptx"``); :class:`ReaderError` with the reason when it can't be."""
    kind = source_ext.lstrip(".")
    soffice = find_soffice()
    if soffice is None:
        raise ReaderError(
            f"legacy .{kind} needs LibreOffice, which is not installed: {_INSTALL_HINT}, "
            f"or save the file as .{target_ext}"
        )
    _sweep_stale(Path(tempfile.gettempdir()))
    with tempfile.TemporaryDirectory(prefix=_PREFIX) as folder:
        work = Path(folder)
        source = work / f"input.{kind}"
        source.write_bytes(data)
        outdir = work / "out"
        env = {**os.environ, "HOME": str(work), "SAL_USE_VCLPLUGIN": "svp"}
        command = _command(soffice, work / "profile", target_ext, outdir, source)
        try:
            process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                cwd=folder,
                env=env,
                start_new_session=True,
            )
        except OSError as exc:
            raise ReaderError(f"could not start LibreOffice ({exc.strerror or exc})") from exc
        try:
            output, _ = process.communicate(timeout=CONVERT_TIMEOUT_S + _GRACE_S)
        except subprocess.TimeoutExpired:
            _kill_group(process)
            raise ReaderError(
                f"LibreOffice took over {CONVERT_TIMEOUT_S:g} s converting the legacy .{kind} file"
            ) from None
        finally:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)  # anything it left running
        result = outdir / f"input.{target_ext}"
        if process.returncode in (124, 137, -signal.SIGTERM, -signal.SIGKILL):
            raise ReaderError(
                f"LibreOffice took over {CONVERT_TIMEOUT_S:g} s converting the legacy .{kind} file"
            )
        if not result.is_file() or result.stat().st_size == 0:
            said = _last_line(output)
            raise ReaderError(
                f"LibreOffice could not convert the legacy .{kind} file"
                + (f" ({said})" if said else f" (damaged, encrypted or not a .{kind} file?)")
            )
        return result.read_bytes()


def _last_line(output: bytes | None) -> str:
    lines = [
        line.strip()
        for line in (output or b"").decode("utf-8", "replace").splitlines()
        if line.strip() and "javaldx" not in line and not line.startswith("convert ")
    ]
    return lines[-1][:200] if lines else ""


def _check_magic(data: bytes, kind: str, allowed: tuple[bytes, ...]) -> None:
    if not data.startswith(allowed):
        raise ReaderError(f"not a legacy .{kind} file (no OLE2 header)")


def read_doc(data: bytes) -> ParsedFile:
    """A Word 97–2003 ``.doc`` (or RTF saved as .doc), read through LibreOffice as .docx."""
    from rag_app.readers.docx import read_docx

    if data.startswith(ZIP_MAGIC):  # a .docx with the old extension
        return _tagged(read_docx(data, doc_type="doc"), converted=False)
    _check_magic(data, "doc", (OLE2_MAGIC, RTF_MAGIC))
    converted = _bounded(convert(data, ".doc", "docx"))
    return _tagged(read_docx(converted, doc_type="doc"), converted=True)


def read_ppt(data: bytes) -> ParsedFile:
    """A PowerPoint 97–2003 ``.ppt``, read through LibreOffice as .pptx."""
    from rag_app.readers.slides import read_pptx

    if data.startswith(ZIP_MAGIC):
        parsed = read_pptx(data)
        parsed.doc_type = "ppt"
        return _tagged(parsed, converted=False)
    _check_magic(data, "ppt", (OLE2_MAGIC,))
    parsed = read_pptx(_bounded(convert(data, ".ppt", "pptx")))
    parsed.doc_type = "ppt"
    return _tagged(parsed, converted=True)


def _bounded(package: bytes) -> bytes:
    """The converted package, judged by its zip directory as an uploaded one is."""
    check_archive(package, max_unpacked_bytes=int(DEFAULT_UNPACKED_MAX_MB * 1024 * 1024))
    return package


def _tagged(parsed: ParsedFile, *, converted: bool) -> ParsedFile:
    if converted:
        parsed.metadata["converted_by"] = "libreoffice"
    return parsed
