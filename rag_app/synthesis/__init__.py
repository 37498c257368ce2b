"""Answer synthesis with backend citations (extractive by default, LLM optional)."""
