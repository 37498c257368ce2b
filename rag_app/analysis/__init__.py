"""Question analysis, once per question: answer type, entities, asked head, constraints.

Shared by the reranker, the answer locator (which decides and answers) and the synthesizer, so
they read a question the same way. The vocabulary is data: ``lexicon.json`` (general Chinese).
"""

from rag_app.analysis.asked import AskedQuestion, QuestionAnalysis
from rag_app.analysis.lexicon import Lexicon
from rag_app.analysis.question import QuestionAnalyzer

__all__ = ["AskedQuestion", "Lexicon", "QuestionAnalysis", "QuestionAnalyzer"]
