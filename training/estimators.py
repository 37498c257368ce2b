"""Estimators of the answer model (:mod:`.answer_fit`), exported as the runtime's plain-numpy
models (:mod:`rag_app.answer.model`). They need the ``train`` extra (scipy, scikit-learn).

* :func:`listwise_logistic` -- the unit model: which unit of a question's evidence answers it;
* :func:`signed_logistic` -- the gate: whether the evidence answers the question at all
  (fitted twice, the second time with :func:`hard_negative_weights`);
* :func:`boosted` -- monotone boosted trees, the gate's alternative (``--gate-kind trees``).

Every coefficient can be held to a sign (+1: more of the feature never lowers the score, -1:
never raises it, 0: free), so a feature cannot stand in for another's domain quirks with the
wrong sign.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

import numpy as np

from rag_app.answer.model import LinearModel, Tree, TreeModel


def _bounds(signs: Mapping[str, int]) -> list[tuple[float | None, float | None]]:
    return [(0, None) if s > 0 else (None, 0) if s < 0 else (None, None) for s in signs.values()]


def _standardise(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    return mean, scale


def signed_logistic(
    q: np.ndarray,
    y: np.ndarray,
    w: np.ndarray,
    signs: Mapping[str, int],
    columns: Sequence[str],
    *,
    c: float = 1.0,
) -> LinearModel:
    """Weighted logistic regression over the features ``signs`` names (columns of ``q``), its
    coefficients held to their signs: L2-regularised (``c``), L-BFGS-B under bounds."""
    from scipy.optimize import minimize

    names = list(signs)
    x = q[:, [list(columns).index(n) for n in names]]
    mean, scale = _standardise(x)
    z = (x - mean) / scale

    def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
        logits = z @ theta[:-1] + theta[-1]
        p = 1 / (1 + np.exp(-np.clip(logits, -40, 40)))
        ll = -np.sum(w * (y * np.log(p + 1e-12) + (1 - y) * np.log(1 - p + 1e-12)))
        grad = np.append(z.T @ (w * (p - y)), np.sum(w * (p - y)))
        grad[:-1] += theta[:-1] / c
        return ll + 0.5 * np.sum(theta[:-1] ** 2) / c, grad

    res = minimize(
        loss, np.zeros(len(names) + 1), jac=True, method="L-BFGS-B",
        bounds=[*_bounds(signs), (None, None)],
    )  # fmt: skip
    return LinearModel(features=names, mean=mean.tolist(), scale=scale.tolist(),
                       coef=res.x[:-1].tolist(), intercept=float(res.x[-1]))  # fmt: skip


def hard_negative_weights(
    p: np.ndarray, y: np.ndarray, groups: Sequence[str], quantile: float, extra: float
) -> np.ndarray:
    """Per example a weight factor: 1 + ``extra`` for a negative (``y`` 0) that scores ``p`` at or
    above the ``quantile`` of its group's positive scores, 1 for every other example (and for
    every example of a group without positives). The gate's presets refuse a few percent of a
    domain's answerable questions, so what its ranking must get right is which negatives score
    above that tail; a second fit with these factors leans on what tells those apart."""
    out = np.ones(len(y))
    names = np.asarray(groups)
    for g in dict.fromkeys(groups):
        mine = names == g
        positive = p[mine & (y == 1)]
        if not len(positive):
            continue
        cut = np.quantile(positive, quantile)
        out[mine & (y == 0) & (p >= cut)] += extra
    return out


def listwise_logistic(
    questions: Sequence[tuple[np.ndarray, np.ndarray, str]],
    signs: Mapping[str, int],
    columns: Sequence[str],
    *,
    c: float = 1.0,
) -> LinearModel:
    """The unit model: a conditional logit that ranks each question's units against each other.

    ``questions``: per question its unit feature matrix (columns ``columns``), its 0/1 answer-unit
    labels and its data set. The loss is, per question, -log(the softmax mass of its answer
    units), each data set weighing the same in total; only questions with both answer units and
    others teach it. It learns which unit of *this* evidence answers, not how much a domain's
    units look like answers in general: a pointwise regression over the same features, fitted
    without the Wikipedia domain, put the gold span's sentence first 66.9 % of the time there,
    this 72.7 %. The scores are then made probabilities (Platt scaling; each question's answer
    units and other units weigh 1 each), so 0.5 still reads as "as likely the answer as not"."""
    from scipy.optimize import minimize

    usable = [(x, y.astype(bool), d) for x, y, d in questions if 0 < int(y.sum()) < len(y)]
    if not usable:
        raise ValueError("listwise_logistic: no question has both answer units and others")
    names = list(signs)
    cols = [list(columns).index(n) for n in names]
    mean, scale = _standardise(np.vstack([x[:, cols] for x, _, _ in usable]))
    zs = [(x[:, cols] - mean) / scale for x, _, _ in usable]
    ys = [y for _, y, _ in usable]
    per_set = Counter(d for _, _, d in usable)
    ws = np.array([1.0 / per_set[d] for _, _, d in usable])
    ws *= len(usable) / ws.sum()

    def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
        total, grad = 0.5 * float(theta @ theta) / c, theta / c
        for z, y, w in zip(zs, ys, ws, strict=True):
            s = z @ theta
            e = np.exp(s - s.max())
            p_all, p_pos = e / e.sum(), e[y] / e[y].sum()
            total -= w * (np.log(e[y].sum()) - np.log(e.sum()))
            grad = grad - w * (z[y].T @ p_pos - z.T @ p_all)
        return total, grad

    res = minimize(loss, np.zeros(len(names)), jac=True, method="L-BFGS-B", bounds=_bounds(signs))
    theta = res.x
    scores = np.concatenate([z @ theta for z in zs])
    labels = np.concatenate(ys).astype(float)
    weights = np.concatenate([np.where(y, 1.0 / y.sum(), 1.0 / (len(y) - y.sum())) for y in ys])
    from sklearn.linear_model import LogisticRegression

    platt = LogisticRegression(C=100.0).fit(scores[:, None], labels, sample_weight=weights)
    a, b = float(platt.coef_[0][0]), float(platt.intercept_[0])
    return LinearModel(features=names, mean=mean.tolist(), scale=scale.tolist(),
                       coef=(a * theta).tolist(), intercept=b)  # fmt: skip


def boosted(
    q: np.ndarray,
    y: np.ndarray,
    w: np.ndarray,
    signs: Mapping[str, int],
    columns: Sequence[str],
    params: Mapping[str, float],
) -> TreeModel:
    """Gradient-boosted trees over the features ``signs`` names, monotone in their signs,
    exported to arrays."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    names = list(signs)
    cols = [list(columns).index(n) for n in names]
    clf = HistGradientBoostingClassifier(
        random_state=0, monotonic_cst=[signs[n] for n in names], **params
    )
    clf.fit(q[:, cols], y, sample_weight=w)
    trees = []
    for (predictor,) in clf._predictors:
        n = predictor.nodes
        trees.append(
            Tree(
                feature=n["feature_idx"].tolist(), threshold=n["num_threshold"].tolist(),
                left=n["left"].tolist(), right=n["right"].tolist(), value=n["value"].tolist(),
                leaf=n["is_leaf"].astype(bool).tolist(),
                missing_left=n["missing_go_to_left"].astype(bool).tolist(),
            )
        )  # fmt: skip
    baseline = float(np.ravel(clf._baseline_prediction)[0])
    return TreeModel(features=names, baseline=baseline, trees=trees)


def refit_one(
    model: LinearModel,
    q: np.ndarray,
    y: np.ndarray,
    w: np.ndarray,
    columns: Sequence[str],
    feature: str,
    sign: int,
    *,
    c: float = 1.0,
) -> LinearModel:
    """``model`` with the coefficient of ``feature`` and the intercept refitted on ``q``, ``y``
    and ``w`` (weighted logistic, the coefficient held to ``sign``, L2 with ``c`` as in
    :func:`signed_logistic`), every other coefficient held where it was: a stacked step that
    lets more data teach one feature without moving what the rest of the model learned."""
    from scipy.optimize import minimize

    i = model.features.index(feature)
    x = q[:, [list(columns).index(n) for n in model.features]]
    z = (x - np.asarray(model.mean)) / np.asarray(model.scale)
    coef = np.asarray(model.coef, dtype=float)
    rest = z @ coef - z[:, i] * coef[i]

    def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
        logits = rest + z[:, i] * theta[0] + theta[1]
        p = 1 / (1 + np.exp(-np.clip(logits, -40, 40)))
        ll = -np.sum(w * (y * np.log(p + 1e-12) + (1 - y) * np.log(1 - p + 1e-12)))
        grad = np.array([z[:, i] @ (w * (p - y)) + theta[0] / c, np.sum(w * (p - y))])
        return ll + 0.5 * theta[0] ** 2 / c, grad

    bound = (0.0, None) if sign > 0 else (None, 0.0) if sign < 0 else (None, None)
    res = minimize(
        loss, np.array([coef[i], model.intercept]), jac=True, method="L-BFGS-B",
        bounds=[bound, (None, None)],
    )  # fmt: skip
    coef[i] = res.x[0]
    return model.model_copy(update={"coef": coef.tolist(), "intercept": float(res.x[1])})
