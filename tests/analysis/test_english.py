"""Questions written in English: answer type, asked phrase and terms (general phrasings)."""

from __future__ import annotations

import pytest

from rag_app.analysis import QuestionAnalyzer
from rag_app.analysis.english import is_english


@pytest.mark.parametrize(
    ("question", "answer_type"),
    [
        ("How long does the warranty last?", "duration"),
        ("How often are backups taken?", "duration"),
        ("When does the museum open?", "date"),
        ("What time is the last train?", "date"),
        ("In which year was the bridge built?", "date"),
        ("How much does a ticket cost?", "money"),
        ("How many students are in the class?", "number"),
        ("Who wrote this novel?", "person"),
        ("Where is the head office?", "place"),
        ("Why is the sky blue?", "reason"),
        ("How do I reset my password?", "method"),
        ("Can interns take annual leave?", "yes_no"),
        ("What are the main risks?", "list"),
        ("What is the capital of France?", "what"),
        ("Tell me about the company.", "other"),
    ],
)
def test_answer_type_from_the_question_word(
    analyzer: QuestionAnalyzer, question: str, answer_type: str
) -> None:
    assert analyzer(question).answer_type == answer_type


@pytest.mark.parametrize(
    ("question", "head"),
    [
        ("What is the dress code for visitors?", "dress code"),
        ("Which laptop do designers get?", "laptop"),
        ("How long is the probation period?", "probation period"),
        # after a measure, the asked thing follows the partitive
        ("How many days of annual leave do I get?", "annual leave"),
        # elsewhere "of" ends the asked phrase: the capital is asked, not France
        ("What is the capital of France?", "capital"),
        ("What time does the reception open?", "reception open"),
    ],
)
def test_the_asked_phrase_follows_the_question_word(
    analyzer: QuestionAnalyzer, question: str, head: str
) -> None:
    a = analyzer(question)
    assert a.head == head
    assert a.asked == head
    assert a.phrase == head.split()


def test_yes_no_how_and_why_questions_ask_no_one_thing(analyzer: QuestionAnalyzer) -> None:
    for question in ("Is the VPN required at home?", "How do I book a room?", "Why was it late?"):
        assert analyzer(question).head is None
        assert analyzer(question).phrase == []


def test_function_words_are_not_terms(analyzer: QuestionAnalyzer) -> None:
    a = analyzer("What is the dress code for new employees?")
    assert {"what", "is", "the", "for"}.isdisjoint(a.terms)
    assert {"dress", "code", "employees"} <= set(a.terms)


def test_a_yes_no_word_inside_the_question_is_not_its_cue(analyzer: QuestionAnalyzer) -> None:
    # "is" opens only yes/no questions; here the question word comes later
    a = analyzer("The meeting is at what time?")
    assert a.answer_type == "date"


def test_a_question_with_chinese_characters_is_read_as_chinese(
    analyzer: QuestionAnalyzer,
) -> None:
    assert not is_english("VPN 的密码多长时间换一次？")
    assert is_english("How long is the VPN password valid?")
    a = analyzer("VPN 的密码多长时间换一次？")
    assert a.answer_type == "duration"
    assert a.cue == "多长时间"  # the Chinese question word, not an English reading
