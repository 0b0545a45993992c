"""``--deterministic`` (issue 23, part 2): the same seed gives the same run, however the
replies overtake each other.

The server answers a request by a hash of its messages and its seed (what a seeded
vLLM or ``basevolve simulate-server`` does), and sleeps a jittered latency drawn from
its own seed, so two runs see their replies arrive in different orders (each test checks
that they did).  ``--deterministic`` tells results in issue order, so the stores must
agree on every call, program, score and allocation event; only times differ.  The
emulated prefix cache is fixed (``cached_tokens=0``): a server's cache report depends
on arrival order, and FLOPs are computed from it.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from logical_support import logical_run

from basevolve.config import RunConfig, budget_fields
from basevolve.engine import start_run
from basevolve.testing import LLMTestServer
from basevolve.testing.replies import seeded_points_reply

TASK = "min_max_distance"
#: store columns that record *when* (or how long), not *what*
TIMES = {"created_at", "completed_at", "latency_s", "seconds", "updated_at"}


def _server(jitter_seed: int, latency: float = 0.05) -> LLMTestServer:
    return LLMTestServer(seeded_points_reply, latency_s=latency, latency_jitter=0.9,
                         jitter_seed=jitter_seed, cached_tokens=0)


def _run(pool: Any, store: Path, *, jitter_seed: int, **kw: Any) -> dict[str, Any]:
    with _server(jitter_seed) as srv:
        cfg = RunConfig(**{"task": TASK, "budget": 64, "model": "test-model", "params": 1e9,
                           "base_url": srv.base_url, "allocator": "ucb", "arms": 4, "seed": 7,
                           "run_id": "det", "deterministic": True, **kw})
        summary = start_run(cfg, store, pool=pool)
        summary["peak"] = srv.peak_in_flight
    return summary


def _table(con: sqlite3.Connection, table: str, order: str) -> list[dict[str, Any]]:
    cur = con.execute(f"SELECT * FROM {table} ORDER BY {order}")
    names = [d[0] for d in cur.description]
    return [{k: v for k, v in zip(names, row, strict=True) if k not in TIMES} for row in cur]


def dump(store: Path) -> dict[str, list[dict[str, Any]]]:
    """Every call, attempt, program and allocation event of the store, times aside."""
    con = sqlite3.connect(store)
    try:
        return {"calls": _table(con, "calls", "call_id"),
                "attempts": _table(con, "attempts", "call_id, attempt_index"),
                "programs": _table(con, "programs", "program_id"),
                "allocations": _table(con, "allocations", "seq")}
    finally:
        con.close()


def arrival_order(store: Path) -> list[int]:
    con = sqlite3.connect(store)
    try:
        return [i for (i,) in con.execute("SELECT call_index FROM calls ORDER BY completed_at")]
    finally:
        con.close()


def test_same_seed_same_store_at_16_in_flight(pool, tmp_path):
    a = _run(pool, tmp_path / "a.sqlite", jitter_seed=1, max_in_flight=16)
    b = _run(pool, tmp_path / "b.sqlite", jitter_seed=2, max_in_flight=16)
    # calls overlapped (how many depends on the machine's load: not asserted) ...
    assert a["peak"] > 1 and b["peak"] > 1 and a["calls_completed"] == b["calls_completed"] == 64
    order_a, order_b = arrival_order(tmp_path / "a.sqlite"), arrival_order(tmp_path / "b.sqlite")
    assert order_a != sorted(order_a) and order_a != order_b  # replies overtook each other
    da, db = dump(tmp_path / "a.sqlite"), dump(tmp_path / "b.sqlite")
    assert len(da["programs"]) == 65 and len(da["allocations"]) == 4 + 60 + 64
    for table in da:
        assert da[table] == db[table], table
    assert a["best_score"] == b["best_score"] and a["calls_per_arm"] == b["calls_per_arm"]


def test_the_same_pair_differs_without_deterministic(pool, tmp_path):
    """The comparison above has teeth: told in arrival order, the two runs differ."""
    a = _run(pool, tmp_path / "a.sqlite", jitter_seed=1, max_in_flight=16, deterministic=False)
    b = _run(pool, tmp_path / "b.sqlite", jitter_seed=2, max_in_flight=16, deterministic=False)
    assert a["calls_completed"] == b["calls_completed"] == 64
    da, db = dump(tmp_path / "a.sqlite"), dump(tmp_path / "b.sqlite")
    assert da["programs"] != db["programs"] or da["allocations"] != db["allocations"]


def test_max_in_flight_1_and_16_give_the_same_run(pool, tmp_path):
    a = _run(pool, tmp_path / "a.sqlite", jitter_seed=3, max_in_flight=16)
    b = _run(pool, tmp_path / "b.sqlite", jitter_seed=4, max_in_flight=1)
    assert a["peak"] > 1 and b["peak"] == 1
    assert a["window"] == b["window"] == 24 and a["deterministic"] is True
    da, db = dump(tmp_path / "a.sqlite"), dump(tmp_path / "b.sqlite")
    for table in da:
        assert da[table] == db[table], table


def test_generation_pulls_and_greedy_n_replicate(pool, tmp_path):
    """Generation barriers (N = 4 per pull) are logical points too."""
    kw = {"budget": 48, "depth": 12, "pull": "generation", "arms": 3, "max_in_flight": 8}
    _run(pool, tmp_path / "a.sqlite", jitter_seed=5, **kw)
    _run(pool, tmp_path / "b.sqlite", jitter_seed=6, **kw)
    da, db = dump(tmp_path / "a.sqlite"), dump(tmp_path / "b.sqlite")
    for table in da:
        assert da[table] == db[table], table


# ----------------------------------------------------------------- kill and resume
def _untold_and_fresh(store: Path) -> tuple[int, int, int]:
    """(counted calls, answered calls not yet told, calls sent < 0.1 s ago in flight)."""
    try:
        con = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
        try:
            return con.execute(
                "SELECT coalesce(sum(counted),0), coalesce(sum(status='ok' AND call_id NOT IN "
                "(SELECT call_id FROM programs WHERE call_id IS NOT NULL)),0), "
                "coalesce(sum(status='pending' AND created_at > ?),0) FROM calls",
                (time.time() - 0.1,)).fetchone()
        finally:
            con.close()
    except sqlite3.Error:
        return (0, 0, 0)


def test_sigkill_and_resume_give_the_same_run(pool, tmp_path):
    """A run killed while calls are in flight and answered children wait for earlier
    ones, then resumed, makes the run an uninterrupted one makes."""
    kw = {"budget": 48, "max_in_flight": 8}
    reference = _run(pool, tmp_path / "ref.sqlite", jitter_seed=8, **kw)
    store = tmp_path / "kill.sqlite"
    with LLMTestServer(seeded_points_reply, latency_s=0.4, latency_jitter=0.5, jitter_seed=9,
                       cached_tokens=0) as srv:
        base = [sys.executable, "-m", "basevolve", "run", "--store", str(store),
                "--out", str(tmp_path / "out")]
        cmd = [*base, "--task", TASK, "--budget", "48", "--model", "test-model", "--params",
               "1e9", "--base-url", srv.base_url, "--allocator", "ucb", "--arms", "4",
               "--seed", "7", "--run-id", "det", "--max-in-flight", "8", "--deterministic"]
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        try:
            while time.monotonic() < deadline:
                counted, untold, fresh = _untold_and_fresh(store)
                if counted >= 12 and untold >= 1 and fresh >= 1:
                    break
                assert proc.poll() is None, "run ended before it could be killed"
                time.sleep(0.01)
            else:
                pytest.fail("run never had a fresh call in flight and an untold child")
            os.kill(proc.pid, signal.SIGKILL)
        finally:
            proc.wait()
        done = subprocess.run([*base, "--resume", "det", "--json"], capture_output=True,
                              text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    resumed = json.loads(done.stdout.strip().splitlines()[-1])
    assert resumed["calls_completed"] == 48 and resumed["calls_lost"] >= 1
    con = sqlite3.connect(store)
    same_seed = con.execute("SELECT count(*) FROM calls c JOIN calls l ON c.reissue_of = "
                            "l.call_id WHERE l.status = 'lost' AND c.seed = l.seed").fetchone()[0]
    con.close()
    assert same_seed == resumed["calls_lost"]  # a lost call is asked again with its seed
    assert resumed["best_score"] == reference["best_score"]
    ref, got = logical_run(tmp_path / "ref.sqlite"), logical_run(store)
    for part in ref:
        assert ref[part] == got[part], part


def test_a_failed_call_is_asked_again_in_its_place(pool, tmp_path):
    """Two calls the server refuses (400: not retried by the client, not counted) are
    sent again with their own seeds; the run is the run without the failures."""
    from basevolve.testing.faults import Fault

    _run(pool, tmp_path / "ref.sqlite", jitter_seed=10, budget=32, max_in_flight=8)
    with _server(11) as srv:
        srv.inject(Fault.HTTP_400, times=2)
        cfg = RunConfig(task=TASK, budget=32, model="test-model", params=1e9,
                        base_url=srv.base_url, allocator="ucb", arms=4, seed=7, run_id="det",
                        deterministic=True, max_in_flight=8)
        s = start_run(cfg, tmp_path / "faults.sqlite", pool=pool)
    assert s["calls_completed"] == 32
    con = sqlite3.connect(tmp_path / "faults.sqlite")
    failed = con.execute("SELECT count(*) FROM calls c JOIN calls f ON c.reissue_of = f.call_id "
                         "WHERE f.status = 'failed' AND f.counted = 0 AND c.seed = f.seed "
                         "AND c.status = 'ok'").fetchone()[0]
    con.close()
    assert failed == 2
    ref, got = logical_run(tmp_path / "ref.sqlite"), logical_run(tmp_path / "faults.sqlite")
    for part in ref:
        assert ref[part] == got[part], part


def test_python_api_takes_deterministic(tmp_path):
    """``basevolve.run(..., deterministic=True)``: the same run twice through the API."""
    import basevolve

    results = []
    for js in (12, 13):
        with _server(js) as srv:
            r = basevolve.run(TASK, 24, allocator="ucb", arms=3, base_url=srv.base_url,
                              model="test-model", params=1e9, store=tmp_path / f"{js}.sqlite",
                              seed=7, run_id="api", progress=False, deterministic=True,
                              window=30, max_in_flight=8)
        assert r.summary["deterministic"] is True and r.summary["window"] == 30
        results.append(dump(tmp_path / f"{js}.sqlite"))
    assert results[0] == results[1]


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize(("kw", "words"), [
    ({"window": 30}, "applies to --deterministic runs only"),
    ({"deterministic": True, "window": 8}, "--window 8 is below --max-in-flight 16"),
    ({"deterministic": True, "window": 0}, "--window must be an integer between 1"),
    ({"deterministic": True, "window": True}, "--window must be an integer"),
    ({"deterministic": "yes"}, "deterministic must be true or false"),
    ({"deterministic": True, **budget_fields(None, None, 100_000, None, 1)},
     "--deterministic needs a budget of C calls, not a tokens budget"),
    ({"deterministic": True, "count_eval_calls": True},
     "--deterministic needs a budget of C calls, not --count-eval-calls"),
])
def test_bad_deterministic_settings_are_one_clear_error(kw, words):
    from basevolve.errors import ConfigError

    base = {"task": TASK, "budget": 8, "run_id": "x"}
    with pytest.raises(ConfigError, match=words.replace("-", r"\-")):
        RunConfig(**{**base, **kw})


def test_window_default_covers_max_in_flight():
    assert RunConfig(task=TASK, budget=8, deterministic=True).decision_window == 24
    assert RunConfig(task=TASK, budget=64, deterministic=True,
                     max_in_flight=32).decision_window == 40
    assert RunConfig(task=TASK, budget=8, deterministic=True, window=100,
                     max_in_flight=32).decision_window == 100


def test_cli_refuses_window_without_deterministic(tmp_path, capsys):
    from basevolve.cli import main

    store = tmp_path / "s.sqlite"
    rc = main(["run", "--task", TASK, "--budget", "8", "--store", str(store), "--window", "30"])
    err = capsys.readouterr().err
    assert rc == 2 and "--window 30 applies to --deterministic runs only" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not store.exists()


def test_sweep_key_deterministic(tmp_path):
    from basevolve.sweep import load_sweep

    f = tmp_path / "s.toml"
    f.write_text('[sweep]\nname = "d"\n[defaults]\nbase_url = "http://127.0.0.1:9/v1"\n'
                 'deterministic = true\nwindow = 32\n[[grid]]\ntask = "min_max_distance"\n'
                 'budget = 8\nseeds = 2\n', encoding="utf-8")
    runs = load_sweep(f).runs
    assert len(runs) == 2
    assert all(r.config.deterministic and r.config.decision_window == 32 for r in runs)
    f.write_text(f.read_text().replace("deterministic = true", 'deterministic = "yes"'))
    from basevolve.errors import ConfigError

    with pytest.raises(ConfigError, match="deterministic"):
        load_sweep(f)
