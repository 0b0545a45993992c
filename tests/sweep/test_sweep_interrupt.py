"""Issue 37, item 1 (and item 8's interrupted-sweep message): interrupting a sweep charges
only the calls that were sent and never answered.

A sweep with ``[[endpoints]] limit = 4`` against the test server at a latency far longer
than the test: four calls reach the server, the others wait behind the endpoint's
limiter.  After the interrupt the store must charge exactly the calls the server
received (their worst case, ``--charge-unanswered worst``) and 0 for the queued ones --
before the fix every pending call was charged its worst case.  Once on the local
executor (a real ``basevolve sweep`` subprocess and SIGINT) and once on the Ray executor
(a local cluster, ``ray.init(num_cpus=2)``; the runs live in the nodes' scratch stores).
"""

from __future__ import annotations

import _thread
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from _sweep_helpers import SMALL_GRID, rows

from basevolve.testing import LLMTestServer

SRC = str(Path(__file__).resolve().parents[2] / "src")
LIMIT = 4
GRID = SMALL_GRID.replace("limit = 16", f"limit = {LIMIT}")


def _pending(dbs: list[Path]) -> int:
    n = 0
    for db in dbs:
        try:
            n += rows(db, "SELECT count(*) n FROM calls WHERE status='pending'")[0]["n"]
        except sqlite3.Error:  # not created yet, or a table not yet there
            pass
    return n


def _wait_queued(srv: LLMTestServer, dbs: Any, timeout_s: float = 120.0) -> None:
    """Until the server holds LIMIT calls and more are stored pending (queued)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if srv.in_flight == LIMIT and _pending(dbs()) > LIMIT + 2:
            return
        time.sleep(0.2)
    raise AssertionError(f"no queue formed: {srv.in_flight} in flight, "
                         f"{_pending(dbs())} pending")


def _check_charges(dbs: list[Path], sent: int) -> int:
    """Only the calls the server received are charged; the number of lost calls."""
    lost = [r for db in dbs for r in rows(
        db, "SELECT call_id, flops, status FROM calls WHERE status IN ('lost', 'pending')")]
    assert lost and all(r["status"] == "lost" for r in lost)  # nothing left pending
    charged = [r for r in lost if r["flops"] > 0]
    assert sent == LIMIT
    assert len(charged) == sent, (len(charged), sent, len(lost))  # only the sent ones
    assert len(lost) > sent  # and calls were queued: they cost nothing
    assert all(r["flops"] == 0.0 for r in lost if r not in charged)
    return len(lost)


def test_interrupted_local_sweep_charges_only_sent_calls(tmp_path, sigint_handled):
    db = tmp_path / "sweep.sqlite"
    cfg = tmp_path / "sweep.toml"
    err_path = tmp_path / "err.txt"
    with LLMTestServer(latency_s=600.0) as srv:
        cfg.write_text(GRID.format(url=srv.base_url))
        cmd = [sys.executable, "-m", "basevolve", "sweep", str(cfg), "--store", str(db)]
        with err_path.open("w") as err:
            proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err,
                                    env=dict(os.environ, PYTHONPATH=SRC))
            try:
                _wait_queued(srv, lambda: [db])
                proc.send_signal(signal.SIGINT)
                proc.wait(timeout=120)
            finally:
                if proc.poll() is None:
                    proc.kill()
        sent = len(srv.requests)
    err_text = err_path.read_text()
    assert proc.returncode == 130, err_text
    lost = _check_charges([db], sent)
    # item 8: the interrupted sweep says how to continue and what the interrupt charged
    assert f"continue with `basevolve sweep {cfg} --store {db}`" in err_text, err_text
    assert f"{lost} call(s) lost in flight, {sent} charged their worst case" in err_text
    assert f"{lost - sent} never sent (charged 0)" in err_text, err_text
    assert "Traceback" not in err_text


ray = pytest.importorskip("ray")


@pytest.mark.slow
def test_interrupted_ray_sweep_charges_only_sent_calls(tmp_path, sigint_handled):
    from basevolve.sweep import run_sweep

    scratch = tmp_path / "scratch"
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        with LLMTestServer(latency_s=600.0) as srv:
            cfg = tmp_path / "sweep.toml"
            cfg.write_text(GRID.format(url=srv.base_url))

            def interrupt() -> None:
                _wait_queued(srv, lambda: sorted(scratch.glob("*.sqlite")))
                _thread.interrupt_main()  # Ctrl-C in the driver

            stopper = threading.Thread(target=interrupt, daemon=True)
            stopper.start()
            with pytest.raises(KeyboardInterrupt):
                run_sweep(cfg, tmp_path / "sweep.sqlite", executor="ray", live=False,
                          scratch_dir=scratch)
            stopper.join(timeout=5)
            dbs = sorted(scratch.glob("*.sqlite"))
            # the cancelled runs charge their calls in the actors, after the driver left
            deadline = time.monotonic() + 120
            while _pending(dbs) and time.monotonic() < deadline:
                time.sleep(0.2)
            sent = len(srv.requests)
    finally:
        ray.shutdown()
    _check_charges(dbs, sent)
