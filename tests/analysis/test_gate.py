"""Capability-gate permutation test: an enumerable case, edge cases and the null."""

from __future__ import annotations

import math

import numpy as np
import pytest

from basevolve.analysis.gate import capability_gate


def test_gate_exact_p_by_enumeration() -> None:
    # T=1 seeds score 0, 0; T=2 seeds score 1, 1: penBoN = 1.  A shuffle meets it only
    # when both zeros land on T=1: 2! * 2! / 4! = 1/6 of all orderings.
    f = np.array([0.0, 0.0, 1.0, 1.0])
    d = np.array([1, 1, 2, 2])
    exact = capability_gate(f, d, None, exact=True)
    assert (exact.v_t1, exact.v_max, exact.pen_bon, exact.t_star) == (0.0, 1.0, 1.0, 2)
    assert exact.p == pytest.approx(1 / 6)
    mc = capability_gate(f, d, np.random.default_rng(0), shuffles=20_000)
    assert mc.p == pytest.approx(1 / 6, abs=0.01)


def test_gate_three_depths_exact_matches_monte_carlo() -> None:
    f = np.array([0.1, 0.3, 0.5, 0.2, 0.9, 0.6, 0.4, 0.8])
    d = np.array([1, 1, 1, 2, 2, 4, 4, 4])
    exact = capability_gate(f, d, None, exact=True)
    mc = capability_gate(f, d, np.random.default_rng(1), shuffles=20_000)
    assert mc.pen_bon == pytest.approx(exact.pen_bon)
    assert mc.p == pytest.approx(exact.p, abs=0.01)


def test_best_of_n_on_top_gives_p_one() -> None:
    res = capability_gate(
        np.array([0.9, 0.8, 0.1, 0.2]),
        np.array([1, 1, 8, 8]),
        np.random.default_rng(0),
        shuffles=500,
    )
    assert res.pen_bon == 0.0 and res.p == 1.0 and res.t_star == 1


def test_no_t1_cell_gives_nan() -> None:
    res = capability_gate(
        np.array([0.5, 0.6]), np.array([2, 4]), np.random.default_rng(0), shuffles=10
    )
    assert math.isnan(res.pen_bon) and math.isnan(res.p) and res.v_max == 0.6


def test_shape_errors() -> None:
    with pytest.raises(ValueError):
        capability_gate(np.array([0.5, 0.6]), np.array([1]), np.random.default_rng(0))


def test_null_p_values_are_roughly_uniform() -> None:
    rng = np.random.default_rng(123)
    ps = []
    for _ in range(100):
        f = rng.normal(0.5, 0.1, size=40)  # 4 depths x 10 seeds, no depth effect
        d = np.repeat([1, 2, 4, 8], 10)
        ps.append(capability_gate(f, d, rng, shuffles=300).p)
    ps = np.array(ps)
    # penBoN = 0 whenever T=1 happens to be the best cell (prob. 1/4 here), which puts
    # an atom at p = 1; below it P(p <= alpha) ~ alpha (binomial band, 3 SD).
    for alpha in (0.1, 0.25, 0.5):
        assert (
            abs(np.mean(ps <= alpha) - alpha) <= 3 * np.sqrt(alpha * (1 - alpha) / ps.size) + 0.02
        )
    assert np.mean(ps == 1.0) == pytest.approx(0.25, abs=0.15)
