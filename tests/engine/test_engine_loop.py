"""End-to-end engine tests against the real LLM test server and the real sandbox."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from basevolve.config import RunConfig
from basevolve.engine import start_run
from basevolve.llm.catalog import resolve_model
from basevolve.testing import Fault, LLMTestServer

TASK = "min_max_distance"



def _run(srv, pool, tmp_path: Path, **kw) -> dict:
    cfg = RunConfig(task=TASK, base_url=srv.base_url, **kw)
    return start_run(cfg, tmp_path / "s.sqlite", pool=pool, out_dir=tmp_path / "out")


def _db(tmp_path: Path) -> sqlite3.Connection:
    return sqlite3.connect(tmp_path / "s.sqlite")


def test_greedy_spends_exactly_c_with_n_in_flight(scripted, pool, initial_score, tmp_path):
    replies = scripted(seed=10, junk=True)
    with LLMTestServer(replies, latency_s=0.15) as srv:
        s = _run(srv, pool, tmp_path, budget=12, depth=3, run_id="g")
        assert len(srv.requests) == 12
        assert srv.peak_in_flight == 4  # breadth N = 4: one generation in flight together
    assert s["calls_completed"] == 12 and s["calls_lost"] == 0 and s["status"] == "finished"
    assert s["best_score"] == pytest.approx(max([initial_score, *replies.scores.values()]))
    db = _db(tmp_path)
    assert db.execute("SELECT count(*) FROM calls WHERE counted=1").fetchone()[0] == 12
    # every program child per generation: 3 generations x 4 children, parse failures score 0
    gens = db.execute("SELECT generation, count(*) FROM programs WHERE is_initial=0 "
                      "GROUP BY generation").fetchall()
    assert gens == [(1, 4), (2, 4), (3, 4)]
    junk = db.execute("SELECT count(*) FROM programs WHERE code IS NULL AND score=0").fetchone()[0]
    assert junk == 2  # replies 4 and 9
    assert Path(s["best_program"]).read_text().startswith("import numpy")
    assert Path(s["picture"]).stat().st_size > 0


def test_flops_and_tokens_equal_sums_over_stored_calls(scripted, pool, tmp_path):
    with LLMTestServer(scripted(seed=3), latency_s=0.02) as srv:
        s = _run(srv, pool, tmp_path, budget=4, depth=2, run_id="f")
    p_active = resolve_model("embedded").active_params
    rows = _db(tmp_path).execute(
        "SELECT prompt_tokens, cached_tokens, completion_tokens, flops FROM calls").fetchall()
    assert len(rows) == 4
    for p, c, o, f in rows:
        assert f == pytest.approx(2 * p_active * (p - c + o))
    assert s["prompt_tokens"] == sum(r[0] for r in rows)
    assert s["cached_tokens"] == sum(r[1] for r in rows) > 0  # siblings share the prefix
    assert s["completion_tokens"] == sum(r[2] for r in rows)
    assert s["flops"] == pytest.approx(sum(r[3] for r in rows))


def test_calls_have_deterministic_distinct_seeds(scripted, pool, tmp_path):
    with LLMTestServer(scripted(), latency_s=0.01) as srv:
        _run(srv, pool, tmp_path, budget=4, depth=4, seed=5, run_id="a", max_in_flight=1)
        _run(srv, pool, tmp_path, budget=4, depth=4, seed=5, run_id="b", max_in_flight=1)
        sent = [r["seed"] for r in srv.requests]
    assert sent[:4] == sent[4:] and len(set(sent[:4])) == 4


def _alloc_sequence(tmp_path: Path, run_id: str) -> list[tuple[str, int]]:
    return _db(tmp_path).execute(
        "SELECT kind, trajectory FROM allocations WHERE run_id=? ORDER BY seq", (run_id,)).fetchall()


@pytest.mark.parametrize("allocator", ["ucb", "thompson"])
def test_base_sequential_reproduces_allocation_sequence(scripted, pool, tmp_path, allocator):
    for run_id in ("one", "two"):
        with LLMTestServer(scripted(seed=7), latency_s=0.0) as srv:
            s = _run(srv, pool, tmp_path, budget=10, depth=10, arms=3, allocator=allocator,
                     max_in_flight=1, seed=11, run_id=run_id)
            assert len(srv.requests) == 10 and srv.peak_in_flight == 1
        assert s["calls_completed"] == 10 and sum(s["pulls_per_arm"]) == 10
    seq = _alloc_sequence(tmp_path, "one")
    assert seq == _alloc_sequence(tmp_path, "two")
    assert seq[:2] == [("assign", 0), ("tell", 0)]  # sequential: each pull told before the next
    kinds = [k for k, _ in seq]
    assert kinds.count("assign") == 3 and kinds.count("ask") == 7 and kinds.count("tell") == 10


def test_base_saturates_the_server(scripted, pool, tmp_path):
    """Arms share slots (issue 9): every free slot gets a decision over all K arms."""
    with LLMTestServer(scripted(seed=1), latency_s=0.15) as srv:
        s = _run(srv, pool, tmp_path, budget=16, depth=16, arms=4, allocator="ucb",
                 max_in_flight=8, run_id="k")
        assert len(srv.requests) == 16
        assert srv.peak_in_flight == 8  # max_in_flight, not K
    db = _db(tmp_path)
    assert db.execute("SELECT count(*) FROM calls WHERE trajectory IS NULL").fetchone()[0] == 0
    assert s["calls_completed"] == 16 and sum(s["calls_per_arm"]) == 16
    first = _alloc_sequence(tmp_path, "k")[:4]
    assert first == [("assign", 0), ("assign", 1), ("assign", 2), ("assign", 3)]
    summary = json.loads(db.execute("SELECT summary_json FROM allocations WHERE kind='tell' "
                                    "ORDER BY seq DESC LIMIT 1").fetchone()[0])
    assert summary["allocator"] == "ucb"
    assert s["best_arm"] in range(4)
    assert s["bandit_decisions"] == 12 and s["decisions_with_choice"] > 0.9


def test_arm_in_flight_cap_bounds_the_peak(scripted, pool, tmp_path):
    """K x --arm-in-flight below --max-in-flight: the cap, not the slots, bounds the peak."""
    with LLMTestServer(scripted(seed=1), latency_s=0.15) as srv:
        s = _run(srv, pool, tmp_path, budget=12, depth=12, arms=3, allocator="thompson",
                 max_in_flight=16, arm_in_flight=2, run_id="cap")
        assert len(srv.requests) == 12 and srv.peak_in_flight == 6
    assert s["calls_completed"] == 12 and s["arm_in_flight"] == 2


def test_generation_pull_charges_n_calls(scripted, pool, tmp_path):
    with LLMTestServer(scripted(seed=2), latency_s=0.05) as srv:
        s = _run(srv, pool, tmp_path, budget=12, depth=3, arms=2, allocator="round_robin",
                 pull="generation", run_id="gp")
        assert len(srv.requests) == 12
    # 2 assign pulls + 1 bandit pull of N = 4 calls, to whichever arm finished first
    assert sorted(s["pulls_per_arm"]) == [1, 2]
    per_pull = _db(tmp_path).execute(
        "SELECT pull_id, count(*) FROM calls GROUP BY pull_id").fetchall()
    assert [n for _, n in per_pull] == [4, 4, 4]


def test_failed_attempt_counted_and_reissued(scripted, pool, tmp_path):
    """--count-failed-attempts: a 500 costs one unit, its proposal is asked again."""
    with LLMTestServer(scripted(seed=4), latency_s=0.01) as srv:
        srv.inject(Fault.HTTP_500, times=1)
        s = _run(srv, pool, tmp_path, budget=4, depth=4, count_failed_attempts=True,
                 run_id="cf", max_in_flight=1)
        assert len(srv.requests) == 4  # exactly C attempts reached the server
    db = _db(tmp_path)
    rows = db.execute("SELECT status, counted, reissue_of FROM calls ORDER BY call_index").fetchall()
    assert rows[0][:2] == ("failed", 1) and rows[1][2] == 1
    assert s["calls_completed"] == 4 and s["children"] == 3


def test_endpoint_dying_mid_run_fails_cleanly(scripted, pool, tmp_path):
    """Calls that keep failing end the run with status failed and a clear LLMError."""
    from basevolve.errors import LLMError

    with LLMTestServer(scripted(seed=6), latency_s=0.0) as srv:
        srv.inject(Fault.HTTP_500, times=50)
        with pytest.raises(LLMError, match="in a row failed"):
            _run(srv, pool, tmp_path, budget=8, depth=8, count_failed_attempts=True,
                 max_in_flight=1, run_id="dead")
        assert len(srv.requests) == 3
    db = _db(tmp_path)
    status, error = db.execute("SELECT status, error FROM runs").fetchone()
    assert status == "failed" and "--resume dead" in error
    assert db.execute("SELECT count(*) FROM calls WHERE status='failed'").fetchone()[0] == 3


def test_generation_pull_needs_room_for_k_initial_generations():
    """With --pull generation each initial pull is one generation of N calls; K N > C
    used to start only C / N trajectories (the others silently never initialised)."""
    from basevolve.errors import ConfigError

    with pytest.raises(ConfigError, match="exceed the budget 12"):
        RunConfig(task=TASK, budget=12, depth=3, arms=5, allocator="ucb", pull="generation")
    ok = RunConfig(task=TASK, budget=12, depth=3, arms=3, allocator="ucb", pull="generation")
    assert ok.bandit_horizon == 0


@pytest.mark.parametrize(("kw", "horizon"), [
    ({"budget": 12, "arms": 3}, 9),
    ({"budget": 20, "depth": 4, "arms": 3, "pull": "generation"}, 1),  # (20 - 15) / 5
    ({"budget": 24, "depth": 4, "arms": 2, "pull": "generation"}, 2),  # (24 - 12) / 6
])
def test_bandit_horizon_counts_allocator_decisions(kw, horizon):
    assert RunConfig(task=TASK, allocator="exp3p", **kw).bandit_horizon == horizon


def test_exp3p_horizon_is_the_number_of_bandit_pulls(scripted, pool, tmp_path):
    """EXP3.P's T (Auer et al. 2002, Thm 6.3) is the number of bandit rounds; with
    --pull generation the engine used to pass C - K calls instead of the pulls."""
    from basevolve.allocators.exp3p import exp3p_defaults

    with LLMTestServer(scripted(seed=5), latency_s=0.01) as srv:
        _run(srv, pool, tmp_path, budget=24, depth=4, arms=2, allocator="exp3p",
             pull="generation", run_id="xh")
        assert len(srv.requests) == 24
    rows = _db(tmp_path).execute(
        "SELECT summary_json FROM allocations WHERE kind='ask'").fetchall()
    assert len(rows) == 2
    gamma = json.loads(rows[0][0])["gamma"]
    assert gamma == pytest.approx(exp3p_defaults(2, 2)[1])


@pytest.mark.parametrize("budget", [10**20, 10**12, 1_000_001])
def test_absurd_budget_is_a_clear_error_not_a_hang_or_overflow(budget):
    """--budget 10**20 used to pass validation and die with an SQLite OverflowError
    traceback; 10**12 with a non-dividing --depth listed divisors in O(C) (a hang)."""
    import time

    from basevolve.config import MAX_BUDGET
    from basevolve.errors import ConfigError

    t0 = time.monotonic()
    with pytest.raises(ConfigError, match="--budget must be <="):
        RunConfig(task=TASK, budget=budget, depth=7)
    assert time.monotonic() - t0 < 1.0
    ok = RunConfig(task=TASK, budget=MAX_BUDGET, depth=8)
    assert ok.breadth == MAX_BUDGET // 8


@pytest.mark.parametrize("seed", [-1, 2**63, 10**20])
def test_seed_out_of_storable_range_is_a_clear_error(seed):
    """--seed 10**20 used to reach the store and die with an SQLite OverflowError."""
    from basevolve.errors import ConfigError

    with pytest.raises(ConfigError, match="--seed must be between 0 and"):
        RunConfig(task=TASK, budget=2, seed=seed)
    assert RunConfig(task=TASK, budget=2, seed=2**63 - 1).seed == 2**63 - 1
