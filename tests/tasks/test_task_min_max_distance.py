"""MinMaxDist scoring rules (paper, Appendix "Task Details": (dmin/dmax)^2 * 12.889266112)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from basevolve.tasks.base import STRICT_TOL
from basevolve.tasks.min_max_distance import extreme_pairs, score_points
from conftest import run_initial

GRID = np.array([[i, j] for i in range(4) for j in range(4)], dtype=float)


def test_unit_grid_hand_checked():
    # 4x4 unit grid: dmin = 1, dmax = 3*sqrt(2), ratio^2 = 1/18.
    r = score_points(GRID)
    assert r.valid and r.error is None
    assert r.score == pytest.approx(12.889266112 / 18, rel=1e-12)
    assert r.metrics["min_max_ratio"] == pytest.approx(1 / (3 * math.sqrt(2)), rel=1e-12)
    assert r.metrics["dmin"] == 1.0


def test_regular_16gon_hand_checked():
    # Regular 16-gon: dmin/dmax = sin(pi/16).
    t = 2 * np.pi * np.arange(16) / 16
    r = score_points(np.stack([np.cos(t), np.sin(t)], axis=1))
    assert r.score == pytest.approx(math.sin(math.pi / 16) ** 2 * 12.889266112, rel=1e-9)


def test_invariant_to_scale_rotation_translation_and_strict_mode_identical():
    a = 0.3
    rot = np.array([[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]])
    moved = 7.5 * GRID @ rot.T + [100.0, -3.0]
    assert score_points(moved).score == pytest.approx(score_points(GRID).score, rel=1e-12)
    assert score_points(GRID, tol=STRICT_TOL) == score_points(GRID)


def test_duplicate_points_score_zero_with_reason():
    pts = GRID.copy()
    pts[9] = pts[4]
    r = score_points(pts)
    assert r.score == 0.0 and not r.valid
    assert "points 4 and 9 coincide" in r.error
    assert r.metrics["min_max_ratio"] == 0.0


def test_all_points_identical_is_not_nan():
    r = score_points(np.zeros((16, 2)))
    assert r.score == 0.0 and not r.valid and "coincide" in r.error


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_values(bad):
    pts = GRID.copy()
    pts[5, 1] = bad
    r = score_points(pts)
    assert r.score == 0 and not r.valid and "non-finite" in r.error and "(5, 1)" in r.error


@pytest.mark.parametrize(
    ("value", "needle"),
    [
        (np.zeros((15, 2)), "shape (15, 2)"),
        (np.zeros((16, 3)), "shape (16, 3)"),
        (np.zeros(32), "shape (32,)"),
        (np.zeros((2, 16, 2)), "shape (2, 16, 2)"),
        (None, "is None"),
        ("16 points", "is a str"),
        ([[0.0, 1.0]] * 15 + [[0.0]], "rectangular"),
        ([["a", "b"]] * 16, "non-numeric"),
        (3.0, "shape ()"),
    ],
)
def test_malformed_values(value, needle):
    r = score_points(value)
    assert r.score == 0 and not r.valid and needle in r.error


def test_lists_and_ints_accepted():
    assert score_points(GRID.astype(int).tolist()) == score_points(GRID)


def test_extreme_pairs_of_grid():
    (a, b), (c, d) = extreme_pairs(GRID)
    assert np.linalg.norm(GRID[a] - GRID[b]) == 1.0
    assert {c, d} in ({0, 15}, {3, 12})


def test_initial_program_is_16_seeded_gaussian_points():
    value = run_initial("min_max_distance")
    again = run_initial("min_max_distance")
    np.testing.assert_array_equal(value, again)  # seeded
    np.testing.assert_array_equal(value, np.random.default_rng(42).normal(size=(16, 2)))
    r = score_points(value)
    assert r.valid and 0 < r.score < 0.1
