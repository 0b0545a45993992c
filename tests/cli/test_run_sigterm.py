"""Issue 37, item 2: SIGTERM (``timeout``, ``docker stop``, SLURM, Kubernetes) stops a run
as Ctrl-C does, and a run whose process died (SIGKILL) is shown as interrupted, not
running -- in ``basevolve runs``, its ``--json`` and the dashboard's runs list.

Real parts: a ``basevolve run`` subprocess against the test server, whose latency keeps
the calls in flight until the signal; the store is read back as a user would.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

from run_support import wait_for

from basevolve.testing import LLMTestServer

SRC = str(Path(__file__).resolve().parents[2] / "src")
ENV = dict(os.environ, PYTHONPATH=SRC)


def _start(tmp_path: Path, url: str, run_id: str) -> tuple[subprocess.Popen, Path, Path]:
    store, err_path = tmp_path / "s.sqlite", tmp_path / f"{run_id}.err"
    cmd = [sys.executable, "-m", "basevolve", "run", "--task", "min_max_distance",
           "--budget", "4", "--depth", "2", "--base-url", url, "--params", "1.5e9",
           "--store", str(store), "--run-id", run_id, "--out", str(tmp_path / run_id)]
    with err_path.open("w") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, env=ENV)
    wait_for(err_path, "in flight 2", 120.0)  # both calls of generation 1 sent
    return proc, store, err_path


def _runs_json(store: Path) -> dict[str, dict]:
    out = subprocess.run([sys.executable, "-m", "basevolve", "runs", "--store", str(store),
                          "--json"], capture_output=True, text=True, env=ENV, timeout=120)
    assert out.returncode == 0, out.stderr
    return {r["run_id"]: r for r in json.loads(out.stdout.strip().splitlines()[-1])}


def _stored_status(store: Path, run_id: str) -> str:
    con = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    try:
        return con.execute("SELECT status FROM runs WHERE run_id=?", (run_id,)).fetchone()[0]
    finally:
        con.close()


def test_sigterm_stops_like_ctrl_c(tmp_path, sigint_handled):
    with LLMTestServer(latency_s=600.0) as srv:
        proc, store, err_path = _start(tmp_path, srv.base_url, "term")
        try:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
    err = err_path.read_text()
    assert proc.returncode == 130, err  # as for Ctrl-C, not 143
    assert f"interrupted — continue with `basevolve run --resume term --store {store}`" in err
    assert "2 call(s) lost in flight, 2 charged their worst case" in err
    assert "Traceback" not in err
    assert _stored_status(store, "term") == "interrupted"
    assert _runs_json(store)["term"]["status"] == "interrupted"


def test_killed_run_is_shown_interrupted_not_running(tmp_path, sigint_handled):
    from basevolve.dashboard.db import ReadOnlyStore
    from basevolve.dashboard.runs import RunsQuery, runs_page

    with LLMTestServer(latency_s=600.0) as srv:
        proc, store, _ = _start(tmp_path, srv.base_url, "alive")
        try:
            # while the process lives, its run is running (the lock is held) ...
            assert _runs_json(store)["alive"]["status"] == "running"
            proc.kill()  # SIGKILL: nothing can be written on the way out
            proc.wait(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert _stored_status(store, "alive") == "running"  # what the store still says
    # ... and once it is gone, every reader shows what happened, at once
    assert _runs_json(store)["alive"]["status"] == "interrupted"
    text = subprocess.run([sys.executable, "-m", "basevolve", "runs", "--store", str(store)],
                          capture_output=True, text=True, env=ENV, timeout=120).stdout
    line = next(x for x in text.splitlines() if x.startswith("alive"))
    assert line.split()[1] == "interrupted", text
    page = runs_page(ReadOnlyStore(store), RunsQuery())
    assert [r["status"] for r in page["runs"]] == ["interrupted"]
