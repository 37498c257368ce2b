"""Fusion against an independent reference implementation, on real-looking inputs."""

from __future__ import annotations

import random

import pytest

from rag_app.retrieval.fusion import min_max, reciprocal_rank_fusion, weighted_score_fusion


def reference_rrf(
    rankings: dict[str, list[str]], k: int, weights: dict[str, float]
) -> dict[str, float]:
    """Textbook RRF written independently: loop over documents, not over branches."""
    docs = {d for ids in rankings.values() for d in ids}
    out = {}
    for d in docs:
        total = 0.0
        for branch, ids in rankings.items():
            if d in ids:
                total += weights.get(branch, 1.0) * (1.0 / (k + ids.index(d) + 1))
        out[d] = total
    return out


@pytest.mark.parametrize("seed", range(20))
def test_rrf_matches_reference_on_random_rankings(seed: int) -> None:
    rng = random.Random(seed)
    pool = [f"doc:{i}:{rng.randint(0, 9)}" for i in range(40)]
    rankings = {
        "dense": rng.sample(pool, rng.randint(0, 30)),
        "keyword": rng.sample(pool, rng.randint(0, 30)),
    }
    weights = {"dense": rng.choice([0.5, 1.0, 2.0]), "keyword": rng.choice([0.5, 1.0, 3.0])}
    k = rng.choice([0, 10, 60])
    fused = reciprocal_rank_fusion(rankings, k=k, weights=weights)
    ref = reference_rrf(rankings, k, weights)
    assert {d for d, _ in fused} == set(ref)
    for doc, score in fused:
        assert score == pytest.approx(ref[doc])
    scores = [s for _, s in fused]
    assert scores == sorted(scores, reverse=True)


def test_rrf_hand_computed() -> None:
    fused = dict(reciprocal_rank_fusion({"dense": ["a", "b"], "keyword": ["b", "c"]}, k=60))
    assert fused["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert fused["a"] == pytest.approx(1 / 61)
    assert fused["c"] == pytest.approx(1 / 62)
    assert list(
        dict(reciprocal_rank_fusion({"dense": ["a", "b"], "keyword": ["b", "c"]}, k=60))
    ) == [
        "b",
        "a",
        "c",
    ]


def test_rrf_counts_a_repeated_id_once_per_branch() -> None:
    fused = dict(reciprocal_rank_fusion({"dense": ["a", "a", "b"]}, k=0))
    assert fused == {"a": 1.0, "b": pytest.approx(1 / 3)}


def test_zero_weight_branch_contributes_nothing() -> None:
    fused = reciprocal_rank_fusion(
        {"dense": ["x"], "keyword": ["y"]}, k=60, weights={"dense": 0.0, "keyword": 1.0}
    )
    assert fused[0][0] == "y" and dict(fused)["x"] == 0.0


def test_weighted_fusion_normalises_each_branch() -> None:
    assert min_max({"a": 2.0, "b": 4.0}) == {"a": 0.0, "b": 1.0}
    assert min_max({"a": 3.0}) == {"a": 1.0}
    fused = dict(
        weighted_score_fusion(
            {"dense": {"a": 0.9, "b": 0.5}, "keyword": {"b": 30.0, "c": 10.0}},
            {"dense": 1.0, "keyword": 2.0},
        )
    )
    assert fused == {"a": 1.0, "b": pytest.approx(2.0), "c": 0.0}
