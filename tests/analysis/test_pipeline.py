"""analyze() on a synthetic study: recovery of the truth and stable seeding."""

from __future__ import annotations

import json

import numpy as np
import pytest

from basevolve.analysis import AnalysisConfig, analyze, load_tables, to_jsonable
from basevolve.analysis.synthetic import synthetic_study

CFG = AnalysisConfig(resamples=100, shuffles=200, gate_shuffles=200, thresholds=(0.5, 0.8))


@pytest.fixture(scope="module")
def study():
    return synthetic_study(
        np.random.default_rng(8), budgets=(8, 16, 32, 64, 128), seeds=6, noise=0.05
    )


def test_recovers_truth_and_fills_every_table(study) -> None:
    tables = load_tables(
        input=study["runs"], trajectories=study["trajectories"], children=study["children"]
    )
    res = analyze(tables, CFG)
    bil = res["bilinear"].merge(study["truth"], on=["task", "model"], suffixes=("", "_true"))
    assert np.allclose(bil["c"], bil["c_true"], atol=0.04)
    assert np.allclose(bil["a"], bil["a_true"], atol=0.15)
    assert (bil["r2"] > 0.9).all()
    for key in (
        "summary",
        "envelope",
        "gate",
        "thresholds",
        "optimal_depth",
        "table1",
        "table6",
        "table7",
    ):
        assert len(res[key]) > 0, key
    # every envelope row's gap equals v_max - v_t1 and v_max is the best cell
    env = res["envelope"]
    assert np.allclose(env["gap"], env["v_max"] - env["v_t1"])
    assert (res["gate"]["pen_bon"] >= 0).all()
    json.dumps(to_jsonable(res), allow_nan=False)


def test_results_do_not_depend_on_other_groups(study) -> None:
    runs = study["runs"]
    full = analyze(load_tables(input=runs), CFG)
    one = analyze(load_tables(input=runs[runs["model"] == "qwen3-8b"]), CFG)
    a = full["gate"][full["gate"]["model"] == "qwen3-8b"].reset_index(drop=True)
    assert a.equals(one["gate"].reset_index(drop=True))


def test_thresholds_from_ragged_trajectories_by_hand() -> None:
    import pandas as pd

    runs = pd.DataFrame(
        {
            "run_id": [1, 2],
            "task": "t",
            "model": "m",
            "protocol": "greedy",
            "allocator": "single",
            "arms": 1,
            "budget": 4,
            "depth": 4,
            "breadth": 1,
            "seed": [0, 1],
            "fitness": [0.9, 0.9],
            "flops": [4.0, 8.0],
        }
    )
    # run 1 logs steps 1 and 3; run 2 logs steps 2 and 4 -> forward-filled on steps 1..4
    traj = pd.DataFrame(
        {
            "run_id": [1, 1, 2, 2],
            "step": [1, 3, 2, 4],
            "calls": [1, 3, 2, 4],
            "best_fitness": [0.9, 0.9, 0.9, 0.9],
            "cumulative_flops": [1.0, 3.0, 4.0, 8.0],
        }
    )
    res = analyze(
        load_tables(input=runs, trajectories=traj),
        AnalysisConfig(resamples=200, shuffles=10, gate_shuffles=10, thresholds=(0.5, 0.95)),
    )
    thr = res["thresholds"].set_index("tau")
    # step 1: run 2 has not started, so no bootstrap sample containing it reaches tau
    # (only "run 1 twice", 1/4 of samples); from step 2 both runs are at 0.9
    assert thr.loc[0.5, "step"] == 2 and thr.loc[0.5, "calls"] == pytest.approx(1.5)
    assert thr.loc[0.5, "flops"] == pytest.approx((1.0 + 4.0) / 2)
    assert not thr.loc[0.95, "reached"]


def test_table3_generation_next_to_call_index_by_hand() -> None:
    """Issue 9, 5c: greedy T=2 x N=2 runs reach 0.5 at call 3, which is generation 2;
    Table 3 shows "Gen." 2 next to "Call" 3 (the paper's column is the generation)."""
    import pandas as pd

    from basevolve.report.tables import thresholds_grid

    runs = pd.DataFrame(
        {
            "run_id": [1, 2],
            "task": "t",
            "model": "m",
            "protocol": "greedy",
            "allocator": "single",
            "arms": 1,
            "budget": 4,
            "depth": 2,
            "breadth": 2,
            "seed": [0, 1],
            "fitness": [0.6, 0.6],
            "flops": [4.0, 4.0],
        }
    )
    traj = pd.DataFrame(
        {
            "run_id": [1] * 4 + [2] * 4,
            "step": [1, 2, 3, 4] * 2,
            "calls": [1, 2, 3, 4] * 2,
            "generation": [1, 1, 2, 2] * 2,
            "best_fitness": [0.1, 0.2, 0.6, 0.6] * 2,
            "cumulative_flops": [1.0, 2.0, 3.0, 4.0] * 2,
        }
    )
    res = analyze(
        load_tables(input=runs, trajectories=traj),
        AnalysisConfig(resamples=50, shuffles=10, gate_shuffles=10, thresholds=(0.5, 0.9)),
    )
    thr = res["thresholds"].set_index("tau")
    assert (thr.loc[0.5, "step"], thr.loc[0.5, "generation"]) == (3, 2.0)
    assert thr.loc[0.5, "flops"] == 3.0 and pd.isna(thr.loc[0.9, "generation"])
    grid, bold = thresholds_grid(res["thresholds"])
    row = grid.loc["m / t / C=4 / τ=0.5"]
    assert (row["greedy T=2: Gen."], row["greedy T=2: Call"], row["greedy T=2: FLOPs"]) == (
        "2",
        "3",
        "3.0000",
    )
    assert grid.loc["m / t / C=4 / τ=0.9", "greedy T=2: Gen."] == "---"
    assert bold.loc["m / t / C=4 / τ=0.5"].all()  # the only method is the minimum
    # a log without a generation column: Gen. says so instead of passing the call off as one
    res2 = analyze(
        load_tables(input=runs, trajectories=traj.drop(columns="generation")),
        AnalysisConfig(resamples=50, shuffles=10, gate_shuffles=10, thresholds=(0.5,)),
    )
    grid2, _ = thresholds_grid(res2["thresholds"])
    assert grid2.iloc[0]["greedy T=2: Gen."] == "n/a"
    assert grid2.iloc[0]["greedy T=2: Call"] == "3"
