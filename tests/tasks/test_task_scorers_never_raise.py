"""Scorers are pure functions of plain data that never raise or warn (issue 2, part 2)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from basevolve.tasks import load_task
from basevolve.tasks.base import STRICT_TOL

JUNK = [
    None,
    0,
    1.5,
    "x",
    b"x",
    [],
    {},
    {"points": [1, 2]},
    [[[]]],
    [None] * 16,
    np.array([]),
    np.zeros((0, 2)),
    np.zeros((26, 2), dtype=object),
    np.full((16, 2), 1e308),
    np.full((11, 2), -1e308),
    [np.zeros((26, 2)), np.full(26, 1e308), 0.0],
    (np.full((26, 2), 1e308), np.full(26, 1e308), 1e308),
    [[1, 2]] * 11,
    [[1e-320, 0]] * 16,
    np.arange(32).reshape(16, 2).astype(np.uint8),
    [[1, 2], "ab"],
    [[1.0, 2.0], [3.0]],
]
COORD_1E308 = np.random.default_rng(1).normal(size=(16, 2)) * 1e307


@pytest.mark.parametrize("name", ["circle_packing", "min_max_distance", "heilbronn_triangle"])
def test_junk_gives_a_result_with_finite_numbers(name):
    task = load_task(name)
    for value in [*JUNK, COORD_1E308]:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for tol in (1e-6, STRICT_TOL):
                r = task.score_value(value, tol=tol)
        assert math.isfinite(r.score) and r.score >= 0, (value, r)
        assert all(math.isfinite(v) for v in r.metrics.values()), (value, r)
        assert r.valid == (r.error is None), (value, r)  # a zero score always has a reason
