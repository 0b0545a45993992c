"""Time-to-threshold (Table 3) fixtures."""

from __future__ import annotations

import numpy as np
import pytest

from basevolve.analysis.thresholds import level_curve, reach_fraction, time_to_threshold


def test_identical_runs_hit_exactly() -> None:
    best = np.tile([0.1, 0.5, 0.9], (3, 1))
    flops = np.tile([1.0, 2.0, 3.0], (3, 1))
    hits = time_to_threshold(
        best,
        np.array([1, 2, 3]),
        [0.5, 0.95],
        np.random.default_rng(0),
        reps=50,
        calls=np.tile([4.0, 8.0, 12.0], (3, 1)),
        flops=flops,
    )
    assert (hits[0].step, hits[0].calls, hits[0].flops) == (2, 8.0, 2.0)
    assert hits[1].step is None and hits[1].flops is None  # "never"


def test_two_runs_by_hand() -> None:
    # run A reaches 1 at step 1; run B stays 0 until step 3.  Bootstrap samples of two
    # runs: AA (mean 1), AB/BA (0.5), BB (0) -> at step 1, 3/4 of samples reach 0.5.
    best = np.array([[1.0, 1.0, 1.0], [0.0, 0.0, 1.0]])
    frac = reach_fraction(best, np.random.default_rng(0), [0.5], reps=40_000)
    assert frac[0, 0] == pytest.approx(0.75, abs=0.01)
    assert frac[0, 2] == 1.0
    hits = time_to_threshold(
        best, np.array([10, 20, 30]), [0.5], np.random.default_rng(0), reps=2000
    )
    assert hits[0].step == 30  # 0.75 < 0.9 until both runs reach it


def test_nan_before_start_counts_as_unreached() -> None:
    best = np.array([[np.nan, 1.0], [np.nan, 1.0]])
    frac = reach_fraction(best, np.random.default_rng(0), [0.0], reps=20)
    assert frac[0].tolist() == [0.0, 1.0]


def test_shape_errors() -> None:
    with pytest.raises(ValueError):
        time_to_threshold(np.zeros((2, 3)), np.array([1, 2]), [0.5], np.random.default_rng(0))
    with pytest.raises(ValueError):
        reach_fraction(np.zeros(3), np.random.default_rng(0), [0.5])


def test_order_statistic_curve_agrees_with_counting() -> None:
    rng = np.random.default_rng(4)
    best = np.maximum.accumulate(rng.random((7, 30)), axis=1)
    best[2, :3] = np.nan  # a run that starts late
    curve = level_curve(best, np.random.default_rng(1), reps=3000, level=0.9)
    taus = [0.6, 0.8, 0.9, 0.95]
    frac = reach_fraction(best, np.random.default_rng(1), taus, reps=3000)
    for i, tau in enumerate(taus):
        assert np.array_equal(curve >= tau, frac[i] >= 0.9)  # same resamples -> identical
