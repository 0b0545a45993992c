"""Envelope, FLOPs-per-call fit and cross-model collapse on hand-made cells."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from basevolve.analysis.envelope import cells, collapse, envelope, flops_per_call_fit


def runs() -> pd.DataFrame:
    rows = []
    # C=4: T=1 -> {0.5, 0.7} (mean .6), T=2 -> {0.8, 0.8}, T=4 -> {0.7, 0.7}
    for t, vals in ((1, (0.5, 0.7)), (2, (0.8, 0.8)), (4, (0.7, 0.7))):
        for s, v in enumerate(vals):
            rows.append(("cp", "m", 4, t, 4 // t, s, v, 4 * 100.0 * (1 + t / 100)))
    return pd.DataFrame(
        rows, columns=["task", "model", "budget", "depth", "breadth", "seed", "fitness", "flops"]
    )


def test_envelope_by_hand() -> None:
    env = envelope(cells(runs()))
    row = env.iloc[0]
    assert (row["v_max"], row["t_star"], row["v_t1"]) == (pytest.approx(0.8), 2, pytest.approx(0.6))
    assert row["gap"] == pytest.approx(0.2)
    assert row["flops"] == pytest.approx(np.mean([404, 408, 416]))
    assert row["flops_vmax"] == pytest.approx(408.0)


def test_flops_per_call_fit_is_linear_in_t() -> None:
    # flops/C = 100 * (1 + T/100) = 100 + T: exactly linear in T (slope 1, intercept 100)
    fit = flops_per_call_fit(cells(runs())).iloc[0]
    assert fit["slope"] == pytest.approx(1.0) and fit["intercept"] == pytest.approx(100.0)
    assert fit["r2"] == pytest.approx(1.0) and fit["rel_slope"] == pytest.approx(0.01)
    # at T = 1, 2, 4 -> 101, 102, 104: not exactly linear in log2 T
    slope, _ = np.polyfit([0, 1, 2], [101, 102, 104], 1)
    assert fit["slope_log2t"] == pytest.approx(slope)
    assert 0.9 < fit["r2_log2t"] < 1.0


def test_collapse_r2_is_one_on_a_common_line_and_lower_when_models_split() -> None:
    f = np.array([1e14, 1e15, 1e16])
    env = pd.DataFrame(
        {
            "task": "cp",
            "model": np.repeat(["a", "b"], 3),
            "budget": [8, 16, 32] * 2,
            "flops": np.tile(f, 2),
            "v_max": np.tile(0.1 * np.log10(f) - 0.8, 2),
        }
    )
    assert collapse(env).iloc[0]["r2"] == pytest.approx(1.0)
    env.loc[env["model"] == "b", "v_max"] -= 0.3
    split = collapse(env).iloc[0]
    assert split["r2"] < 0.6 and split["n_points"] == 6
    assert collapse(env, models=["a"]).iloc[0]["r2"] == pytest.approx(1.0)
    assert math.isnan(collapse(env, max_v=0.0).iloc[0]["r2"])
