"""A near miss counts as answered elsewhere only when another unit holds the gold row's answer
cell with its column and the row's cells the question names
(training/answer_measure.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

CellElsewhere = Callable[[dict[str, Any], str, list[str], str], bool]


@pytest.fixture(scope="module")
def cell_elsewhere() -> CellElsewhere:
    from training.answer_measure import cell_elsewhere

    return cell_elsewhere


ROW = {"企业名称": "景津装备股份有限公司", "年份": "2022", "是否国有": "否", "风险等级": "低"}


def test_another_years_row_answers_a_question_that_names_no_year(
    cell_elsewhere: CellElsewhere,
) -> None:
    units = ["企业名称：景津装备股份有限公司，年份：2021，是否国有：否，风险等级：中"]
    assert cell_elsewhere(ROW, "否", units, "景津装备股份有限公司是不是属于国有企业？")


def test_the_stated_year_the_column_and_the_company_must_all_be_there(
    cell_elsewhere: CellElsewhere,
) -> None:
    other_year = ["企业名称：景津装备股份有限公司，年份：2021，是否国有：否"]
    assert not cell_elsewhere(ROW, "否", other_year, "2022年，景津装备股份有限公司是否国有？")
    other_company = ["企业名称：星河装备有限公司，年份：2022，是否国有：否"]
    assert not cell_elsewhere(ROW, "否", other_company, "景津装备股份有限公司是否国有？")
    other_column = ["企业名称：景津装备股份有限公司，年份：2022，信用债情况：否"]
    assert not cell_elsewhere(ROW, "否", other_column, "景津装备股份有限公司是否国有？")
