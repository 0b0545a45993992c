"""``analyze`` of runs with several objectives (issue 36, item 5), checked by hand.

Real SQLite stores written through the store's public API
(:mod:`basevolve.testing.front_runs`): two seeds of one greedy configuration with vectors
whose fronts and hypervolumes are worked out below, two reference points (the group's
common one is their worst), a single-objective run beside them whose analysis must not
change, and hostile objective names that must stay text on the terminal.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from basevolve.analysis.pipeline import AnalysisConfig, analyze
from basevolve.analysis.stats import cell_stats
from basevolve.analysis.tables import load_tables
from basevolve.errors import ConfigError
from basevolve.testing.front_runs import Child, FrontRun, rename_objective, write_store

OBJS = {"acc": "max", "sec": "min"}
CFG = AnalysisConfig(resamples=50, shuffles=20, gate_shuffles=20, thresholds=(0.5,))
# seed 0, reference (0, 10): initial (0.2, 5); children (0.5, 2), (0.8, 3), invalid (1, 0)
# seed 1, reference (0.1, 8): initial (0.2, 5); children (0.4, 4), nothing, (0.6, 1)
RUN0 = FrontRun("mo-s0", {"acc": 0.2, "sec": 5.0},
                [Child({"acc": 0.5, "sec": 2.0}), Child({"acc": 0.8, "sec": 3.0}),
                 Child({"acc": 1.0, "sec": 0.0}, valid=False)],
                objectives=OBJS, reference_point=(0.0, 10.0), seed=0)
RUN1 = FrontRun("mo-s1", {"acc": 0.2, "sec": 5.0},
                [Child({"acc": 0.4, "sec": 4.0}), Child({}), Child({"acc": 0.6, "sec": 1.0})],
                objectives=OBJS, reference_point=(0.1, 8.0), seed=1)
SINGLE = [FrontRun(f"one-s{s}", {"score": 0.1}, [Child({"score": 0.2 + s}, score=0.2 + s)] * 3,
                   seed=s, task="heilbronn_triangles") for s in (0, 1)]
# common reference: worst of (0, 10) and (0.1, 8) = (0, 10); ideal: acc 0.8, sec 1.0
# run 0 after each call: 0.2*5 = 1; 0.5*8 = 4; + 0.3*7 = 6.1; invalid child: 6.1
# run 1: 1; (0.4, 4): 0.4*6 = 2.4; 2.4; (0.6, 1): 0.6*9 = 5.4 (dominates (0.4, 4))
CURVES = {"mo-s0": [1.0, 4.0, 6.1, 6.1], "mo-s1": [1.0, 2.4, 2.4, 5.4]}
BOX = 0.8 * 9.0


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return write_store(tmp_path_factory.mktemp("fronts") / "s.sqlite", [RUN0, RUN1, *SINGLE])


@pytest.fixture(scope="module")
def result(store):
    return analyze(load_tables(store=store), CFG)


def test_fronts_and_hypervolume_by_hand(result):
    hv = result["hypervolume"].set_index("run_id")
    assert hv.loc["mo-s0", "hv"] == pytest.approx(6.1)
    assert hv.loc["mo-s1", "hv"] == pytest.approx(5.4)
    assert hv.loc["mo-s0", "hv_norm"] == pytest.approx(6.1 / BOX)
    assert set(hv["reference"]) == {"0,10"} and set(hv["objectives"]) == {"acc:max,sec:min"}
    front = result["front"]
    assert front[front["run_id"] == "mo-s0"][["acc", "sec"]].values.tolist() == [
        [0.5, 2.0], [0.8, 3.0]]
    assert front[front["run_id"] == "mo-s1"][["acc", "sec"]].values.tolist() == [[0.6, 1.0]]
    assert list(hv["front_size"]) == [2, 1]


def test_curves_against_calls_and_flops_use_the_analysis_bootstrap(result):
    calls = result["hv_calls"]
    mat = np.array([CURVES["mo-s0"], CURVES["mo-s1"]])
    for step in range(4):
        row = calls[calls["calls"] == step].iloc[0]
        assert row["mean"] == pytest.approx(mat[:, step].mean())
        assert row["iqm"] == pytest.approx(mat[:, step].mean())  # two runs: IQM = mean
        assert row["n"] == 2
    # the last point's CI is the analysis' own cell bootstrap of the runs' final values
    last = calls[calls["calls"] == 3].iloc[0]
    want = cell_stats(result["hypervolume"]["hv"].to_numpy(float), CFG.seed, CFG.resamples)
    for key in ("mean", "se", "ci_low", "ci_high", "iqm", "iqm_se"):
        assert last[key] == pytest.approx(want[key]), key
    final = result["hv_final"].iloc[0]
    assert final["mean"] == pytest.approx(5.75) and final["n"] == 2
    flops = result["hv_flops"]  # 1e12 FLOPs per call: the value at x is after floor(x/1e12)
    at = flops.set_index("flops")["mean"]
    assert at.iloc[0] == pytest.approx(1.0) and at.iloc[-1] == pytest.approx(5.75)
    assert at[at.index >= 2e12].iloc[0] == pytest.approx((6.1 + 2.4) / 2)


def test_depth_breadth_runs_the_pipeline_on_normalised_hypervolume(result):
    t1 = result["hv_table1"]
    assert t1["mean"].iloc[0] == pytest.approx((6.1 + 5.4) / 2 / BOX)
    thr = result["hv_thresholds"]  # tau 0.5 of hv_norm: 3.6 of the box
    assert set(thr["tau"]) == {0.5}
    for key in ("hv_envelope", "hv_bilinear", "hv_gate", "hv_optimal_depth"):
        assert key in result.tables


def test_single_objective_runs_keep_their_analysis(store, result, tmp_path):
    only = write_store(tmp_path / "one.sqlite", SINGLE)
    plain = analyze(load_tables(store=only), CFG)
    assert not any(k.startswith("hv_") or k in ("front", "hypervolume") for k in plain.tables)
    for key in ("summary", "table1", "thresholds"):  # the single-score tables of that task
        mixed = result[key][result[key]["task"] == "heilbronn_triangles"]
        pd.testing.assert_frame_equal(plain[key].reset_index(drop=True),
                                      mixed.reset_index(drop=True), check_dtype=False)


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "basevolve", *args], capture_output=True,
                          text=True, timeout=600)


def test_hostile_objective_names_are_text_on_the_terminal(tmp_path):
    evil = "\x1b[2J<b>acc</b>\x07"
    path = write_store(tmp_path / "s.sqlite", [RUN0, RUN1])
    rename_objective(path, "acc", evil)
    res = _cli("analyze", "--store", str(path), "--resamples", "20", "--shuffles", "20",
               "--gate-shuffles", "20")
    assert res.returncode == 0, res.stderr
    assert "\x1b" not in res.stdout and "\x07" not in res.stdout
    assert "<b>acc</b>" in res.stdout  # shown, as text
    doc = json.loads(_cli("analyze", "--store", str(path), "--resamples", "20", "--shuffles",
                          "20", "--gate-shuffles", "20", "--json").stdout.splitlines()[-1])
    assert doc["front"][0][evil] == 0.5  # JSON keeps the name exactly


def test_a_bad_fronts_file_is_one_line_and_exit_2(store, tmp_path):
    out = tmp_path / "fa"
    assert _cli("export", "--store", str(store), "--for-analysis", "--out", str(out)
                ).returncode == 0
    fronts = pd.read_csv(out / "fronts.csv")
    fronts.loc[3, "direction"] = "up"
    bad = tmp_path / "bad.csv"
    fronts.to_csv(bad, index=False)
    res = _cli("analyze", "--input", str(out / "runs.csv"), "--fronts", str(bad))
    assert res.returncode == 2
    assert res.stderr.strip().count("\n") == 0 and "direction" in res.stderr
    assert "Traceback" not in res.stderr
    with pytest.raises(ConfigError, match="missing column"):
        load_tables(input=out / "runs.csv", fronts=fronts.drop(columns="value"))


def test_an_objective_named_like_a_front_column_keeps_both(tmp_path):
    path = write_store(tmp_path / "s.sqlite", [RUN0])
    rename_objective(path, "sec", "step")  # "step" is also the front table's own column
    front = analyze(load_tables(store=path), CFG)["front"]
    assert front["step"].tolist() == [1, 2]  # the call's step
    assert front["objective step"].tolist() == [2.0, 3.0]  # the objective's values


def test_the_python_api_takes_the_fronts_table(store, tmp_path):
    import basevolve

    out = tmp_path / "fa"
    assert _cli("export", "--store", str(store), "--for-analysis", "--out", str(out)
                ).returncode == 0
    kw = {"resamples": 20, "shuffles": 20, "gate_shuffles": 20}
    given = basevolve.analyze(runs=out / "runs.csv", trajectories=out / "trajectories.csv",
                              fronts=pd.read_csv(out / "fronts.csv"), **kw)
    stored = basevolve.analyze(store, **kw)
    pd.testing.assert_frame_equal(given["hypervolume"], stored["hypervolume"],
                                  check_dtype=False)
    assert "front" not in basevolve.analyze(runs=out / "runs.csv", **kw).tables
    with pytest.raises(ConfigError, match="fronts= must be"):
        basevolve.analyze(runs=out / "runs.csv", fronts=3)
