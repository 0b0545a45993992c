"""Circle packing scoring rules (paper, Appendix "Task Details"; tol 1e-6, strict 0)."""

from __future__ import annotations

import numpy as np
import pytest

from basevolve.tasks.base import REFERENCE_TOL, STRICT_TOL
from basevolve.tasks.circle_packing import BENCHMARK_SUM_RADII, score_packing
from conftest import run_initial


def both(value):
    return score_packing(value, tol=REFERENCE_TOL), score_packing(value, tol=STRICT_TOL)


def test_exactly_touching_grid_is_valid_in_both_modes_with_exact_fitness(packing):
    centers, radii = packing
    ref, strict = both((centers, radii, 2.0))
    assert ref.valid and strict.valid
    assert ref.error is None and strict.error is None
    assert ref.score == strict.score == pytest.approx(2.0 / 2.635, abs=0)
    assert ref.metrics["sum_radii"] == 2.0


def test_reported_sum_is_never_trusted(packing):
    centers, radii = packing
    result = score_packing((centers, radii, 99.0))
    assert result.metrics == {"sum_radii": 2.0, "reported_sum_radii": 99.0}
    assert result.score == 2.0 / BENCHMARK_SUM_RADII
    # A non-numeric "sum" is ignored, not trusted and not fatal.
    assert score_packing((centers, radii, "lots")).score == result.score
    assert "reported_sum_radii" not in score_packing((centers, radii, float("nan"))).metrics


@pytest.mark.parametrize(
    ("shift", "ref_valid", "strict_valid"),
    [(5e-7, True, False), (2e-6, False, False)],
)
def test_overlap_just_inside_and_outside_tolerance(packing, shift, ref_valid, strict_valid):
    centers, radii = packing
    centers = centers.copy()
    centers[1, 1] -= shift  # circle 1 (1/8, 3/8) moves towards circle 0 (1/8, 1/8): overlap = shift
    ref, strict = both((centers, radii, 0))
    assert (ref.valid, strict.valid) == (ref_valid, strict_valid)
    for r in (ref, strict):
        if not r.valid:
            assert r.score == 0.0 and "circles 0 and 1 overlap" in r.error
    if ref_valid:
        assert ref.score == 2.0 / 2.635


@pytest.mark.parametrize(
    ("shift", "ref_valid", "strict_valid"),
    [(5e-7, True, False), (2e-6, False, False)],
)
@pytest.mark.parametrize("axis", [0, 1])
def test_containment_just_inside_and_outside_tolerance(
    packing, shift, ref_valid, strict_valid, axis
):
    centers, radii = packing
    centers = centers.copy()
    centers[:, axis] -= shift  # the whole grid slides towards the wall at 0
    ref, strict = both((centers, radii, 2.0))
    assert (ref.valid, strict.valid) == (ref_valid, strict_valid)
    if not ref_valid:
        assert "sticks out of the unit square" in ref.error and ref.score == 0.0


def test_far_wall_violation(packing):
    centers, radii = packing
    centers = centers.copy()
    centers[:, 0] += 1e-3
    r = score_packing((centers, radii, 0))
    assert not r.valid and r.score == 0 and "sticks out" in r.error


def test_negative_radius_is_invalid_zero_radius_is_allowed(packing):
    centers, radii = packing
    bad = radii.copy()
    bad[20] = -1e-9
    r = score_packing((centers, bad, 0))
    assert not r.valid and "negative radius" in r.error and "circle 20" in r.error
    ok = score_packing((centers, radii, 0))  # ten zero radii in the fixture
    assert ok.valid


def test_zero_radius_circle_inside_another_circle_is_an_overlap(packing):
    centers, radii = packing
    centers = centers.copy()
    centers[16] = centers[0]  # a point circle at the centre of circle 0
    r = score_packing((centers, radii, 0))
    assert not r.valid and "overlap" in r.error


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("where", ["centers", "radii"])
def test_non_finite_values_score_zero(packing, bad, where):
    centers, radii = (a.copy() for a in packing)
    (centers[3] if where == "centers" else radii[3:4])[0] = bad
    r = score_packing((centers, radii, 0))
    assert not r.valid and r.score == 0 and "non-finite" in r.error and where in r.error


@pytest.mark.parametrize(
    ("value", "needle"),
    [
        (None, "must return (centers, radii, sum_radii)"),
        (np.zeros((26, 2)), "must return"),
        ((np.zeros((26, 2)), np.zeros(26)), "length 2"),
        ((np.zeros((25, 2)), np.zeros(26), 0), "shape (25, 2)"),
        ((np.zeros((26, 3)), np.zeros(26), 0), "shape (26, 3)"),
        ((np.zeros((26, 2)), np.zeros((26, 1)), 0), "shape (26, 1)"),
        ((np.zeros((26, 2)), np.zeros(27), 0), "shape (27,)"),
        ((np.zeros((26, 2)), [[0.1]] * 25 + [[0.1, 0.2]], 0), "rectangular"),
        ((np.zeros((26, 2)), ["0.1"] * 26, 0), "non-numeric"),
        ((np.zeros((26, 2)), [True] * 26, 0), "non-numeric"),
        ((np.zeros((26, 2)), [1j] * 26, 0), "non-numeric"),
        (({"a": 1}, np.zeros(26), 0), "non-numeric"),
        ("centers", "must return"),
    ],
)
def test_malformed_values_score_zero_with_reason(value, needle):
    r = score_packing(value)
    assert r.score == 0.0 and not r.valid
    assert needle in r.error


def test_lists_are_accepted_like_arrays(packing):
    centers, radii = packing
    as_arrays = score_packing((centers, radii, 2.0))
    as_lists = score_packing([centers.tolist(), radii.tolist(), 2.0])
    assert as_lists == as_arrays and as_lists.valid


def test_initial_program_scores_about_0_36():
    value = run_initial("circle_packing")
    r = score_packing(value)
    assert r.valid
    assert 0.35 < r.score < 0.38
    assert r.metrics["sum_radii"] == pytest.approx(r.metrics["reported_sum_radii"])
