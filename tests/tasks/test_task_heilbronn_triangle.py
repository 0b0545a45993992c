"""Heilbronn triangle scoring rules (paper, Appendix "Task Details")."""

from __future__ import annotations

import math
from itertools import combinations

import numpy as np
import pytest

from basevolve.tasks.base import REFERENCE_TOL, STRICT_TOL
from basevolve.tasks.heilbronn_triangle import BENCHMARK_MIN_AREA_NORMALIZED, score_points
from conftest import run_initial

H = math.sqrt(3) / 2


def inside_points(seed: int = 0) -> np.ndarray:
    """11 random points strictly inside the triangle (reflect the unit square's upper half)."""
    u = np.random.default_rng(seed).uniform(0.05, 0.9, size=(11, 2))
    flip = u.sum(axis=1) > 0.95
    u[flip] = 0.95 - u[flip]
    return u[:, :1] * np.array([1.0, 0.0]) + u[:, 1:] * np.array([0.5, H])


def brute_force_min_area(pts: np.ndarray) -> float:
    """Independent shoelace implementation over all 165 triples."""
    best = math.inf
    for (x1, y1), (x2, y2), (x3, y3) in combinations(pts.tolist(), 3):
        best = min(best, abs(x1 * (y2 - y3) + x2 * (y3 - y1) + x3 * (y1 - y2)) / 2)
    return best


def test_matches_brute_force_and_normalisation():
    pts = inside_points()
    r = score_points(pts)
    assert r.valid and r.error is None
    expected = brute_force_min_area(pts) / (math.sqrt(3) / 4)
    assert r.metrics["min_area_normalized"] == pytest.approx(expected, rel=1e-12)
    assert r.score == pytest.approx(expected / 0.036529889880030156, rel=1e-12)


def test_hand_checked_smallest_triangle():
    # Vertices of the container plus 8 interior points, three of which form a tiny
    # right triangle with legs 1e-2 and 1e-2: smallest area = 5e-5.
    pts = np.array(
        [
            [0, 0],
            [1, 0],
            [0.5, H],
            [0.40, 0.20],
            [0.41, 0.20],
            [0.40, 0.21],
            [0.62, 0.3],
            [0.5, 0.45],
            [0.3, 0.1],
            [0.72, 0.12],
            [0.55, 0.6],
        ]
    )
    r = score_points(pts)
    assert r.metrics["min_area"] == pytest.approx(5e-5, rel=1e-9)
    assert r.score == pytest.approx(
        5e-5 / (math.sqrt(3) / 4) / BENCHMARK_MIN_AREA_NORMALIZED, rel=1e-9
    )


def test_vertices_exactly_are_inside_in_both_modes():
    pts = inside_points()
    pts[:3] = [[0.0, 0.0], [1.0, 0.0], [0.5, math.sqrt(3) / 2]]
    assert score_points(pts, tol=REFERENCE_TOL).valid
    assert score_points(pts, tol=STRICT_TOL).valid


@pytest.mark.parametrize(
    ("point", "edge"),
    [
        ([0.5, -1.0], "bottom"),  # below y = 0
        ([0.25 - 1.0 / math.sqrt(3), 0.25 * math.sqrt(3)], "left"),  # offset along the normal
        ([0.75 + 1.0 / math.sqrt(3), 0.25 * math.sqrt(3)], "right"),
    ],
)
@pytest.mark.parametrize(("eps", "ref_valid"), [(5e-7, True), (2e-6, False)])
def test_point_just_outside_the_triangle(point, edge, eps, ref_valid):
    pts = inside_points()
    # Scale the unit offset so the point lies `eps` (Euclidean) outside the edge.
    base = {
        "bottom": [0.5, 0.0],
        "left": [0.25, 0.25 * math.sqrt(3)],
        "right": [0.75, 0.25 * math.sqrt(3)],
    }[edge]
    direction = (np.array(point) - base) / np.linalg.norm(np.array(point) - base)
    pts[4] = np.array(base) + eps * direction
    ref = score_points(pts, tol=REFERENCE_TOL)
    strict = score_points(pts, tol=STRICT_TOL)
    assert ref.valid is ref_valid
    assert not strict.valid and strict.score == 0.0
    assert "point 4" in strict.error and edge in strict.error
    if not ref_valid:
        assert ref.score == 0.0 and "outside the triangle" in ref.error


def test_collinear_triple_scores_zero_with_reason():
    pts = inside_points()
    pts[[2, 5, 7]] = [[0.2, 0.0], [0.5, 0.0], [0.8, 0.0]]  # on the bottom edge
    r = score_points(pts)
    assert r.score == 0.0 and not r.valid
    assert "points 2, 5 and 7 are collinear" in r.error
    assert r.metrics["min_area_normalized"] == 0.0


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite(bad):
    pts = inside_points()
    pts[0, 0] = bad
    r = score_points(pts)
    assert r.score == 0 and "non-finite" in r.error


@pytest.mark.parametrize(
    ("value", "needle"),
    [
        (np.zeros((10, 2)), "shape (10, 2)"),
        (np.zeros((11,)), "shape (11,)"),
        ([[0, 0]] * 10 + [[0]], "rectangular"),
    ],
)
def test_wrong_shapes(value, needle):
    r = score_points(value)
    assert r.score == 0 and not r.valid and needle in r.error


def test_lists_accepted():
    pts = inside_points()
    assert score_points(pts.tolist()) == score_points(pts)


def test_initial_program_all_zero_scores_zero():
    value = run_initial("heilbronn_triangle")
    np.testing.assert_array_equal(value, np.zeros((11, 2)))
    r = score_points(value)
    assert r.score == 0.0 and "collinear or coincide" in r.error
