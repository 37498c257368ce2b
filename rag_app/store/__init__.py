"""Storage: the SQLite/SQLAlchemy ledger (source of truth) and the Chroma vector index."""

from rag_app.store.ledger import Ledger
from rag_app.store.vectors import VectorStore

__all__ = ["Ledger", "VectorStore"]
