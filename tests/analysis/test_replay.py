"""Offline BaSE replay: the pure core on hand-made score matrices, and the CLI on a store."""

from __future__ import annotations

import numpy as np
import pytest

from basevolve.allocators import ALLOCATORS
from basevolve.analysis.replay import (
    check_replayable,
    logged_lengths,
    replay,
    replay_once,
    replay_with,
)
from basevolve.errors import ConfigError
from basevolve.testing.replies import seeded_packing_reply as _seeded_reply

NAN = np.nan


def staircase(n_runs=6, n_steps=20, good=2, seed=0):
    """Running-best matrix: run ``good`` climbs to ~0.95, the others plateau near 0.4."""
    rng = np.random.default_rng(seed)
    top = np.where(np.arange(n_runs) == good, 0.95, 0.4)
    inc = rng.random((n_runs, n_steps)) * top[:, None] / n_steps * 2
    return np.minimum(np.maximum.accumulate(np.cumsum(inc, axis=1), axis=1), top[:, None])


def test_logged_lengths_and_refusals():
    s = np.array([[0.1, 0.2, NAN], [0.3, NAN, NAN], [NAN, NAN, NAN], [0.5, 0.6, 0.7]])
    assert logged_lengths(s).tolist() == [2, 1, 0, 3]
    check_replayable(s, arms=3, budget=6)  # shortest 3 usable runs: 1 + 2 + 3 = 6
    with pytest.raises(ConfigError, match="exhausted"):
        check_replayable(s, arms=3, budget=7)
    with pytest.raises(ConfigError, match="at least K=4"):
        check_replayable(s, arms=4, budget=4)
    with pytest.raises(ConfigError, match=r"C=2 < K=3"):
        check_replayable(s, arms=3, budget=2)
    with pytest.raises(ConfigError, match=">= 1"):
        check_replayable(s, arms=0, budget=2)
    with pytest.raises(ValueError, match="shape"):
        logged_lengths(np.zeros(3))


def test_round_robin_replay_by_hand():
    s = np.array([[0.1, 0.2, 0.3], [0.5, 0.5, 0.6], [0.0, 0.9, 0.9]])
    curve, taken = replay_once(s, [0, 1, 2], "round_robin", 7, np.random.default_rng(0))
    # K initial calls reveal step 1 of each arm, then 0,1,2,0 reveal steps 2,2,2,3
    assert curve.tolist() == [0.1, 0.5, 0.5, 0.5, 0.5, 0.9, 0.9]
    assert taken.tolist() == [3, 2, 2]


def test_exhausted_arms_are_capped_not_overrun():
    s = np.array([[0.9, NAN, NAN, NAN], [0.1, 0.2, 0.3, 0.4]])
    curve, taken = replay_once(s, [0, 1], "ucb", 5, np.random.default_rng(0))
    assert taken.tolist() == [1, 4]  # arm 0 has one logged step; ucb would love it
    assert curve[-1] == 0.9


def test_replay_is_seeded_paired_and_finds_the_good_run():
    s = staircase()
    a = replay(s, "ucb", arms=4, budget=40, repeats=12, seed=3)
    b = replay(s, "ucb", arms=4, budget=40, repeats=12, seed=3)
    assert np.array_equal(a.curves, b.curves) and np.array_equal(a.pools, b.pools)
    r = replay(s, "random", arms=4, budget=40, repeats=12, seed=3)
    assert np.array_equal(a.pools, r.pools)  # common random numbers across allocators
    assert a.curves.shape == (12, 40) and a.pulls.sum(axis=1).tolist() == [40] * 12
    assert np.all(np.diff(a.curves, axis=1) >= 0)  # running max
    assert set(np.unique(a.pools)) <= set(range(6))
    assert all(len(set(p)) == 4 for p in a.pools)  # without replacement
    has_good = (a.pools == 2).any(axis=1)
    # when the good run is in the pool, UCB concentrates pulls on it
    good_pulls = a.pulls[has_good][a.pools[has_good] == 2]
    assert good_pulls.mean() > 40 / 4
    summ = a.summary(np.random.default_rng(0), reps=200)
    assert summ["ci_low"] <= summ["mean"] <= summ["ci_high"]
    assert len(summ["curve"]) == 40 and summ["repeats"] == 12


@pytest.mark.parametrize("name", ["random", "round_robin", "ucb", "exp3p", "thompson"])
def test_every_allocator_replays_with_improvement_rewards(name):
    res = replay(staircase(), name, arms=3, budget=30, repeats=4, seed=1,
                 reward_mode="improvement", initial=np.zeros(6))
    assert res.finals.shape == (4,) and np.all((res.finals > 0) & (res.finals <= 0.95))


def test_improvement_rewards_start_from_the_initial_program_by_hand():
    """Issue 9, 5d: online, a trajectory's first pull earns best - initial; the replay
    used to give it 0 because the logged table starts after the first call."""
    s = np.array([[0.5, 0.5, 0.7], [0.2, 0.6, 0.6]])
    alloc = ALLOCATORS.get("round_robin")(n_arms=2, rng=np.random.default_rng(0), horizon=3,
                                          reward_mode="improvement")
    curve, taken = replay_with(alloc, s, [0, 1], 5, initial=[0.1, 0.1])
    told = [(e.arm, e.reward) for e in alloc.events if e.kind == "tell"]
    # assign 0 (0.1 -> 0.5), assign 1 (0.1 -> 0.2), then round robin 0, 1, 0
    assert told == [(0, pytest.approx(0.4)), (1, pytest.approx(0.1)), (0, 0.0),
                    (1, pytest.approx(0.4)), (0, pytest.approx(0.2))]
    assert curve.tolist() == [0.5, 0.5, 0.5, 0.6, 0.7] and taken.tolist() == [3, 2]
    # best-mode rewards are the running best, initial or not
    alloc = ALLOCATORS.get("round_robin")(n_arms=2, rng=np.random.default_rng(0), horizon=3)
    replay_with(alloc, s, [0, 1], 5)
    assert [e.reward for e in alloc.events if e.kind == "tell"] == [0.5, 0.2, 0.5, 0.6, 0.7]
    with pytest.raises(ConfigError, match="initial scores"):
        replay(s, "ucb", arms=2, budget=4, repeats=1, reward_mode="improvement")


def test_unknown_allocator_and_bad_repeats():
    with pytest.raises(ConfigError, match="unknown allocator"):
        replay(staircase(), "nope", arms=2, budget=4, repeats=1)
    with pytest.raises(ConfigError, match="repeats"):
        replay(staircase(), "ucb", arms=2, budget=4, repeats=0)


# ------------------------------------------------------------------ store + CLI
def logged_store(path, n_runs=5, steps=12, task="circle_packing", model="m", breadth=1,
                 prefix="run"):
    """A real SQLite store holding greedy N=1 runs written through the RunStore API."""
    from basevolve.store.sqlite import RunStore

    s = staircase(n_runs, steps, good=1, seed=4)
    with RunStore(path) as store:
        for i in range(n_runs):
            rid = f"{prefix}{i}"
            store.create_run(rid, {"task": task, "model": model, "protocol": "greedy",
                                   "allocator": "single", "arms": 1, "budget": steps,
                                   "depth": steps // breadth, "breadth": breadth, "seed": i},
                             active_params=1e9)
            store.insert_program(rid, code="init", score=0.0, valid=True, generation=0,
                                 is_initial=1)
            for j in range(steps):
                seq = store.next_seq(rid)
                cid = store.insert_call(rid, call_index=j, seq=seq, trajectory=0, pull_id=j,
                                        generation=j + 1, slot=0, seed=j, messages=[])
                store.finish_call(cid, status="ok", counted=True, fields={"flops": 1.0},
                                  attempts=[])
                store.insert_program(rid, code=f"c{j}", score=float(s[i, j]), valid=True,
                                     generation=j + 1, call_id=cid, seq=store.next_seq(rid),
                                     trajectory=0)
    return s


def cli(*argv):
    from basevolve.cli import main

    return main([str(a) for a in argv])


def test_cli_replay_side_by_side_json(tmp_path, capsys):
    import json

    db = tmp_path / "runs.db"
    scores = logged_store(db)
    rc = cli("replay", "--store", db, "--task", "circle_packing", "--allocator", "all",
             "--arms", 3, "--budget", 20, "--repeats", 8, "--json")
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["runs_available"] == 5 and out["model"] == "m"
    assert set(out["allocators"]) == set(ALLOCATORS.names()) - {"single"}
    for s in out["allocators"].values():
        assert len(s["curve"]) == 20
        assert s["ci_low"] <= s["mean"] <= s["ci_high"] <= scores.max() + 1e-12
    # the store-backed result equals the pure core on the same matrix
    core = replay(scores, "ucb", arms=3, budget=20, repeats=8, seed=0)
    assert out["allocators"]["ucb"]["mean"] == pytest.approx(core.finals.mean())
    rc = cli("replay", "--store", db, "--task", "circle_packing", "--allocator", "ucb,random",
             "--arms", 3, "--budget", 20, "--repeats", 4)
    text = capsys.readouterr().out
    assert rc == 0 and "ucb" in text and "random" in text and "IQM" in text


@pytest.mark.parametrize("argv, msg", [
    (["--arms", 6, "--budget", 20], "at least K=6"),
    (["--arms", 3, "--budget", 40], "exhausted"),
    (["--arms", 3, "--budget", 2], "C=2 < K=3"),
    (["--arms", 0, "--budget", 2], ">= 1"),
    (["--arms", 3, "--budget", 20, "--allocator", "ucbb"], "unknown allocator"),
    (["--arms", 3, "--budget", 20, "--task", "heilbronn_triangle"], "no single-trajectory"),
    (["--arms", 3, "--budget", 20, "--model", "other"], "no single-trajectory"),
    (["--arms", 3, "--budget", 20, "--seed", -1], "--seed must be >= 0"),  # was a traceback
    (["--arms", 3, "--budget", 20, "--repeats", 0], "--repeats must be >= 1"),
])
def test_cli_replay_refusals(tmp_path, capsys, argv, msg):
    db = tmp_path / "runs.db"
    logged_store(db)
    base = ["replay", "--store", db, "--repeats", 2]
    if "--task" not in argv:
        base += ["--task", "circle_packing"]
    assert cli(*base, *argv) == 2
    err = capsys.readouterr().err
    assert msg in err and err.count("\n") == 1 and "Traceback" not in err


def test_cli_replay_refuses_n_greater_than_one_logs(tmp_path, capsys):
    """Issue 9, 5d: logs with breadth N > 1 are refused (not replayed per generation)."""
    import json

    db = tmp_path / "wide.db"
    logged_store(db, n_runs=4, breadth=4, prefix="wide")
    assert cli("replay", "--store", db, "--task", "circle_packing", "--arms", 2,
               "--budget", 6) == 2
    err = capsys.readouterr().err
    assert "only runs with breadth N > 1" in err and err.count("\n") == 1
    # next to N = 1 runs they are left out, and the output says how many
    logged_store(db, n_runs=3, prefix="narrow")
    assert cli("replay", "--store", db, "--task", "circle_packing", "--arms", 2,
               "--budget", 6, "--repeats", 2, "--json") == 0
    out = json.loads(capsys.readouterr().out)
    assert out["runs_available"] == 3 and out["runs_left_out"] == 4
    assert cli("replay", "--store", db, "--task", "circle_packing", "--arms", 2,
               "--budget", 6, "--repeats", 2) == 0
    assert "4 runs with N > 1 left out" in capsys.readouterr().out


def test_cli_replay_on_empty_or_missing_store(tmp_path, capsys):
    from basevolve.store.sqlite import RunStore

    empty = tmp_path / "empty.db"
    RunStore(empty).close()
    for db in (empty, tmp_path / "missing.db"):
        assert cli("replay", "--store", db, "--task", "circle_packing", "--arms", 2,
                   "--budget", 4) == 2
        err = capsys.readouterr().err
        assert err.startswith("basevolve: error:") and err.count("\n") == 1
    assert not (tmp_path / "missing.db").exists()  # a typo'd path is not created


# ------------------------------------------- a store written by real test-server runs
def test_replay_on_a_store_written_by_real_runs(tmp_path, capsys):
    import json

    from basevolve.analysis.replay import load_scores
    from basevolve.testing import LLMTestServer

    db = tmp_path / "runs.db"
    with LLMTestServer(_seeded_reply) as srv:
        for seed in range(3):  # three greedy N=1 runs of 8 calls: the logged arms
            assert cli("run", "--task", "circle_packing", "--budget", 8, "--model", "test-model",
                       "--params", 1e9, "--base-url", srv.base_url, "--store", db,
                       "--seed", seed, "--run-id", f"g{seed}", "--out", tmp_path / f"g{seed}",
                       "--max-in-flight", 1) == 0
        assert len(srv.requests) == 24
    capsys.readouterr()
    logged = load_scores(db, "circle_packing")
    run_ids, scores, model = logged.run_ids, logged.scores, logged.model
    assert sorted(run_ids) == ["g0", "g1", "g2"] and model == "test-model"
    assert logged.left_out == 0 and logged.initial.shape == (3,)
    assert np.all(scores[:, 0] >= logged.initial)  # the running best includes the start
    assert scores.shape == (3, 8) and np.all(np.diff(scores, axis=1) >= 0)
    assert cli("replay", "--store", db, "--task", "circle_packing", "--allocator", "ucb,round_robin",
               "--arms", 2, "--budget", 12, "--repeats", 6, "--json") == 0
    out = json.loads(capsys.readouterr().out)
    assert out["runs_available"] == 3
    for name in ("ucb", "round_robin"):
        core = replay(scores, name, arms=2, budget=12, repeats=6, seed=0, initial=logged.initial)
        assert out["allocators"][name]["mean"] == pytest.approx(core.finals.mean())
        assert out["allocators"][name]["curve"] == pytest.approx(core.curves.mean(axis=0).tolist())
    # two arms of 8 logged steps cannot absorb 17 calls
    assert cli("replay", "--store", db, "--task", "circle_packing", "--arms", 2,
               "--budget", 17) == 2
    assert "exhausted" in capsys.readouterr().err
