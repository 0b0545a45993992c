"""AdaEvolve and ``adaptive_ucb`` through the real engine, sandbox, store and test server
(issue 26): a sweep of ``adaevolve`` alone, ``adaevolve`` under ``adaptive_ucb`` and
greedy under ``adaptive_ucb`` spends exactly C calls per run (16 in flight on the
endpoint); and a run killed with SIGKILL at ``--max-in-flight 1`` and resumed ends at
exactly C, re-sends the lost call's proposal once, and until the kill made the same calls
and got the same replies as the same run left alone.  (After the kill the two differ:
outside ``--deterministic`` a call's seed follows its call index, and the lost call
holds one.)  Alone and under BaSE (UCB, K = 3) the protocol is
also in ``test_island_e2e.py`` (exact C, purposes, call-for-call reproducibility) and
``test_island_resume.py`` (SIGKILL at 3 in flight)."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from basevolve.cli import main
from basevolve.sweep.config import load_sweep
from basevolve.testing import LLMTestServer
from basevolve.testing.process import server_process
from basevolve.testing.replies import island_reply

TASK = "min_max_distance"
PARAMS = ["migration_interval=3", "paradigm_window=2", "paradigm_threshold=0.6",
          "spawn_cooldown=2", "spawn_threshold=0.9"]
GRID = """\
[sweep]
name = "ada"

[[endpoints]]
base_url = "{url}"
limit = 16

[defaults]
task = "min_max_distance"
model = "test-model"
params = 1e9
base_url = "{url}"
budget = 14
seeds = 2
max_in_flight = 8

[[grid]]
protocol = "adaevolve"
protocol_params = {{ migration_interval = 3, paradigm_window = 2, paradigm_threshold = 0.6 }}

[[grid]]
protocol = "adaevolve"
protocol_params = {{ migration_interval = 3, paradigm_window = 2, paradigm_threshold = 0.6 }}
allocator = ["adaptive_ucb", "ucb"]
arms = 3

[[grid]]
allocator = "adaptive_ucb"
arms = 3
"""


def _rows(db: Path, sql: str, *args: object) -> list[tuple]:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return con.execute(sql, args).fetchall()
    finally:
        con.close()


def test_sweep_spends_exactly_c_per_run(tmp_path, capsys):
    cfg, db = tmp_path / "ada.toml", tmp_path / "ada.sqlite"
    with LLMTestServer(island_reply, latency_s=0.05) as srv:
        cfg.write_text(GRID.format(url=srv.base_url))
        sweep = load_sweep(cfg)
        runs = {r.run_id: r.config for r in sweep.runs}
        assert rc_ok(main(["sweep", str(cfg), "--store", str(db), "--json"]), capsys)
        assert len(srv.requests) == sum(c.budget for c in runs.values())
    cells = {(c.protocol, c.allocator, c.arms) for c in runs.values()}
    assert cells == {("adaevolve", "single", 1), ("adaevolve", "adaptive_ucb", 3),
                     ("adaevolve", "ucb", 3), ("greedy", "adaptive_ucb", 3)}
    counted = dict(_rows(db, "SELECT run_id, sum(counted) FROM calls GROUP BY run_id"))
    assert counted == {rid: c.budget for rid, c in runs.items()}
    assert {s for (s,) in _rows(db, "SELECT DISTINCT status FROM runs")} == {"finished"}
    purposes = {p for (p,) in _rows(db, "SELECT DISTINCT c.purpose FROM calls c JOIN runs r "
                                        "USING (run_id) WHERE r.protocol = 'adaevolve'")}
    assert "mutation" in purposes and purposes <= {"mutation", "fix", "paradigm"}
    # adaptive_ucb chose every bandit pull, with its own state in the stored summary
    for rid, c in runs.items():
        if c.allocator != "adaptive_ucb":
            continue
        pulls = _rows(db, "SELECT kind, units FROM allocations WHERE run_id = ? AND "
                          "kind IN ('assign', 'ask') ORDER BY seq", rid)
        kinds = [k for k, _ in pulls]
        # every call belongs to a pull; a follow-up (paradigm, fix) continues the pull
        # whose tell asked for it (engine/followups.py), so pulls <= C calls
        assert sum(u for _, u in pulls) == c.budget and kinds.count("assign") == 3
        assert all(u >= 1 for _, u in pulls)
        (summary,) = _rows(db, "SELECT summary_json FROM allocations WHERE run_id = ? AND "
                               "kind = 'tell' ORDER BY seq DESC LIMIT 1", rid)[0]
        last = json.loads(summary)
        assert last["allocator"] == "adaptive_ucb" and sum(last["visits"]) >= 3


def rc_ok(rc: int, capsys) -> bool:
    err = capsys.readouterr().err
    assert rc == 0, err
    return True


def _calls(db: Path) -> list[tuple]:
    """What a run sent and got, in order, without the lost call (re-sent as it was)."""
    return _rows(db, "SELECT trajectory, generation, slot, purpose, seed, messages_json, text "
                     "FROM calls WHERE status != 'lost' ORDER BY call_index")


def _count(db: Path, status: str) -> int:
    """Calls in ``status`` (0 while the store is not there or not yet set up)."""
    try:
        return _rows(db, "SELECT count(*) FROM calls WHERE status = ?", status)[0][0]
    except sqlite3.Error:
        return 0


@pytest.mark.slow
@pytest.mark.parametrize(("protocol", "allocator", "arms"), [
    ("adaevolve", "single", 1), ("adaevolve", "adaptive_ucb", 3), ("greedy", "adaptive_ucb", 3)])
def test_kill_and_resume_replays_exactly(tmp_path, protocol, allocator, arms):
    budget = 16
    with server_process("--reply-function", "island", latency=0.25) as url:
        def cmd(store: Path) -> list[str]:
            out = [sys.executable, "-m", "basevolve", "run", "--task", TASK, "--base-url", url,
                   "--params", "1e9", "--store", str(store), "--run-id", "r", "--seed", "4",
                   "--out", str(tmp_path / store.stem), "--budget", str(budget),
                   "--protocol", protocol, "--allocator", allocator, "--arms", str(arms),
                   "--max-in-flight", "1"]
            for p in PARAMS if protocol == "adaevolve" else ():
                out += ["--protocol-param", p]
            return out

        whole = tmp_path / "whole.sqlite"
        subprocess.run(cmd(whole), check=True, capture_output=True, timeout=300)
        killed = tmp_path / "killed.sqlite"
        proc = subprocess.Popen(cmd(killed), stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                if _count(killed, "ok") >= budget // 2 and _count(killed, "pending"):
                    break
                assert proc.poll() is None, "the run ended before it could be killed"
                time.sleep(0.02)
            else:
                pytest.fail("the run never reached the kill point")
            os.kill(proc.pid, signal.SIGKILL)
        finally:
            proc.wait()
        resumed = subprocess.run(
            [sys.executable, "-m", "basevolve", "run", "--resume", "r", "--store", str(killed),
             "--out", str(tmp_path / "killed"), "--json"], capture_output=True, text=True,
            timeout=300)
        assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout.strip().splitlines()[-1])["calls_completed"] == budget
    for db in (whole, killed):
        assert _rows(db, "SELECT sum(counted) FROM calls")[0][0] == budget
        assert _rows(db, "SELECT count(*) FROM calls WHERE purpose IS NULL")[0][0] == 0
        code_calls = _rows(db, "SELECT count(*) FROM calls WHERE counted = 1 AND purpose IN "
                               "('mutation', 'fix')")[0][0]
        n, distinct = _rows(db, "SELECT count(*), count(DISTINCT call_id) FROM programs "
                                "WHERE is_initial = 0")[0]
        assert n == distinct == code_calls  # one program per counted code call
    (lost,) = _rows(killed, "SELECT call_index, trajectory, generation, slot, purpose, "
                            "messages_json FROM calls WHERE status = 'lost'")
    again = _rows(killed, "SELECT call_index, trajectory, generation, slot, purpose, "
                          "messages_json FROM calls WHERE reissue_of = (SELECT call_id FROM "
                          "calls WHERE status = 'lost')")
    assert len(again) == 1 and again[0][1:] == lost[1:]  # the lost proposal, sent again
    # up to the kill the two runs are the same run: the same seed gives the same calls
    # and replies, and the resumed replay rebuilt that state (a divergence stops it)
    assert _calls(killed)[: lost[0]] == _calls(whole)[: lost[0]]
    if protocol == "adaevolve":
        assert any(c[3] == "paradigm" for c in _calls(killed))
