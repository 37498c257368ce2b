"""The knowledge-base service: FastAPI app, API keys, durable ingestion workers."""
