"""LlamaIndex pipeline assemblies used by ``rag_app`` (ingestion, evaluation)."""
