"""Issue 24, item 3: calls lost to an interrupt are charged as ``--charge-unanswered``
documents -- their worst case under the default ``worst``, nothing under ``none``.

Before, a call in flight at Ctrl-C (or at a SIGKILL, found on resume) was stored with
``flops`` NULL and counted as 0 FLOPs whatever the policy.  Real ``basevolve run``
processes against the real test server (each reply held 30 s, so calls are in flight),
real SIGINT/SIGKILL, real store; the worst case is checked by hand from the stored
prompts: 2 x P x (bytes of the messages + 16 per message + 64, + max_tokens).
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

from basevolve.testing import LLMTestServer

SRC = str(Path(__file__).resolve().parents[2] / "src")
ENV = dict(os.environ, PYTHONPATH=SRC)
P, MAX_TOKENS = 1.5e9, 64


def _worst(messages_json: str) -> float:
    messages = json.loads(messages_json)
    bound = sum(len(m["content"].encode()) for m in messages) + 16 * len(messages) + 64
    return 2 * P * (bound + MAX_TOKENS)


def _calls(store: Path) -> list[dict]:
    con = sqlite3.connect(store)
    con.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in con.execute("SELECT * FROM calls ORDER BY call_id")]
    finally:
        con.close()


def _wait_until_two_sent(store: Path, proc: subprocess.Popen, err_path: Path,
                         srv: LLMTestServer) -> None:
    """Until the store holds 2 pending calls and the server holds both requests (it
    keeps each reply 30 s): two calls sent and not answered."""
    deadline = time.monotonic() + 120
    while True:
        assert proc.poll() is None and time.monotonic() < deadline, err_path.read_text()
        try:
            con = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
            try:
                pending = con.execute("SELECT count(*) FROM calls WHERE status='pending'"
                                      ).fetchone()[0]
            finally:
                con.close()
        except sqlite3.Error:  # not created yet
            pending = 0
        if pending >= 2 and srv.in_flight >= 2:
            return
        time.sleep(0.05)


def _stop_with_calls_in_flight(tmp_path: Path, srv: LLMTestServer, sig: int,
                              *extra: str) -> tuple[int, str]:
    store, err_path = tmp_path / "s.sqlite", tmp_path / "err.txt"
    cmd = [sys.executable, "-m", "basevolve", "run", "--task", "min_max_distance", "--budget",
           "4", "--depth", "2", "--base-url", srv.base_url, "--params", str(P), "--max-tokens",
           str(MAX_TOKENS), "--store", str(store), "--run-id", "cut", "--out",
           str(tmp_path / "o"), *extra]
    with err_path.open("w") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, env=ENV)
        try:
            _wait_until_two_sent(store, proc, err_path, srv)  # generation 1's calls
            proc.send_signal(sig)
            proc.wait(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return proc.returncode, err_path.read_text()


def _cli_json(*argv: str) -> dict | list:
    done = subprocess.run([sys.executable, "-m", "basevolve", *argv], capture_output=True,
                          text=True, env=ENV, timeout=180)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_sigint_charges_the_calls_in_flight_their_worst_case(tmp_path, sigint_handled):
    store = tmp_path / "s.sqlite"
    with LLMTestServer(latency_s=30.0) as srv:
        code, err = _stop_with_calls_in_flight(tmp_path, srv, signal.SIGINT)
        assert code == 130, err
        lost = [c for c in _calls(store) if c["status"] == "lost"]
        assert len(lost) == 2 and not [c for c in _calls(store) if c["status"] == "pending"]
        charged = sum(_worst(c["messages_json"]) for c in lost)
        assert [c["flops"] for c in lost] == pytest.approx([_worst(c["messages_json"])
                                                            for c in lost])
        # the interrupted run's own summary says how many were charged, and how much
        assert (f"2 call(s) lost in flight, 2 charged their worst case: {charged:.4g} FLOPs "
                "(--charge-unanswered worst)") in err
        assert "interrupted — continue with" in err
        (row,) = _cli_json("runs", "--store", str(store), "--json")
        assert (row["status"], row["calls_lost"], row["calls_lost_charged"]) == (
            "interrupted", 2, 2)
        assert row["flops_lost"] == pytest.approx(charged) == row["flops"]

        srv.latency_s = 0.0  # resume: the lost calls are asked again; the charge stays
        s = _cli_json("run", "--resume", "cut", "--store", str(store), "--out",
                      str(tmp_path / "o"), "--json")
    calls = _calls(store)
    answered = sum(c["flops"] for c in calls if c["status"] == "ok")
    assert s["calls_completed"] == 4 and s["calls_lost"] == 2 and s["calls_lost_charged"] == 2
    assert s["flops_lost"] == pytest.approx(charged)
    assert s["flops"] == pytest.approx(answered + charged) and s["flops_unmeasured"] >= charged
    assert len(srv.requests) == 6  # 2 lost + 4 answered: each lost call re-issued once


def test_sigkill_leaves_pending_calls_that_resume_charges(tmp_path):
    store = tmp_path / "s.sqlite"
    with LLMTestServer(latency_s=30.0) as srv:
        code, _ = _stop_with_calls_in_flight(tmp_path, srv, signal.SIGKILL)
        assert code == -signal.SIGKILL
        assert [c["status"] for c in _calls(store)] == ["pending", "pending"]
        srv.latency_s = 0.0
        s = _cli_json("run", "--resume", "cut", "--store", str(store), "--out",
                      str(tmp_path / "o"), "--json")
    lost = [c for c in _calls(store) if c["status"] == "lost"]
    charged = sum(_worst(c["messages_json"]) for c in lost)
    assert len(lost) == 2 and s["calls_lost_charged"] == 2 and s["calls_completed"] == 4
    assert s["flops_lost"] == pytest.approx(charged) and charged > 0


def test_charge_unanswered_none_charges_nothing(tmp_path, sigint_handled):
    store = tmp_path / "s.sqlite"
    with LLMTestServer(latency_s=30.0) as srv:
        code, err = _stop_with_calls_in_flight(tmp_path, srv, signal.SIGINT,
                                               "--charge-unanswered", "none")
    assert code == 130, err
    assert "2 call(s) lost in flight, charged 0 FLOPs (--charge-unanswered none)" in err
    lost = [c for c in _calls(store) if c["status"] == "lost"]
    assert len(lost) == 2 and [c["flops"] for c in lost] == [0.0, 0.0]
    (row,) = _cli_json("runs", "--store", str(store), "--json")
    assert row["calls_lost_charged"] == 0 and row["flops"] == 0.0


def test_a_flops_budget_stays_exact_with_the_charges(tmp_path, sigint_handled):
    """A lost call of a FLOPs budget is charged exactly what was reserved for it, so the
    totals and the budget ledger agree and the resumed run still never exceeds its limit."""
    store = tmp_path / "s.sqlite"
    limit = 1.0e14  # a handful of worst-case calls (~1.4e13 each)
    with LLMTestServer(latency_s=30.0) as srv:
        cmd = [sys.executable, "-m", "basevolve", "run", "--task", "min_max_distance",
               "--budget-flops", str(limit), "--breadth", "2", "--base-url", srv.base_url,
               "--params", str(P), "--max-tokens", str(MAX_TOKENS), "--store", str(store),
               "--run-id", "fl", "--out", str(tmp_path / "o")]
        err_path = tmp_path / "err.txt"
        with err_path.open("w") as err:
            proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, env=ENV)
            _wait_until_two_sent(store, proc, err_path, srv)
            proc.send_signal(signal.SIGINT)
            assert proc.wait(timeout=60) == 130
        lost = [c for c in _calls(store) if c["status"] == "lost"]
        reserved = [json.loads(c["meta_json"])["budget_reserved"] for c in lost]
        assert len(lost) == 2 and [c["flops"] for c in lost] == pytest.approx(reserved)
        (row,) = _cli_json("runs", "--store", str(store), "--json")
        assert row["budget_spent"] == pytest.approx(sum(reserved)) == row["flops"]
        srv.latency_s = 0.0
        s = _cli_json("run", "--resume", "fl", "--store", str(store), "--out",
                      str(tmp_path / "o"), "--json")
    assert s["status"] == "finished" and s["budget_spent"] <= limit
    assert s["calls_completed"] >= 2  # the budget carried calls beyond the lost ones
    assert s["flops"] == pytest.approx(s["budget_spent"])  # every charge counted once
    assert s["flops_lost"] == pytest.approx(sum(reserved))
