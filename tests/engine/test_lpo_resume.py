"""A SIGKILLed `basevolve run --task prompt_optimization` resumes (issue 15): exactly C
mutation calls (or, with --count-eval-calls, calls + evaluation calls within C), every
valid template scored once on every question, the answer cache refilled from the store."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys

import pytest

from basevolve.testing.process import server_process

TASK = ["--task", "prompt_optimization"]


@pytest.fixture()
def server_url():
    """The test server as its own process (it must outlive the killed run)."""
    with server_process("--reply-function", "qa") as url:
        yield url


@pytest.mark.parametrize("extra", [[], ["--count-eval-calls", "--allocator", "ucb", "--arms", "2"]])
def test_resume_after_sigkill(tmp_path, server_url, kill_mid_run, extra):
    store = tmp_path / "s.sqlite"
    budget = 8 if not extra else 40
    cmd = [sys.executable, "-m", "basevolve", "run", *TASK, "--task-param", "limit=4",
           "--budget", str(budget), "--params", "1B", "--base-url", server_url,
           "--store", str(store), "--run-id", "r", "--max-in-flight", "2", *extra]
    kill_mid_run(cmd, store, 2)
    done = subprocess.run([sys.executable, "-m", "basevolve", "run", "--resume", "r", "--store",
                           str(store), "--json"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    con = sqlite3.connect(store)
    counted = con.execute("SELECT sum(counted) FROM calls").fetchone()[0]
    sent = con.execute("SELECT count(*) FROM eval_calls WHERE cache_hit = 0").fetchone()[0]
    assert summary["status"] == "finished" and summary["eval_calls"] == sent
    if not extra:
        assert counted == budget == summary["calls_completed"]
    else:  # calls and evaluation calls together never exceed C, lost calls included
        assert counted + sent == summary["budget_spent"] <= budget
        assert budget - summary["budget_spent"] < 1 + 4
    # every valid template of the run was scored on all 4 questions, once
    rows = con.execute("SELECT p.valid, count(e.idx) FROM programs p LEFT JOIN eval_calls e "
                       "USING (program_id) GROUP BY p.program_id").fetchall()
    assert all(n == (4 if valid else 0) for valid, n in rows)
