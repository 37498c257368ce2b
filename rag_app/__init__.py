"""rag_app: a Chinese-first knowledge-base RAG engine on LlamaIndex and Chroma.

Public API::

    from rag_app import KnowledgeBase
    kb = KnowledgeBase.open(".rag")
    report = kb.ingest(["data/knowledge"], tenant="default")
    hits = kb.retrieve("密码多久修改一次？", top_k=5, tenant="default")

Names are imported lazily so that ``import rag_app.readers`` stays light.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rag_app.config import Settings
    from rag_app.kb import KnowledgeBase, KnowledgeBaseError
    from rag_app.types import (
        ChunkInfo,
        DocStatus,
        DocumentInfo,
        FileResult,
        IngestReport,
        Source,
    )

_EXPORTS = {
    "Settings": "rag_app.config",
    "KnowledgeBase": "rag_app.kb",
    "KnowledgeBaseError": "rag_app.kb",
    "ChunkInfo": "rag_app.types",
    "DocStatus": "rag_app.types",
    "DocumentInfo": "rag_app.types",
    "FileResult": "rag_app.types",
    "IngestReport": "rag_app.types",
    "Source": "rag_app.types",
}

__all__ = [
    "ChunkInfo",
    "DocStatus",
    "DocumentInfo",
    "FileResult",
    "IngestReport",
    "KnowledgeBase",
    "KnowledgeBaseError",
    "Settings",
    "Source",
]
__version__ = "0.3.0"


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'rag_app' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
