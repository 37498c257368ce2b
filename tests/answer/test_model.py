"""The fitted answer model: loads, validates, scores and decides."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from rag_app.answer.features import FEATURES
from rag_app.answer.model import DEFAULT_MODEL, AnswerModel
from rag_app.answer.question_features import QUESTION_FEATURES


def test_the_bundled_model_loads_with_ordered_presets() -> None:
    model = AnswerModel.load()
    t = model.thresholds
    assert 0 < t["lenient"] <= t["balanced"] <= t["strict"] < 1
    assert model.threshold("off") == 0.0
    assert model.fitted_on.get("command")  # says how it was made
    with pytest.raises(ValueError, match="preset"):
        model.threshold("sloppy")


def test_unit_probabilities_follow_the_coefficients() -> None:
    model = AnswerModel.load()
    x = np.tile(np.asarray(model.unit.mean), (2, 1))
    x[1, FEATURES.index("cov_unit")] += 1.0
    p = model.unit_probabilities(x)
    assert p.shape == (2,) and np.all((p > 0) & (p < 1))
    sign = np.sign(model.unit.coef[model.unit.features.index("cov_unit")])
    assert np.sign(p[1] - p[0]) == sign
    assert model.unit_probabilities(np.zeros((0, len(FEATURES)))).shape == (0,)


def test_the_gate_reads_a_question_vector() -> None:
    model = AnswerModel.load()
    q = np.asarray(model.gate.mean)
    p = model.answerable(q)
    assert 0 < p < 1
    better = q.copy()
    better[QUESTION_FEATURES.index("p_best")] += 1.0
    sign = np.sign(model.gate.coef[model.gate.features.index("p_best")])
    assert np.sign(model.answerable(better) - p) == sign


def test_a_model_file_that_does_not_fit_the_code_is_refused(tmp_path: Path) -> None:
    data = json.loads(DEFAULT_MODEL.read_text(encoding="utf-8"))
    data["unit"]["features"] = [*data["unit"]["features"][:-1], "no_such_feature"]
    path = tmp_path / "model.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ValueError, match="no_such_feature"):
        AnswerModel.load(path)
    data = json.loads(DEFAULT_MODEL.read_text(encoding="utf-8"))
    data["gate"]["coef"] = data["gate"]["coef"][:3]
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ValueError, match="differ in length"):
        AnswerModel.load(path)
    data = json.loads(DEFAULT_MODEL.read_text(encoding="utf-8"))
    del data["thresholds"]["strict"]
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ValueError, match="presets"):
        AnswerModel.load(path)
