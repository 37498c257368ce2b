"""What the ``rag`` commands share: the consoles, the common options, ``open_kb`` /
``open_ledger`` (open, yield, always close), JSON output and document-id prefixes.

Heavy modules (the knowledge base, the models) are imported when a command runs, not when the
command line is built, so ``rag --help`` stays fast.
"""

from __future__ import annotations

import inspect
import json
import logging
import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.logging import RichHandler

if TYPE_CHECKING:
    from rag_app.cli.remote import RemoteKB
    from rag_app.config import Settings
    from rag_app.kb import KnowledgeBase
    from rag_app.store.ledger import Ledger

# Set by `rag` for its process unless already set: no model hub at run time, no Chroma or ragas
# telemetry, no tokenizers fork warning.
PROCESS_ENV_DEFAULTS: dict[str, str] = {
    "HF_HUB_OFFLINE": "1",
    "ANONYMIZED_TELEMETRY": "False",
    "RAGAS_DO_NOT_TRACK": "true",
    "TOKENIZERS_PARALLELISM": "false",
}

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False)

KbOpt = Annotated[
    Path | None,
    typer.Option("--kb", help=r"Knowledge-base directory \[env RAG_KB_DIR; default ./.rag]."),
]
TenantOpt = Annotated[str, typer.Option("--tenant", "-t", help="Tenant (scope) of the documents.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON only.")]
ServerOpt = Annotated[
    str | None,
    typer.Option(
        "--server",
        help=r"Ask a running `rag serve` at this URL (e.g. http://127.0.0.1:8000) instead of "
        r"loading the knowledge base here: no start-up, the same output \[env RAG_SERVER]. "
        "Needs --api-key.",
    ),
]
ApiKeyOpt = Annotated[
    str | None,
    typer.Option("--api-key", help=r"The key for --server \[env RAG_API_KEY] (rag keys create)."),
]
CollectionOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--collection",
        "-c",
        help="Only the documents of this collection (repeat for several; see `rag collections`).",
    ),
]


def remote_kb(server: str | None, api_key: str | None) -> RemoteKB | None:
    """The running server to ask (``--server``, else RAG_SERVER), or None: the local KB.
    Exit 2 without a key (``--api-key``, else RAG_API_KEY)."""
    from rag_app.cli.remote import RemoteKB
    from rag_app.config import Settings

    settings = Settings()
    url = server or settings.server
    if not url:
        return None
    key = api_key or (settings.api_key.get_secret_value() if settings.api_key else None)
    if not key:
        err.print("[red]error:[/red] --server needs --api-key (or RAG_API_KEY): rag keys create")
        raise typer.Exit(2)
    return RemoteKB(url=url, key=key)


def check_collections(base: KnowledgeBase, tenant: str, names: list[str] | None) -> None:
    """Exit 2 with a clear message when a named collection does not exist in the tenant."""
    from rag_app.store.collections import CollectionNotFound

    try:
        base.collections.ids(tenant, names or [])
    except CollectionNotFound as exc:
        err.print(
            f"[red]error:[/red] {exc} in tenant {tenant!r} (see `rag collections list`)",
            soft_wrap=True,
        )
        raise typer.Exit(2) from exc


# a docstring line that stays on its own: a list item or an indented example
_OWN_LINE = re.compile(r"\s|[-*•] |\d+[.)] ")


def reflow_help(app: typer.Typer) -> None:
    """Give each command of ``app`` (and of its sub-apps) its docstring as Rich help should get
    it: Rich keeps a docstring's single line breaks, so paragraphs wrapped for the source showed
    as ragged half-empty lines in an 80-column terminal. The lines of a paragraph are joined
    (a list item or an indented line stays on its own), and square brackets are text, not
    markup."""
    from rich.markup import escape

    for info in app.registered_commands:
        doc = inspect.getdoc(info.callback) if info.help is None and info.callback else None
        if doc:
            paragraphs = []
            for paragraph in doc.split("\n\n"):
                lines: list[str] = []
                for line in paragraph.split("\n"):
                    if lines and not _OWN_LINE.match(line):
                        lines[-1] += " " + line.strip()
                    else:
                        lines.append(line)
                paragraphs.append("\n".join(lines))
            info.help = escape("\n\n".join(paragraphs))
    for group in app.registered_groups:
        if group.typer_instance is not None:
            reflow_help(group.typer_instance)


def set_process_env_defaults() -> None:
    """Set each variable of :data:`PROCESS_ENV_DEFAULTS` that the environment doesn't set. The
    ``rag`` callback calls it before a command runs (the libraries read them when imported)."""
    for name, value in PROCESS_ENV_DEFAULTS.items():
        os.environ.setdefault(name, value)


def setup_logging(verbose: bool = False) -> None:
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(message)s",
        handlers=[RichHandler(console=err, show_path=False)],
    )
    for noisy in ("chromadb", "httpx", "jieba", "sentence_transformers", "transformers"):
        logging.getLogger(noisy).setLevel(logging.ERROR)


@contextmanager
def open_kb(
    kb: Path | None, *, read_only: bool = False, settings: Settings | None = None
) -> Iterator[KnowledgeBase]:
    """The knowledge base, closed when the block ends; ``read_only`` commands take no writer
    lock (store/writer_lock.py). A KB that can't be opened is an error message and exit code 2."""
    from rag_app.embeddings import EmbeddingLoadError
    from rag_app.kb import KnowledgeBase, KnowledgeBaseError
    from rag_app.store.writer_lock import KnowledgeBaseBusy

    if read_only and (missing := missing_kb(kb, settings)) is not None:
        err.print(
            f"[red]error:[/red] no knowledge base at {missing} (no ledger.db there): check --kb "
            f"or RAG_KB_DIR, or create one with `rag ingest PATH --kb {missing}`",
            soft_wrap=True,
        )
        raise typer.Exit(2)
    try:
        base = KnowledgeBase.open(kb, settings, read_only=read_only)
    except (KnowledgeBaseError, KnowledgeBaseBusy, EmbeddingLoadError, ValueError) as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc
    try:
        yield base
    finally:
        base.close()


ONE_SHOT_QUESTIONS = 20  # numpy's slower reading of this many costs about PyTorch's import


def one_shot_settings(questions: int) -> Settings:
    """The settings of a command that answers ``questions`` questions and exits: with
    ``RAG_E5_ENGINE=auto`` (the default) and few questions, e5 runs in numpy, so the command
    never imports PyTorch (2-3 s of its start-up on 2 cores)."""
    from rag_app.config import Settings

    settings = Settings()
    if settings.e5_engine == "auto" and questions < ONE_SHOT_QUESTIONS:
        return settings.model_copy(update={"e5_engine": "numpy"})
    return settings


def resume_collection() -> None:
    """After a one-shot command's first answer: the objects of its start-up frozen (the garbage
    collector never walks them again) and collection back on (``rag_app.cli.run`` turns it off
    for ``rag ask`` / ``rag retrieve``). Nothing to do when it is on."""
    import gc

    if not gc.isenabled():
        gc.freeze()
        gc.enable()


def start_one_shot(questions: int) -> Settings:
    """:func:`one_shot_settings`, and for few questions jieba's dictionary as a compact table
    from the start-up cache (rag_app/text/jieba_tables.py: 0.6 s less; the same words, counts
    and tags). For ``rag ask`` / ``rag retrieve`` only: it sets up this process's jieba."""
    settings = one_shot_settings(questions)
    if questions < ONE_SHOT_QUESTIONS:
        from rag_app.text.tokenizer import use_compact_dictionary

        use_compact_dictionary(settings.cache_dir)
    return settings


def missing_kb(kb: Path | None, settings: Settings | None = None) -> Path | None:
    """The directory a read command was pointed at when it holds no knowledge base (a SQLite
    ledger that does not exist: a mistyped --kb); None when there is one, or the ledger is a
    database server's."""
    from rag_app.config import Settings

    settings = settings or Settings()
    if settings.database_url:
        return None
    where = kb if kb is not None else settings.kb_dir
    return None if (where / "ledger.db").exists() else where


def warn_if_empty(base: KnowledgeBase, tenant: str) -> None:
    """Say so (on stderr) when the tenant has no documents: every answer would be a refusal."""
    if base.documents.count(tenant) == 0:
        err.print(
            f"[yellow]warning:[/yellow] the knowledge base at {base.settings.kb_dir} holds no "
            f"documents for tenant {tenant!r}: add some with `rag ingest PATH --kb "
            f"{base.settings.kb_dir}`",
            soft_wrap=True,
        )


@contextmanager
def open_ledger(kb: Path | None) -> Iterator[Ledger]:
    """Only the KB's ledger (API keys need no vectors and no model), closed when the block ends."""
    from rag_app.store.ledger import Ledger

    ledger = Ledger(kb_settings(kb).ledger_url())
    try:
        yield ledger
    finally:
        ledger.close()


def kb_settings(kb: Path | None) -> Settings:
    from rag_app.config import Settings

    settings = Settings()
    if kb is not None:
        settings = Settings(**{**settings.model_dump(), "kb_dir": kb})
    settings.kb_dir.mkdir(parents=True, exist_ok=True)
    return settings


def emit_json(data: Any, *, line: bool = False) -> None:
    """``data`` as JSON on stdout: indented, or with ``line`` one line (JSON Lines), flushed."""
    indent = None if line else 2
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=indent, default=str) + "\n")
    if line:
        sys.stdout.flush()


def filename(kb: KnowledgeBase, doc_id: str) -> str | None:
    """A document's path in the KB (the API's ``filename``)."""
    doc = kb.documents.get(doc_id)
    return (doc.rel_path or Path(doc.source).name) if doc is not None else None


def resolve_doc(kb: KnowledgeBase, doc: str) -> str:
    """Accept a full doc id or a unique prefix of one (like git)."""
    if kb.documents.get(doc) is not None:
        return doc
    matches = [d.doc_id for d in kb.documents.list(tenant=None) if d.doc_id.startswith(doc)]
    if len(matches) == 1:
        return matches[0]
    reason = "no document" if not matches else f"{len(matches)} documents"
    err.print(f"[red]error:[/red] {reason} with id {doc!r} (see `rag docs`)")
    raise typer.Exit(1)
