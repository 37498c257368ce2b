"""Retrieval: Chinese keyword tokenization, hybrid (dense + BM25) retrieval, fusion, scopes."""
