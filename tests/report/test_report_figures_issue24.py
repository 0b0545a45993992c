"""Report figures of issue 24, item 16, checked on what they draw.

* running-best curves are steps (a best holds until it rises) on integer call ticks;
* the envelope's best-of-N line stays visible where it coincides with V_max;
* new: BaSE vs greedy running best at equal C, and calls per arm of BaSE runs.

Hand-made tidy tables give exact expected values; a real store (test server, sandboxed
runs: greedy and BaSE at the same C) checks the ``arm`` column end to end.  The pictures
were also looked at (docs/example-report; the issue asks for it).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from basevolve.analysis import AnalysisConfig, analyze, load_tables
from basevolve.analysis.synthetic import synthetic_study
from basevolve.report import write_report
from basevolve.report.figures import FIGURES, close, envelope_figure, trajectories_figure
from basevolve.report.figures_base import base_vs_greedy_figure, pulls_figure

CFG = AnalysisConfig(resamples=50, shuffles=20, gate_shuffles=20, thresholds=(0.5,))
C = 6


def _tables(with_arm: bool = True):
    """Greedy T=C and T=1 and BaSE (ucb, K=2) at C=6, two seeds each, by hand."""
    runs, traj = [], []
    curves = {  # running best per step, per run
        "g-deep-0": [0.1, 0.1, 0.3, 0.3, 0.3, 0.5], "g-deep-1": [0.2, 0.2, 0.2, 0.4, 0.4, 0.4],
        "g-wide-0": [0.1, 0.2, 0.2, 0.2, 0.2, 0.2], "g-wide-1": [0.1, 0.1, 0.1, 0.1, 0.1, 0.3],
        "b-0": [0.2, 0.4, 0.4, 0.6, 0.6, 0.7], "b-1": [0.1, 0.3, 0.3, 0.3, 0.5, 0.5],
    }
    arms = {"b-0": [0, 1, 0, 0, 0, 0], "b-1": [1, 0, 1, 1, 0, 1]}
    for rid, best in curves.items():
        base = rid.startswith("b")
        runs.append({"run_id": rid, "task": "t", "model": "m", "protocol": "greedy",
                     "allocator": "ucb" if base else "single", "arms": 2 if base else 1,
                     "budget": C, "depth": 1 if "wide" in rid else C, "breadth": C if "wide"
                     in rid else 1, "seed": int(rid[-1]), "fitness": best[-1],
                     "flops": 1e12 * (2 if "wide" in rid else 1)})
        for step, value in enumerate(best, start=1):
            row = {"run_id": rid, "step": step, "calls": step, "best_fitness": value,
                   "cumulative_flops": 1e11 * step}
            if with_arm:
                row["arm"] = arms[rid][step - 1] if base else 0
            traj.append(row)
    return load_tables(input=pd.DataFrame(runs), trajectories=pd.DataFrame(traj))


def _integer_ticks(ax) -> bool:
    lo, hi = ax.get_xlim()
    ticks = [t for t in ax.get_xticks() if lo <= t <= hi]
    return len(ticks) >= 2 and all(float(t).is_integer() for t in ticks)


def test_base_vs_greedy_draws_mean_running_best_as_steps() -> None:
    tables = _tables()
    fig = base_vs_greedy_figure(analyze(tables, CFG), tables)
    try:
        (ax,) = fig.axes
        lines = {line.get_label(): line for line in ax.get_lines()}
        # T = C has the best greedy mean here (0.45 vs 0.25): no separate best-depth line
        assert set(lines) == {"base-ucb K=2 (n=2)", "greedy T=6 (n=2)"}
        base = lines["base-ucb K=2 (n=2)"]
        assert base.get_drawstyle() == "steps-post"
        assert list(base.get_xdata()) == list(range(1, C + 1))
        np.testing.assert_allclose(base.get_ydata(), [0.15, 0.35, 0.35, 0.45, 0.55, 0.6])
        np.testing.assert_allclose(lines["greedy T=6 (n=2)"].get_ydata(),
                                   [0.15, 0.15, 0.25, 0.35, 0.35, 0.45])
        assert _integer_ticks(ax) and "C=6" in ax.get_title()
    finally:
        close(fig)


def test_the_best_greedy_depth_is_shown_when_it_is_not_t_equals_c() -> None:
    tables = _tables()
    runs = tables.runs.copy()
    runs.loc[runs["run_id"].str.startswith("g-wide"), "fitness"] = 0.9  # T=1 now best
    better = type(tables)(runs=runs, trajectories=tables.trajectories,
                          children=tables.children)
    fig = base_vs_greedy_figure(analyze(better, CFG), better)
    try:
        labels = [line.get_label() for line in fig.axes[0].get_lines()]
        assert "greedy T=1 (best depth) (n=2)" in labels
    finally:
        close(fig)


def test_pulls_per_arm_ranks_arms_and_marks_uniform() -> None:
    tables = _tables()
    fig = pulls_figure(analyze(tables, CFG), tables)
    try:
        (ax,) = fig.axes
        heights = [p.get_height() for p in ax.patches]
        # b-0: arm 0 x5, arm 1 x1 -> (5, 1); b-1: arm 1 x4, arm 0 x2 -> (4, 2); mean (4.5, 1.5)
        assert heights == [4.5, 1.5]
        uniform = [line for line in ax.get_lines() if line.get_label().startswith("uniform")]
        assert uniform and uniform[0].get_ydata()[0] == pytest.approx(C / 2)
        assert _integer_ticks(ax)
    finally:
        close(fig)


def test_without_arms_or_base_runs_there_is_no_figure() -> None:
    tables = _tables(with_arm=False)
    result = analyze(tables, CFG)
    assert pulls_figure(result, tables) is None  # the trajectory table has no arm column
    greedy = tables.runs[tables.runs["allocator"] == "single"]
    only = load_tables(input=greedy, trajectories=tables.trajectories)
    assert base_vs_greedy_figure(analyze(only, CFG), only) is None


def test_running_best_of_greedy_is_steps_on_integer_ticks() -> None:
    st = synthetic_study(np.random.default_rng(2), tasks=("circle_packing",),
                         models=("qwen3-8b",), budgets=(8, 16), seeds=2)
    tables = load_tables(input=st["runs"], trajectories=st["trajectories"])
    fig = trajectories_figure(analyze(tables, CFG), tables)
    try:
        ax = fig.axes[0]
        assert all(line.get_drawstyle() == "steps-post" for line in ax.get_lines())
        assert _integer_ticks(ax)
    finally:
        close(fig)


def test_best_of_n_stays_visible_over_v_max() -> None:
    st = synthetic_study(np.random.default_rng(3), tasks=("circle_packing",),
                         models=("qwen3-8b",), budgets=(8, 16), seeds=2)
    tables = load_tables(input=st["runs"])
    fig = envelope_figure(analyze(tables, CFG), tables)
    try:
        lines = {line.get_label(): line for line in fig.axes[0].get_lines()}
        v_max, best_of_n = lines["qwen3-8b V_max"], lines["qwen3-8b best-of-N (T=1)"]
        assert best_of_n.get_zorder() > v_max.get_zorder()  # drawn on top
        assert v_max.get_linewidth() > 2 * best_of_n.get_linewidth()  # wide line below
        assert best_of_n.get_linestyle() == "--" and best_of_n.get_marker() == "x"
        assert v_max.get_marker() == "o"
    finally:
        close(fig)


def test_a_real_store_gives_arms_and_both_figures(tmp_path: Path) -> None:
    """Greedy T=C and BaSE (round robin, K=2) runs at C=4 through the real stack; the
    store's trajectory table carries each step's arm, and the report draws both figures."""
    from basevolve.config import RunConfig
    from basevolve.engine import start_run
    from basevolve.sandbox import SandboxConfig, SandboxPool
    from basevolve.store.export import raw_table
    from basevolve.testing import LLMTestServer
    from basevolve.testing.replies import seeded_packing_reply

    db = tmp_path / "s.sqlite"
    with SandboxPool(SandboxConfig(workers=1)) as pool, \
            LLMTestServer(seeded_packing_reply) as srv:
        for seed in (0, 1):
            for extra in ({"depth": 4}, {"allocator": "round_robin", "arms": 2}):
                cfg = RunConfig(task="circle_packing", model="test-model",
                                base_url=srv.base_url, params=1e9, budget=4, seed=seed,
                                max_in_flight=1, **extra)
                start_run(cfg, db, out_dir=tmp_path / cfg.run_id, pool=pool)
    tables = load_tables(store=db)
    calls = raw_table(db, "calls")
    for run_id, steps in tables.trajectories.groupby("run_id"):
        mine = calls[(calls["run_id"] == run_id) & (calls["counted"] == 1)]
        assert sorted(steps["arm"].astype(int)) == sorted(mine["trajectory"].astype(int))
    base = tables.runs[tables.runs["allocator"] == "round_robin"]["run_id"]
    assert set(tables.trajectories[tables.trajectories["run_id"].isin(base)]["arm"]) == {0, 1}
    write_report(analyze(tables, CFG), tables, tmp_path / "rep", pdf=False)
    for name in ("base_vs_greedy", "pulls_per_arm"):
        assert (tmp_path / "rep" / "figures" / f"{name}.png").stat().st_size > 5000
    assert {"base_vs_greedy", "pulls_per_arm"} <= {s.name for s in FIGURES}
