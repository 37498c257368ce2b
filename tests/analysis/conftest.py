"""The question analyzer the analysis tests share: built once per test module, as before."""

from __future__ import annotations

import pytest

from rag_app.analysis import QuestionAnalyzer


@pytest.fixture(scope="module")
def analyzer() -> QuestionAnalyzer:
    return QuestionAnalyzer()
