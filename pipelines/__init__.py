"""Runnable pipelines over ``rag_app``: ingestion (``python -m pipelines.ingest``) and evaluation
(``pipelines/evaluate.py``). They use the core; the core does not import them."""
