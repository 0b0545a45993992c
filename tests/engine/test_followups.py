"""A follow-up call continues the pull whose tell asked for it (engine/followups.py).

CodeEvolve under BaSE: before, the code call that must follow a meta-prompt call waited
until the bandit chose that population again, and the run's end dropped it (measured:
83 meta calls, 45 followed, of 128).  Now it is part of the meta call's pull, reserved
from the meta call's request on; the budget stays exact, and a kill and resume of an
issue-order run makes the same run.
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

from basevolve.config import RunConfig
from basevolve.engine import start_run
from basevolve.testing import LLMTestServer
from basevolve.testing.replies import island_reply

TASK = "min_max_distance"
CODEEVOLVE = {"num_islands": 2, "init_pop": 2, "migration_interval": 3}


def _config(url: str, budget: int, **kw: Any) -> RunConfig:
    return RunConfig(**{"task": TASK, "budget": budget, "base_url": url, "run_id": "fu",
                        "seed": 5, "protocol": "codeevolve", "protocol_params": CODEEVOLVE,
                        "allocator": "thompson_plain", "arms": 3, "max_in_flight": 4,
                        "deterministic": True, **kw})


def _pairs(store: Path) -> tuple[int, int, list[int]]:
    """(meta calls, meta calls whose code call is in the same pull, units per pull)."""
    con = sqlite3.connect(store)
    try:
        metas = con.execute("SELECT call_id, pull_id FROM calls WHERE purpose='meta_prompt' "
                            "AND reissue_of IS NULL").fetchall()
        followed = sum(1 for _, pull in metas if con.execute(
            "SELECT count(*) FROM calls WHERE pull_id=? AND purpose='mutation' AND "
            "meta_json LIKE '%meta_prompt_applied%'", (pull,)).fetchone()[0])
        units = [u for (u,) in con.execute(
            "SELECT units FROM allocations WHERE kind IN ('assign', 'ask') ORDER BY seq")]
        return len(metas), followed, units
    finally:
        con.close()


@pytest.mark.parametrize("in_flight", [1, 4])
def test_the_code_call_follows_its_meta_call_in_the_same_pull(pool, tmp_path, in_flight):
    store = tmp_path / "s.sqlite"
    with LLMTestServer(island_reply) as srv:
        summary = start_run(_config(srv.base_url, 40, max_in_flight=in_flight), store,
                            pool=pool)
        assert len(srv.requests) == 40
    assert summary["calls_completed"] == 40
    metas, followed, units = _pairs(store)
    assert metas >= 6  # init-pop and exploration jobs start with a meta-prompt call
    # every meta call got its code call in its own pull; the one exception the engine
    # cannot avoid: a meta call asked when a single call of the budget was left
    assert followed >= metas - 1
    assert sum(units) == 40 and max(units) == 2  # a meta pull is meta + code


def test_sigkill_and_resume_of_an_issue_order_run_make_the_same_run(pool, tmp_path):
    """Killed while pulls owe follow-ups, resumed: the same calls, pulls and rewards as
    an uninterrupted run (the extension is stored before the follow-up is sent)."""
    budget = 36
    with LLMTestServer(island_reply, latency_s=0.05, latency_jitter=0.9, jitter_seed=3,
                       cached_tokens=0) as srv:
        start_run(_config(srv.base_url, budget), tmp_path / "ref.sqlite", pool=pool)
    store = tmp_path / "kill.sqlite"
    with LLMTestServer(island_reply, latency_s=0.3, latency_jitter=0.5, jitter_seed=4,
                       cached_tokens=0) as srv:
        base = [sys.executable, "-m", "basevolve", "run", "--store", str(store),
                "--out", str(tmp_path / "out")]
        cmd = [*base, "--task", TASK, "--budget", str(budget), "--model", "test-model",
               "--params", "1e9",
               "--base-url", srv.base_url, "--protocol", "codeevolve",
               *[f"--protocol-param={k}={v}" for k, v in CODEEVOLVE.items()],
               "--allocator", "thompson_plain", "--arms", "3", "--seed", "5",
               "--run-id", "fu", "--max-in-flight", "4", "--deterministic"]
        log = tmp_path / "run.log"
        with log.open("wb") as err:  # a file, not a pipe: the progress lines never block
            proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
        deadline = time.monotonic() + 120
        try:
            while time.monotonic() < deadline:
                if _extended_and_in_flight(store):
                    break
                assert proc.poll() is None, log.read_text()[-2000:]
                time.sleep(0.01)
            else:
                pytest.fail("the run never had an extended pull and a call in flight")
            os.kill(proc.pid, signal.SIGKILL)
        finally:
            proc.wait()
        done = subprocess.run([*base, "--resume", "fu", "--json"], capture_output=True,
                              text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1])["calls_completed"] == budget
    assert logical_run(store) == logical_run(tmp_path / "ref.sqlite")


def _extended_and_in_flight(store: Path) -> bool:
    try:
        con = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
        try:
            return con.execute(
                "SELECT (SELECT count(*) FROM allocations WHERE units > 1) > 0 AND "
                "(SELECT count(*) FROM calls WHERE status='pending') > 0").fetchone()[0] == 1
        finally:
            con.close()
    except sqlite3.Error:
        return False
