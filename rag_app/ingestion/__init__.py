"""Ingestion: files in, versioned chunks and vectors out.

* ``files.py``: input files (folders walked), document ids, safe failure reasons;
* ``isolation.py`` + ``parse_zygote.py``: parse and chunk a file in a bounded child process;
* ``pipeline.py``: the LlamaIndex ``IngestionPipeline`` (node parser -> embedding) and the
  chunk rows (keyword tokens, spans) of one document;
* ``prefetch.py``: the next file read, parsed and embedded in a helper thread;
* ``service.py``: ``IngestionService``, the orchestrator (stage, grouped vector writes, the
  ledger's versioned flip, clean-up), used by ``KnowledgeBase.ingest``.
"""
