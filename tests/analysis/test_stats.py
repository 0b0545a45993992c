"""Hand-checkable fixtures for the point estimates and the stratified bootstrap."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from basevolve.analysis.stats import (
    aggregate_mean,
    aggregate_median,
    bootstrap_estimate,
    describe,
    iqm,
    stratified_bootstrap,
)


def test_iqm_by_hand() -> None:
    # 8 values: trim int(0.25 * 8) = 2 from each end -> mean of 3, 4, 5, 6 = 4.5
    assert iqm(np.array([100.0, 1, 2, 3, 4, 5, 6, -50])) == pytest.approx(3.5)
    # n = 4: trim 1 each end -> mean(2, 3) = 2.5
    assert iqm(np.array([1.0, 2, 3, 4])) == pytest.approx(2.5)


def test_iqm_matches_rliable_definition_trim_mean() -> None:
    rng = np.random.default_rng(3)
    for shape in [(10,), (7, 3), (13, 2), (5,)]:
        x = rng.normal(size=shape)
        assert iqm(x) == pytest.approx(sps.trim_mean(x, 0.25, axis=None), abs=1e-12)


def test_aggregate_mean_and_median_follow_rliable() -> None:
    x = np.array([[1.0, 10.0], [3.0, 20.0], [5.0, 60.0]])  # task means 3 and 30
    assert aggregate_mean(x) == pytest.approx(16.5)
    assert aggregate_median(x) == pytest.approx(16.5)
    assert aggregate_median(np.array([[1.0, 2.0, 9.0]])) == pytest.approx(2.0)


def test_bootstrap_of_two_point_sample_is_known() -> None:
    # resampling {0, 1} twice: means 0, .5, 1 with probabilities 1/4, 1/2, 1/4
    # -> SD of the bootstrap mean = sqrt(1/8) = 0.3536, 95% percentile CI = [0, 1]
    est = bootstrap_estimate(np.array([0.0, 1.0]), "mean", np.random.default_rng(0), reps=40_000)
    assert est.value == 0.5
    assert est.se == pytest.approx(np.sqrt(1 / 8), abs=0.005)
    assert (est.ci_low, est.ci_high) == (0.0, 1.0)


def test_constant_sample_has_zero_se() -> None:
    est = bootstrap_estimate(np.full(6, 0.7), "iqm", np.random.default_rng(1), reps=200)
    assert est.se == pytest.approx(0.0, abs=1e-15)
    assert est.ci_low == pytest.approx(0.7) and est.ci_high == pytest.approx(0.7)
    # exactly 0, not float noise (0.007841 repeated gave 1.7e-18 in a one-run table)
    row = describe(np.full(1, 0.007840993143994491), np.random.default_rng(0), reps=100)
    assert row["se"] == 0.0 and row["iqm_se"] == 0.0
    row = describe(np.full(7, 0.1), np.random.default_rng(0), reps=100)
    assert row["se"] == 0.0 and row["iqm_se"] == 0.0
    assert describe(np.array([0.1, 0.2]), np.random.default_rng(0), reps=100)["se"] > 0


def test_stratified_bootstrap_resamples_within_each_task() -> None:
    # task 0 is constant (0), task 1 is constant (1): any within-task resample keeps the
    # per-task means, so the aggregate mean is exactly 0.5 on every replicate.
    x = np.column_stack([np.zeros(5), np.ones(5)])
    boot = stratified_bootstrap(x, "mean", np.random.default_rng(2), reps=500)
    assert boot.shape == (500,)
    assert np.all(boot == 0.5)


def test_bootstrap_is_seeded() -> None:
    x = np.random.default_rng(5).random(10)
    a = stratified_bootstrap(x, "iqm", np.random.default_rng(9), reps=300)
    b = stratified_bootstrap(x, "iqm", np.random.default_rng(9), reps=300)
    assert np.array_equal(a, b)


def test_describe_row() -> None:
    row = describe(np.array([0.2, 0.4, 0.6, 0.8]), np.random.default_rng(0), reps=2000)
    assert row["mean"] == pytest.approx(0.5)
    assert row["median"] == pytest.approx(0.5)
    assert row["iqm"] == pytest.approx(0.5)
    assert row["n"] == 4
    # SE of the mean of 4 values: population SD / sqrt(n) = 0.2236 / 2 = 0.1118
    assert row["se"] == pytest.approx(0.1118, abs=0.006)
    assert row["ci_low"] < 0.5 < row["ci_high"]


@pytest.mark.parametrize("bad", [np.array([]), np.zeros((2, 2, 2)), np.array([1.0, np.nan])])
def test_bad_shapes_raise_value_error(bad: np.ndarray) -> None:
    with pytest.raises(ValueError):
        stratified_bootstrap(bad, "mean", np.random.default_rng(0), reps=10)
