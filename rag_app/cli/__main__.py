"""``python -m rag_app.cli``: the ``rag`` command."""

from rag_app.cli import run

run()
