"""The ``rag`` command line: ingest, retrieve, ask, chat, docs, chunks, delete, doctor, migrate,
collections, keys, feedback, annotations, serve, worker, eval.

Every command takes ``--kb DIR`` (default ``$RAG_KB_DIR`` or ``./.rag``) and ``--json`` for
machine-readable output on stdout (progress and messages go to stderr). The commands live by
group in ``documents.py`` (fill, list, maintain), ``query.py`` (retrieve, ask), ``chat.py``
(chat), ``collections.py`` (collections), ``service.py`` (keys, serve, worker) and
``evaluate.py`` (eval); ``common.py`` holds what they share (``open_kb``). This module builds the
Typer app, in the order ``rag --help`` lists them.
"""

from __future__ import annotations

from typing import Annotated

import typer

from rag_app.cli.annotations import annotations_app
from rag_app.cli.chat import chat, feedback_app
from rag_app.cli.collections import collections_app
from rag_app.cli.common import reflow_help, set_process_env_defaults, setup_logging
from rag_app.cli.documents import chunks, delete, docs, doctor, ingest, migrate
from rag_app.cli.evaluate import eval_cmd
from rag_app.cli.query import ask, retrieve
from rag_app.cli.service import keys_app, serve, worker

app = typer.Typer(
    help="Chinese-first knowledge-base RAG engine: ingest documents, then retrieve with citations.\n\n"
    "Example: rag ingest data/knowledge && rag ask '密码多久修改一次？'",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def main(
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log progress details.")] = False,
) -> None:
    set_process_env_defaults()
    setup_logging(verbose)


for _command in (ingest, retrieve, ask, chat, docs, chunks, delete, doctor, migrate):
    app.command()(_command)
app.add_typer(collections_app, name="collections")
app.add_typer(keys_app, name="keys")
app.add_typer(feedback_app, name="feedback")
app.add_typer(annotations_app, name="annotations")
app.command()(serve)
app.command()(worker)
app.command("eval")(eval_cmd)
reflow_help(app)

# Read-only commands that answer and end: their process skips the interpreter's teardown
QUICK_EXIT = ("ask", "retrieve")


def invoked(argv: list[str]) -> str | None:
    """The command ``argv`` (``sys.argv[1:]``) names: its first word that is not an option."""
    return next((a for a in argv if not a.startswith("-")), None)


def run() -> None:
    """The ``rag`` command (its console script and ``python -m rag_app.cli``).

    After ``rag ask`` and ``rag retrieve`` (their knowledge base closed, their output written),
    the process ends at once (``os._exit``) instead of tearing the interpreter down: freeing
    jieba's and e5's vocabularies object by object takes ~0.8 s on 2 cores, a sixth of a cold
    ``rag ask``. Every other command, and any run inside another program, exits as usual.

    The same two commands start with the cyclic garbage collector off: their start-up (imports,
    models) allocates millions of objects, nearly none of them garbage, and the collector's
    ~490 passes over them took 0.3 s of a cold ``rag ask``. ``resume_collection`` turns it back
    on, with what exists by then frozen out of its reach, once the first answer is written.
    """
    import gc
    import logging
    import os
    import sys

    if invoked(sys.argv[1:]) in QUICK_EXIT:
        gc.disable()
    try:
        app()
        code: object = 0
    except SystemExit as exc:
        code = exc.code
    if invoked(sys.argv[1:]) not in QUICK_EXIT:
        raise SystemExit(code)
    if code is not None and not isinstance(code, int):
        print(code, file=sys.stderr)  # as SystemExit prints a message
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(code if isinstance(code, int) else (0 if code is None else 1))


__all__ = ["app", "main", "run"]
