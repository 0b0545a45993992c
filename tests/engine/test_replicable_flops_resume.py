"""Replicable FLOPs across a kill and ``--resume`` (issue 34, item 4): on one simulator
process, an uninterrupted ``--deterministic`` run and a run killed while calls are in
flight and then resumed give every call the same ``cached_tokens`` and FLOPs (the
simulated prefix cache is the run's own, in its logical call order:
testing/prefix_cache.py).  Before, the second run found the first run's prompts cached
and the resumed calls were cached by arrival."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

from logical_support import decided_order

from basevolve.config import RunConfig
from basevolve.engine import start_run
from basevolve.testing.sim import simulated_server

TASK = "min_max_distance"


def _usage_by_call(store: Path) -> list[tuple]:
    """(n-th call decided, prompt, cached, completion tokens, FLOPs) of the answered
    calls: a call sent again after the kill stands in its first call's place."""
    con = sqlite3.connect(store)
    try:
        key = decided_order(con)
        return sorted((key(r[0]), *r[1:]) for r in con.execute(
            "SELECT call_id, prompt_tokens, cached_tokens, completion_tokens, flops FROM calls "
            "WHERE status='ok'"))
    finally:
        con.close()


def test_a_killed_and_resumed_run_gets_the_same_cached_tokens(pool, tmp_path, kill_mid_run):
    budget = 36
    with simulated_server(TASK, latency_s=0.3).start() as srv:
        cfg = RunConfig(task=TASK, budget=budget, base_url=srv.base_url, model="sim",
                        params=1e9, allocator="ucb", arms=3, seed=6, max_in_flight=6,
                        deterministic=True, run_id="rf")
        start_run(cfg, tmp_path / "ref.sqlite", pool=pool, out_dir=None)
        store = tmp_path / "kill.sqlite"
        base = [sys.executable, "-m", "basevolve", "run", "--store", str(store), "--out",
                str(tmp_path / "out")]
        kill_mid_run([*base, "--task", TASK, "--budget", str(budget), "--model", "sim",
                      "--params", "1e9", "--base-url", srv.base_url, "--allocator", "ucb",
                      "--arms", "3", "--seed", "6", "--max-in-flight", "6", "--deterministic",
                      "--run-id", "rf"], store, 10)
        done = subprocess.run([*base, "--resume", "rf", "--json"], capture_output=True,
                              text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    resumed = json.loads(done.stdout.strip().splitlines()[-1])
    assert resumed["calls_completed"] == budget and resumed["calls_lost"] >= 1
    ref, got = _usage_by_call(tmp_path / "ref.sqlite"), _usage_by_call(store)
    assert len(ref) == budget and ref == got
    assert ref[0][2] == 0 and sum(r[2] for r in ref) > 0  # each run starts empty
