"""SIGKILL a real `basevolve run --protocol <island>` subprocess mid-run, resume it and
check it finishes at exactly C counted calls with every call's purpose stored and each
lost call re-issued once.

Each island protocol under BaSE (K = 3), and ShinkaEvolve alone (its retry calls continue
the conversation with the failed reply, which resume must hand back from the store), and
AdaEvolve alone (its paradigm calls and error retries are follow-ups of an open iteration).
One process pair per case costs seconds, so the single-trajectory cases of OpenEvolve and
CodeEvolve are left to the in-process end-to-end tests (same replay code path).
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

import pytest

from basevolve.testing.process import server_process

TASK = "min_max_distance"
PARAMS = {
    "openevolve": ["num_islands=3", "migration_interval=2"],
    "codeevolve": ["num_islands=2", "init_pop=2", "migration_interval=3"],
    "shinkaevolve": ["migration_interval=3"],
    # the novelty judge gates evaluation (issue 23, item 5): a held proposal is re-derived
    # from the stored reply on resume and its judge call asked, or replayed, in order
    "shinkaevolve-judge": ["migration_interval=3", "novelty=judge", "novelty_threshold=0.6"],
    "adaevolve": ["migration_interval=3", "paradigm_window=2", "paradigm_threshold=0.6"],
}


@pytest.fixture()
def server_url():
    """The test server as its own process (it must outlive the killed run)."""
    with server_process("--reply-function", "island") as url:
        yield url


def _counts(store: Path) -> tuple[int, int]:
    """(counted calls, calls sent < 0.1 s ago and still pending)."""
    try:
        con = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
        try:
            return con.execute(
                "SELECT coalesce(sum(counted),0), coalesce(sum(status='pending' AND "
                "created_at > ?),0) FROM calls", (time.time() - 0.1,)).fetchone()
        finally:
            con.close()
    except sqlite3.Error:
        return (0, 0)


def _kill_mid_run(cmd: list[str], store: Path, min_counted: int) -> None:
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            counted, pending = _counts(store)
            if counted >= min_counted and pending >= 1:
                break
            assert proc.poll() is None, "run ended before it could be killed"
            time.sleep(0.02)
        else:
            pytest.fail("run never reached the kill point")
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()


@pytest.mark.slow
@pytest.mark.parametrize(("protocol", "arms"), [
    ("openevolve", 3), ("codeevolve", 3), ("shinkaevolve", 3), ("shinkaevolve", 1),
    ("shinkaevolve-judge", 1), ("adaevolve", 3), ("adaevolve", 1)])
def test_island_resume_after_sigkill_ends_at_exactly_c(server_url, tmp_path, protocol, arms):
    budget = 14
    store = tmp_path / "kill.sqlite"
    out = str(tmp_path / "out")
    cmd = [sys.executable, "-m", "basevolve", "run", "--task", TASK, "--base-url", server_url,
           "--params", "1e9", "--store", str(store), "--run-id", "victim", "--out", out, "--budget", str(budget),
           "--protocol", protocol.split("-")[0], "--max-in-flight", "3"]
    for p in PARAMS[protocol]:
        cmd += ["--protocol-param", p]
    if arms > 1:
        cmd += ["--allocator", "ucb", "--arms", str(arms)]
    _kill_mid_run(cmd, store, 4)
    done = subprocess.run(
        [sys.executable, "-m", "basevolve", "run", "--resume", "victim", "--store", str(store),
         "--out", out, "--json"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["calls_completed"] == budget and summary["status"] == "finished"
    con = sqlite3.connect(store)
    assert con.execute("SELECT sum(counted) FROM calls").fetchone()[0] == budget
    assert con.execute("SELECT count(*) FROM calls WHERE purpose IS NULL").fetchone()[0] == 0
    code_calls = con.execute("SELECT count(*) FROM calls WHERE counted=1 AND purpose IN "
                             "('mutation', 'fix', 'judge')").fetchone()[0]
    n, distinct = con.execute("SELECT count(*), count(DISTINCT call_id) FROM programs "
                              "WHERE is_initial=0").fetchone()
    assert n == distinct == code_calls  # one program per counted code call
    if protocol.endswith("judge"):  # judge calls happened and each gated its proposal
        assert con.execute("SELECT count(*) FROM calls WHERE purpose='judge' AND counted=1 "
                           "AND call_id IN (SELECT call_id FROM programs)").fetchone()[0] >= 1
    lost = con.execute("SELECT count(*) FROM calls WHERE status='lost'").fetchone()[0]
    reissued = con.execute("SELECT count(*) FROM calls WHERE reissue_of IN "
                           "(SELECT call_id FROM calls WHERE status='lost')").fetchone()[0]
    assert lost >= 1 and reissued == lost
    # retry turns carry the failed reply itself, also for retries asked after the resume
    fixes = [m for (m,) in con.execute("SELECT messages_json FROM calls WHERE purpose='fix'")]
    assert not any("(reply not available)" in m for m in fixes)
