"""SIGKILL a real `basevolve run` subprocess mid-run, resume it, check the ledger."""

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


@pytest.fixture()
def server(tmp_path, scripted):
    """The test server as a separate process (it must outlive the killed run)."""
    replies = scripted(seed=21)
    texts = [replies({}, i) for i in range(40)]
    (tmp_path / "replies.json").write_text(json.dumps(texts))
    with server_process("--replies-file", str(tmp_path / "replies.json")) as url:
        yield url, {texts[i].strip(): replies.scores[i] for i in range(len(texts))}


def _counts(store: Path) -> tuple[int, int]:
    """(counted calls, calls sent < 0.1 s ago and still pending): kill while one is fresh,
    so it is certainly still in flight (the server takes 0.3 s) when SIGKILL lands."""
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


def _base_cmd(url: str, store: Path, tmp_path: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "basevolve", "run", "--task", TASK, "--base-url", url, "--params", "1.5e9",
            "--store", str(store), "--run-id", "victim", "--out", str(tmp_path / "out"), *extra]


def _resume(store: Path, tmp_path: Path) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "basevolve", "run", "--resume", "victim", "--store", str(store),
         "--out", str(tmp_path / "out"), "--json"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def _check_ledger(store: Path, budget: int) -> sqlite3.Connection:
    con = sqlite3.connect(store)
    assert con.execute("SELECT sum(counted) FROM calls").fetchone()[0] == budget
    assert con.execute("SELECT status FROM runs").fetchone()[0] == "finished"
    n, distinct = con.execute("SELECT count(*), count(DISTINCT call_id) FROM programs "
                              "WHERE is_initial=0").fetchone()
    assert n == distinct == budget  # one program per counted call, no duplicates
    # every proposal (trajectory, generation, slot) was answered exactly once
    dup = con.execute("SELECT count(*) FROM (SELECT c.trajectory, c.generation, c.slot, count(*) n "
                      "FROM programs p JOIN calls c USING (call_id) "
                      "GROUP BY 1, 2, 3 HAVING n > 1)").fetchone()[0]
    assert dup == 0
    lost = con.execute("SELECT count(*) FROM calls WHERE status='lost'").fetchone()[0]
    reissued = con.execute("SELECT count(*) FROM calls WHERE reissue_of IN "
                           "(SELECT call_id FROM calls WHERE status='lost')").fetchone()[0]
    assert lost >= 1 and reissued == lost  # killed with calls in flight; each re-issued once
    return con


def _check_scores(con: sqlite3.Connection, expected: dict[str, float], best: float) -> None:
    """Every stored child scores what its reply is known to score; best = max stored."""
    rows = con.execute("SELECT c.text, p.score FROM programs p JOIN calls c USING (call_id)").fetchall()
    for text, score in rows:
        assert score == pytest.approx(expected[text.strip()])
    init = con.execute("SELECT score FROM programs WHERE is_initial=1").fetchone()[0]
    assert best == pytest.approx(max([init, *(s for _, s in rows)]))


def test_greedy_resume_after_sigkill(server, tmp_path):
    url, expected = server
    store = tmp_path / "kill.sqlite"
    _kill_mid_run(_base_cmd(url, store, tmp_path, "--budget", "12", "--depth", "3"), store, 4)
    s = _resume(store, tmp_path)
    assert s["calls_completed"] == 12 and s["status"] == "finished" and s["resumed"]
    con = _check_ledger(store, 12)
    assert s["calls_lost"] == con.execute("SELECT count(*) FROM calls WHERE status='lost'").fetchone()[0]
    _check_scores(con, expected, s["best_score"])


def test_base_resume_after_sigkill_replays_allocator(server, tmp_path):
    url, expected = server
    store = tmp_path / "kill.sqlite"
    # 4 slots for 3 arms: arms share slots, so the kill lands with a trajectory holding
    # several calls in flight (asynchronous trajectories, issue 9)
    cmd = _base_cmd(url, store, tmp_path, "--budget", "12", "--arms", "3", "--allocator", "ucb",
                    "--max-in-flight", "4")
    _kill_mid_run(cmd, store, 5)
    s = _resume(store, tmp_path)
    assert s["calls_completed"] == 12 and sum(s["pulls_per_arm"]) == 12
    con = _check_ledger(store, 12)
    kinds = [k for (k,) in con.execute("SELECT kind FROM allocations ORDER BY seq")]
    assert kinds.count("assign") == 3 and kinds.count("ask") == 9 and kinds.count("tell") == 12
    _check_scores(con, expected, s["best_score"])


class _CrashingPool:
    """Delegates to the real pool but dies on evaluation number ``crash_at``."""

    def __init__(self, pool, crash_at: int) -> None:
        self.pool, self.crash_at, self.n = pool, crash_at, 0

    async def arun(self, code, entry, timeout_s, seed=None):
        self.n += 1
        if self.n == self.crash_at:
            raise RuntimeError("simulated crash during evaluation")
        return await self.pool.arun(code, entry, timeout_s=timeout_s, seed=seed)


@pytest.mark.parametrize("max_in_flight", [1, 4])
def test_resume_after_crash_during_evaluation(scripted, pool, tmp_path, max_in_flight):
    """A crash between completion and evaluation: the stored reply is evaluated on
    resume without a new LLM call; calls in flight at the crash are lost and re-issued."""
    from basevolve.config import RunConfig
    from basevolve.engine import resume_run, start_run
    from basevolve.testing import LLMTestServer

    store = tmp_path / "s.sqlite"
    with LLMTestServer(scripted(seed=8), latency_s=0.05) as srv:
        cfg = RunConfig(task=TASK, budget=8, depth=2, base_url=srv.base_url, run_id="crash",
                        max_in_flight=max_in_flight)
        with pytest.raises(RuntimeError, match="simulated crash"):
            start_run(cfg, store, pool=_CrashingPool(pool, crash_at=4))  # 1 = initial program
        con = sqlite3.connect(store)
        assert con.execute("SELECT status FROM runs").fetchone()[0] == "failed"
        unevaluated = con.execute("SELECT count(*) FROM calls WHERE status='ok' AND call_id NOT IN "
                                  "(SELECT call_id FROM programs WHERE call_id IS NOT NULL)"
                                  ).fetchone()[0]
        assert unevaluated >= 1
        s = resume_run("crash", store, pool=pool)
        assert len(srv.requests) == 8 + s["calls_lost"]
    assert s["calls_completed"] == 8 and s["status"] == "finished"
    if max_in_flight == 1:
        assert s["calls_lost"] == 0  # sequential: nothing was in flight at the crash
    _check_ledger_no_lost(con, 8)


def _check_ledger_no_lost(con: sqlite3.Connection, budget: int) -> None:
    assert con.execute("SELECT sum(counted) FROM calls").fetchone()[0] == budget
    n, distinct = con.execute("SELECT count(*), count(DISTINCT call_id) FROM programs "
                              "WHERE is_initial=0").fetchone()
    assert n == distinct == budget


def test_crash_during_initial_evaluation_then_two_resumes(scripted, pool, tmp_path):
    """Dying while the *initial* program is evaluated (run row stored, nothing else):
    resume evaluates it once and spends exactly C; a second resume of the finished run
    spends nothing and rewrites nothing."""
    from basevolve.config import RunConfig
    from basevolve.engine import resume_run, start_run
    from basevolve.testing import LLMTestServer

    store = tmp_path / "s.sqlite"
    with LLMTestServer(scripted(seed=9), latency_s=0.01) as srv:
        cfg = RunConfig(task=TASK, budget=6, base_url=srv.base_url, run_id="init",
                        allocator="ucb", arms=2)
        with pytest.raises(RuntimeError, match="simulated crash"):
            start_run(cfg, store, pool=_CrashingPool(pool, crash_at=1))
        con = sqlite3.connect(store)
        assert con.execute("SELECT count(*) FROM programs").fetchone()[0] == 0
        assert len(srv.requests) == 0
        s = resume_run("init", store, pool=pool)
        assert s["calls_completed"] == 6 and s["status"] == "finished" and s["resumed"]
        before = store.read_bytes()
        again = resume_run("init", store, pool=pool)
        assert len(srv.requests) == 6
    assert again["resumed"] is False and again["calls_completed"] == 6
    assert store.read_bytes() == before
    assert con.execute("SELECT count(*) FROM programs WHERE is_initial=1").fetchone()[0] == 1
    _check_ledger_no_lost(con, 6)


def test_resume_of_a_run_still_driven_elsewhere_is_refused(tmp_path):
    """Two drivers of one run used to race (each marking the other's in-flight calls
    lost, both spending calls until one hit 'call N is not pending').  The run lock makes
    the second one refuse up front; another run id of the same store is not blocked,
    and the lock dies with its holder (a killed run stays resumable)."""
    from basevolve.errors import StoreError
    from basevolve.store.run_lock import run_lock

    store = tmp_path / "s.sqlite"
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time\nfrom basevolve.store.run_lock import run_lock\n"
         f"with run_lock({str(store)!r}, 'busy'):\n    print('locked', flush=True)\n"
         "    time.sleep(60)\n"],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(StoreError, match="another process"), run_lock(store, "busy"):
            pass
        with run_lock(store, "other"):  # a different run of the same store
            pass
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    with run_lock(store, "busy"):  # released by the kernel when the holder died
        pass
