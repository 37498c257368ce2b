"""Hit rules and metric functions against hand-computed cases (Chinese text included)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rag_app.eval import metrics as M

CHUNK = "第十二条 连续5次输入错误密码的，\n账号将被自动锁定 30 分钟。"
TABLE = "| 投保年龄 | 男性 | 女性 |\n| --- | --- | --- |\n| 30 | 710 | 615 |\n| 31 | 742 | 640 |"
HEADER = ["投保年龄", "男性", "女性"]


class TestSpansAndRows:
    def test_spans_match_with_whitespace_removed_on_both_sides(self):
        assert M.span_hit(CHUNK, ["账号将被自动锁定30分钟"])
        assert M.span_hit(CHUNK, ["连续 5 次输入错误密码的，账号"])  # crosses the line break
        assert not M.span_hit(CHUNK, ["锁定60分钟"])
        assert not M.span_hit(CHUNK, [""])  # an empty span never hits

    def test_a_row_hits_only_on_one_line_and_with_the_header(self):
        row = {"投保年龄": "30", "男性": "710", "女性": "615"}
        assert M.row_hit(TABLE, [row], HEADER)
        # cells spread over two lines do not make a row
        assert not M.row_hit(TABLE, [{"投保年龄": "30", "男性": "742"}], HEADER)
        # the row without its header (a cut table piece) is a partial hit only
        body_only = "| 30 | 710 | 615 |"
        assert not M.row_hit(body_only, [row], HEADER)
        assert M.row_hit(body_only, [row], HEADER, require_header=False)

    def test_is_hit_prefers_rows_when_an_item_has_both(self):
        item = SimpleNamespace(
            gold_spans=["不存在的句子"],
            gold_rows=[{"投保年龄": "31", "男性": "742"}],
            gold_header=HEADER,
        )
        assert M.is_hit(TABLE, item)

    def test_first_hit_rank_is_one_based_and_zero_for_a_miss(self):
        item = SimpleNamespace(gold_spans=["锁定30分钟"], gold_rows=[], gold_header=[])
        assert M.first_hit_rank(["无关", "也无关", CHUNK], item) == 3
        assert M.first_hit_rank(["无关"], item) == 0


class TestRankMetrics:
    def test_recall_and_mrr_by_hand(self):
        ranks = [1, 3, 0, 6]  # k=5: hits at 1 and 3; 6 is beyond k
        assert M.recall_at_k(ranks, 5) == pytest.approx(2 / 4)
        assert M.mrr_at_k(ranks, 5) == pytest.approx((1 + 1 / 3) / 4)
        assert M.recall_at_k(ranks, 10) == pytest.approx(3 / 4)
        assert M.recall_at_k([], 5) == 0.0

    @given(st.lists(st.integers(min_value=0, max_value=12), max_size=30), st.integers(1, 10))
    def test_against_a_reference_implementation(self, ranks, k):
        hits = [r for r in ranks if r and r <= k]
        expected_recall = len(hits) / len(ranks) if ranks else 0.0
        expected_mrr = sum(1 / r for r in hits) / len(ranks) if ranks else 0.0
        assert M.recall_at_k(ranks, k) == pytest.approx(expected_recall)
        assert M.mrr_at_k(ranks, k) == pytest.approx(expected_mrr)

    def test_nearest_rank_percentile(self):
        values = [10.0, 20.0, 30.0, 40.0]
        assert M.percentile(values, 50) == 20.0
        assert M.percentile(values, 95) == 40.0
        assert M.percentile([7.0], 95) == 7.0
        assert M.percentile([], 50) == 0.0


class TestAnswers:
    ANSWER = "根据第十三条，密码长度不少于 12 位，且每 90 天必须修改一次[1]。"

    def test_any_needs_one_value_all_needs_each(self):
        assert M.keyword_hit(self.ANSWER, ["12位", "16位"], "any") is True
        assert M.keyword_hit(self.ANSWER, ["12位", "90天"], "all") is True
        assert M.keyword_hit(self.ANSWER, ["12位", "60天"], "all") is False
        assert M.keyword_hit(self.ANSWER, ["8位"], "any") is False

    def test_reference_answers_and_empty_references_are_not_judged(self):
        assert M.keyword_hit(self.ANSWER, ["一段很长的参考答案"], "reference") is None
        assert M.keyword_hit(self.ANSWER, [], "any") is None
        assert M.keyword_hit(self.ANSWER, [" "], "all") is None

    def test_answer_groups_are_an_and_of_ors(self):
        groups = [["12位", "十二位"], ["90天", "三个月"]]
        assert M.answer_groups_hit(self.ANSWER, groups) is True
        assert M.answer_groups_hit("密码不少于十二位，三个月一换", groups) is True
        assert M.answer_groups_hit("密码不少于十二位", groups) is False  # second group missing
        assert M.answer_groups_hit(self.ANSWER, [[], [""]]) is None

    def test_answer_hit_uses_groups_when_present_else_answers(self):
        grouped = SimpleNamespace(answer_groups=[["60天"]], answers=["12位"], answer_match="any")
        assert M.answer_hit(self.ANSWER, grouped) is False  # groups win over answers
        plain = SimpleNamespace(answer_groups=[], answers=["12位"], answer_match="any")
        assert M.answer_hit(self.ANSWER, plain) is True
        assert (
            M.answer_hit("The extension is ext. 8110.", SimpleNamespace(answers=["ext.8110"]))
            is True
        )


class TestDocuments:
    @pytest.mark.parametrize(
        ("source", "gold", "expected"),
        [
            ("/kb/docs/民法典/总则.md", "民法典/总则.md", True),
            ("/kb/docs/民法典/总则.md", "总则.md", True),
            ("/kb/docs/刑法/总则.md", "民法典/总则.md", False),
            ("/kb/docs/a总则.md", "总则.md", False),  # a suffix of the name is not the file
            ("C:\\kb\\docs\\faq.txt", "faq.txt", True),
            ("faq.txt", "docs/faq.txt", False),
            ("/kb/faq.txt", "", False),
        ],
    )
    def test_gold_docs_match_trailing_path_components(self, source, gold, expected):
        assert M.doc_matches(source, gold) is expected

    def test_matched_gold_doc_returns_the_gold_path(self):
        assert M.matched_gold_doc("/x/docs/b/c.md", ["a.md", "b/c.md"]) == "b/c.md"
        assert M.matched_gold_doc("/x/docs/d.md", ["a.md"]) is None


def test_rate_ignores_undefined_flags():
    assert M.rate([True, False, None, True]) == pytest.approx(2 / 3)
    assert M.rate([None, None]) is None
    assert M.mean([]) is None and M.mean([1.0, 2.0]) == 1.5
