"""The budget advisor (issue 16, item 1) on synthetic surfaces of known (beta0, a, b, c).

Truths are the paper's Table 2 rows: MMD / 8B (interior ridge, c = -0.106) and HT / 8B
(the T = C corner, c = -0.012).  "Within the plateau" is checked against the *true*
optimum's plateau, computed from the true coefficients with the same Delta.
"""

from __future__ import annotations

import json
import tomllib

import numpy as np
import pytest

from basevolve.analysis.advise import AdviceConfig, advise, divisor_nearest, replay_advice
from basevolve.analysis.bilinear import optimal_depth
from basevolve.analysis.pilot import pilot_budgets, pilot_calls, pilot_toml
from basevolve.analysis.replay import LoggedRuns
from basevolve.analysis.synthetic import Truth, synthetic_study
from basevolve.analysis.tables import load_tables
from basevolve.errors import ConfigError

MMD_8B = Truth(-0.590, -0.208, -0.290, -0.106, 8e9)
HT_8B = Truth(0.592, -0.363, -0.168, -0.012, 8e9)
FLAT = Truth(-1.0, 0.0, 0.0, 0.0, 8e9)
CFG = AdviceConfig(resamples=300, gate_shuffles=1000)


def study(truth, budgets=(8, 16, 32, 64, 128), seeds=10, noise=0.05, seed=1):
    return synthetic_study(np.random.default_rng(seed), tasks=("t",), models=("m",),
                           budgets=budgets, seeds=seeds, noise=noise,
                           truths={("t", "m"): truth}, trajectories=False, children=False,
                           base_arms=(), islands=())


def true_v(truth, t, budget):
    n = budget / t
    lt, ln = np.log(t), np.log(n)
    return 1 - np.exp(truth.beta0 + truth.a * lt + truth.b * ln + truth.c * lt * ln)


# HT's surface is below fitness 0 at small budgets (1 - V = e^(0.592 - ...) > 1), where
# the synthetic runs floor at 0 like real ones: its sweep starts at C = 64.
CASES = [(MMD_8B, "interior", (8, 16, 32, 64, 128)), (HT_8B, "T=C", (64, 128, 256))]


@pytest.mark.parametrize("truth, location, budgets", CASES)
@pytest.mark.parametrize("budget, extrapolated", [(128, False), (1024, True)])
def test_recommended_depth_is_within_the_true_plateau(truth, location, budgets, budget,
                                                      extrapolated):
    runs = study(truth, budgets=budgets)["runs"]
    a = advise(load_tables(input=runs), "t", "m", budget, CFG)
    assert a["can_advise"] and a["refusals"] == []
    assert a["extrapolation"] is extrapolated
    true = optimal_depth(truth.a, truth.b, truth.c, budget, CFG.delta)
    d = a["depth"]
    assert d["location"] == true.location == location
    assert true.t_low <= d["t_star"] <= true.t_high
    assert true.t_low <= d["recommended_depth"] <= true.t_high
    assert d["recommended_depth"] * d["recommended_breadth"] == budget
    assert d["t_star_ci"][0] <= d["t_star"] <= d["t_star_ci"][1]
    e = a["expected_fitness"]
    assert e["ci_low"] <= e["value"] <= e["ci_high"]
    assert abs(e["value"] - true_v(truth, d["recommended_depth"], budget)) < 0.01
    if extrapolated:
        assert a["empirical_best"] is None  # C was not swept
    else:
        emp = a["empirical_best"]
        assert emp["budget"] == 128 and emp["runs"] == 10 and emp["in_plateau"]
        assert emp["differs"] is (emp["depth"] != d["recommended_depth"])
    json.dumps(a)  # JSON-able (the CLI cleans NaN separately)


def test_refuses_a_flat_surface():
    a = advise(load_tables(input=study(FLAT)["runs"]), "t", "m", 128, CFG)
    assert not a["can_advise"] and "depth" not in a
    reasons = {r["reason"] for r in a["refusals"]}
    assert reasons == {"low_r2", "no_depth_gain"}
    assert a["fit"]["r2"] < 0.7 and a["gate"]["p"] > 0.05


def test_refuses_a_noisy_surface():
    a = advise(load_tables(input=study(MMD_8B, noise=1.0)["runs"]), "t", "m", 128, CFG)
    assert not a["can_advise"]
    assert "low_r2" in {r["reason"] for r in a["refusals"]}


def test_refuses_too_few_cells():
    # one budget: log N = log C - log T, so Eq. 2 cannot be fitted at all
    a = advise(load_tables(input=study(MMD_8B, budgets=(64,))["runs"]), "t", "m", 64, CFG)
    assert a["refusals"][0]["reason"] == "too_few_cells"
    assert "one budget" in a["refusals"][0]["message"]


def test_unknown_task_or_model_is_a_config_error():
    tables = load_tables(input=study(MMD_8B)["runs"])
    with pytest.raises(ConfigError, match="it holds t/m"):
        advise(tables, "t", "other", 128, CFG)


def test_divisor_nearest_by_hand():
    assert divisor_nearest(512, 7.6e4) == 512  # clipped to C
    assert divisor_nearest(128, 7.78) == 8
    assert divisor_nearest(100, 7.3) == 10  # |ln 10 - ln 7.3| = 0.315 < |ln 5 - ln 7.3| = 0.378
    assert divisor_nearest(64, 0.5) == 1


def test_replay_advice_recommends_the_best_mean_and_skips_what_cannot_fit():
    rng = np.random.default_rng(0)
    top = np.where(np.arange(6) == 2, 0.95, 0.4)
    inc = rng.random((6, 40)) * top[:, None] / 20
    scores = np.minimum(np.maximum.accumulate(np.cumsum(inc, axis=1), axis=1), top[:, None])
    logged = LoggedRuns([f"r{i}" for i in range(6)], scores, np.zeros(6), "m")
    cfg = AdviceConfig(arms=(2, 5, 10), replay_repeats=6)
    out = replay_advice(logged, 60, cfg, ["random", "ucb"])
    assert [s.split(":")[0] for s in out["skipped"]] == ["K=10"]  # only 6 logged runs
    assert {(r["allocator"], r["arms"]) for r in out["table"]} == {
        ("random", 2), ("ucb", 2), ("random", 5), ("ucb", 5)}
    assert out["best"] == max(out["table"], key=lambda r: r["mean"])


def test_pilot_config_by_hand():
    assert pilot_budgets(512) == (8, 16, 32)
    assert pilot_budgets(16) == (8, 16)
    assert pilot_budgets(4) == (2, 4)
    # 8 * 4 depths * 3 + 16 * 5 * 3 + 32 * 6 * 3 = 96 + 240 + 576
    assert pilot_calls((8, 16, 32), 3) == 912
    doc = tomllib.loads(pilot_toml("circle_packing", "qwen3-8b", (8, 16, 32), 3, "http://h:1/v1"))
    assert doc["sweep"]["name"] == "pilot-circle_packing-qwen3-8b"
    assert doc["defaults"] == {"base_url": "http://h:1/v1"}
    assert doc["grid"] == [{"task": "circle_packing", "model": "qwen3-8b", "budget": [8, 16, 32],
                            "depth": "powers-of-2", "seeds": 3}]
    assert "defaults" not in tomllib.loads(pilot_toml("t", "m", (8, 16), 2))


# ------------------------------------------------------------------ CLI on a real store
def write_store(path, runs):
    """Write synthetic runs into a real SQLite store through the RunStore API.

    Every run gets its initial program (score 0) and C charged calls; the final call's
    child carries the run's fitness and earlier children climb towards it, so greedy
    N = 1 runs double as logged trajectories for the offline replay."""
    from basevolve.store import RunStore

    with RunStore(path) as store:
        for r in runs.itertuples():
            rid = f"r{r.run_id}"
            store.create_run(rid, {"task": r.task, "model": r.model, "protocol": r.protocol,
                                   "allocator": r.allocator, "arms": int(r.arms),
                                   "budget": int(r.budget), "depth": int(r.depth),
                                   "breadth": int(r.breadth), "seed": int(r.seed)},
                             active_params=8e9)
            store.insert_program(rid, code="init", score=0.0, valid=True, generation=0,
                                 is_initial=1)
            for j in range(int(r.budget)):
                cid = store.insert_call(rid, call_index=j, seq=store.next_seq(rid), trajectory=0,
                                        pull_id=j, generation=j // int(r.breadth) + 1,
                                        slot=j % int(r.breadth), seed=j, messages=[])
                store.finish_call(cid, status="ok", counted=True, fields={"flops": 1.0},
                                  attempts=[])
                score = float(r.fitness) * (j + 1) / int(r.budget)
                store.insert_program(rid, code=f"c{j}", score=score, valid=True,
                                     generation=j // int(r.breadth) + 1, call_id=cid,
                                     seq=store.next_seq(rid), trajectory=0)
            store.set_status(rid, "finished")


def cli(*argv):
    from basevolve.cli import main

    return main([str(a) for a in argv])


@pytest.fixture(scope="module")
def mmd_store(tmp_path_factory):
    path = tmp_path_factory.mktemp("advise") / "sweep.sqlite"
    # 10 seeds: with fewer the capability gate has little power on a curved surface
    # (its null re-maxes over the cells) and the advisor rightly refuses
    write_store(path, study(MMD_8B, budgets=(8, 16, 32), seeds=10)["runs"])
    return path


def test_cli_advise_json_and_text(mmd_store, capsys):
    rc = cli("advise", "--store", mmd_store, "--task", "t", "--model", "m", "--budget", 32,
             "--json", "--arms", "2,5", "--repeats", 3)
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["can_advise"] and out["extrapolation"] is False
    true = optimal_depth(MMD_8B.a, MMD_8B.b, MMD_8B.c, 32)
    assert true.t_low <= out["depth"]["recommended_depth"] <= true.t_high
    assert out["empirical_best"]["budget"] == 32
    # the ten greedy N = 1 runs at C = 32 are logged trajectories: K = 2 and 5 replayed
    rep = out["replay"]
    assert rep["logged_runs"] == 10 and {r["arms"] for r in rep["table"]} == {2, 5}
    assert "successive_halving" in {r["allocator"] for r in rep["table"]}
    rc = cli("advise", "--store", mmd_store, "--task", "t", "--model", "m", "--budget", 128,
             "--arms", "2", "--repeats", 2)
    text = capsys.readouterr().out
    assert rc == 0 and "EXTRAPOLATION" in text and "run: --depth" in text
    assert "envelope collapse" in text and "  note: capability gate at C=32" in text
    assert "offline replay not possible" in text  # 2 runs x 32 logged steps < 128


def test_cli_advise_refusal_exits_3_with_the_pilot(tmp_path, capsys):
    path = tmp_path / "flat.sqlite"
    write_store(path, study(FLAT, budgets=(8, 16), seeds=3)["runs"])
    rc = cli("advise", "--store", path, "--task", "t", "--model", "m", "--budget", 64)
    text = capsys.readouterr().out
    assert rc == 3 and "CANNOT ADVISE" in text and "basevolve advise --pilot" in text


def test_cli_advise_pilot_writes_a_sweep_config(tmp_path, capsys):
    out = tmp_path / "pilot.toml"
    assert cli("advise", "--pilot", "--task", "t", "--model", "m", "--budget", 512,
               "--params", "1B", "--base-url", "http://h:1/v1", "--out", out) == 0
    assert "912 LLM calls" in capsys.readouterr().out
    doc = tomllib.loads(out.read_text())
    assert doc["grid"][0]["budget"] == [8, 16, 32]
    before = out.read_text()
    assert cli("advise", "--pilot", "--task", "t", "--model", "m", "--budget", 512,
               "--params", "1B", "--base-url", "http://h:1/v1", "--out", out) == 2
    err = capsys.readouterr().err
    assert "exists" in err and err.count("\n") == 1 and out.read_text() == before


@pytest.mark.parametrize("argv, msg", [
    (["--budget", 0], "--budget must be >= 1"),
    (["--budget", 64, "--model", "x"], "no runs of task 't' with model 'x'"),
    (["--budget", 64, "--repeats", 0], "--repeats >= 1"),
])
def test_cli_advise_bad_input_is_one_line_exit_2(mmd_store, capsys, argv, msg):
    base = ["advise", "--store", mmd_store, "--task", "t"]
    if "--model" not in argv:
        base += ["--model", "m"]
    assert cli(*base, *argv) == 2
    err = capsys.readouterr().err
    assert msg in err and err.count("\n") == 1 and "Traceback" not in err


def test_cli_advise_needs_a_store_without_pilot(capsys):
    assert cli("advise", "--task", "t", "--model", "m", "--budget", 64) == 2
    assert "--store FILE is required" in capsys.readouterr().err


@pytest.mark.parametrize("base_url", [None, "http://127.0.0.1:8000/v1"])
def test_pilot_config_is_what_the_sweep_loader_reads(base_url):
    from basevolve.sweep.config import parse_sweep

    text = pilot_toml("circle_packing", "qwen3-8b", (8, 16, 32), 3, base_url)
    sw = parse_sweep(tomllib.loads(text), source="pilot.toml")
    # 4 + 5 + 6 power-of-2 depths x 3 seeds; the calls add up to what --pilot prints
    assert len(sw.runs) == 45
    assert sum(r.config.budget for r in sw.runs) == pilot_calls((8, 16, 32), 3) == 912
    assert {(r.config.budget, r.config.depth) for r in sw.runs} == {
        (b, t) for b in (8, 16, 32) for t in (1, 2, 4, 8, 16, 32) if t <= b}
    assert {r.config.base_url for r in sw.runs} == {base_url}


# Issue 23, item 6: the paper's own cells.  Table 2 gives the fitted surface of
# MMD / Qwen3-8B (c = -0.106, permutation p(c) = 1.2e-11 in Table 8) and Table 4 its
# capability gate at C = 512: V_T=1 = 0.944, V_max = 0.960, penBoN = +0.016, p = 0.64.
# MMD / Qwen3-14B: c = -0.057 (p(c) = 5e-4), gate V_T=1 = 0.867, V_max = 0.981, p < 1e-3.
PAPER_CELLS = {  # name: (Table 2 row, Table 4 V_T=1 at C = 512, per-seed spread)
    "mmd-8b": (MMD_8B, 0.944, 0.035),
    "mmd-14b": (Truth(-0.641, -0.342, -0.238, -0.057, 14e9), 0.867, 0.01),
}
PAPER_BUDGETS = (8, 16, 32, 64, 128, 256, 512)


def paper_runs(name: str):
    """10 seeds per (C, T) cell, C = 8 ... 512, all power-of-2 depths; each cell's mean
    is the Table 2 surface, except the C = 512 best-of-N cell, set to Table 4's V_T=1;
    seeds spread symmetrically around the mean (so the means are exact)."""
    import pandas as pd

    truth, v_t1, spread = PAPER_CELLS[name]
    offsets = np.linspace(-1.0, 1.0, 10) * spread
    rows = []
    for budget in PAPER_BUDGETS:
        for k in range(int(np.log2(budget)) + 1):
            t = 2**k
            mean = v_t1 if (budget, t) == (512, 1) else float(true_v(truth, t, budget))
            for seed, off in enumerate(offsets):
                rows.append({"run_id": len(rows), "task": "min_max_distance", "model": name,
                             "protocol": "greedy", "allocator": "single", "arms": 1,
                             "budget": budget, "depth": t, "breadth": budget // t,
                             "seed": seed, "fitness": mean + off, "flops": 1e12 * budget})
    return pd.DataFrame(rows)


def test_a_significant_fit_is_advised_and_the_gate_speaks_of_the_collapse():
    """MMD / Qwen3-8B, the paper's clearest interior case, fails the capability gate
    (p = 0.64 in Table 4) although its interaction is significant on its own.  The paper
    reads the gate as deciding whether the *envelope collapse* holds, so the advice is
    given (the interior ridge of Table 2) and says the collapse is not established."""
    a = advise(load_tables(input=paper_runs("mmd-8b")), "min_max_distance", "mmd-8b", 512, CFG)
    assert a["gate"]["budget"] == 512
    assert a["gate"]["v_t1"] == pytest.approx(0.944) and a["gate"]["v_max"] == pytest.approx(
        0.959, abs=0.002)
    assert a["gate"]["p"] > 0.05  # Table 4: 0.64
    assert a["fit"]["c"] == pytest.approx(-0.106, abs=0.015) and a["fit"]["p_c"] <= 0.001
    assert a["can_advise"] and a["refusals"] == []
    assert a["depth"]["location"] == "interior" and 8 <= a["depth"]["recommended_depth"] <= 32
    assert a["gate"]["envelope_collapse"] == "not established"
    note = " ".join(a["notes"])
    assert "envelope" in note and "collapse" in note and "not established" in note
    assert "interaction" in note and "significant" in note


def test_a_passed_gate_says_the_collapse_holds():
    """MMD / Qwen3-14B passes the gate (Table 4: +0.115, p < 1e-3): advised, collapse
    holds."""
    a = advise(load_tables(input=paper_runs("mmd-14b")), "min_max_distance", "mmd-14b", 512,
               CFG)
    assert a["gate"]["p"] <= 0.05 and a["can_advise"]
    assert a["gate"]["envelope_collapse"] == "holds"
    assert any("collapse" in n and "holds" in n for n in a["notes"])


def test_neither_significant_still_refuses(tmp_path):
    """Flat: no depth gain (gate) and no interaction (c): nothing supports a depth."""
    a = advise(load_tables(input=study(FLAT)["runs"]), "t", "m", 128, CFG)
    why = next(r for r in a["refusals"] if r["reason"] == "no_depth_gain")["message"]
    assert "gate p" in why and "interaction" in why
