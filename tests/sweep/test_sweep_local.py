"""A small grid end to end on one endpoint: exact budgets, deterministic ids, a saturated
server, resume after SIGKILL, status from another process, bad input (issue 11).

Real test server (HTTP on 127.0.0.1), real SQLite store, real sandbox, real CLI.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _sweep_helpers import CALLS, RUNS, ledger, rows

from basevolve.cli import main
from basevolve.store import RunStore
from basevolve.sweep.config import load_sweep
from basevolve.sweep.status import sweep_status
from basevolve.testing import LLMTestServer
from basevolve.testing.process import server_process as spawn_test_server
from basevolve.testing.replies import PACKING_PROGRAM, seeded_packing_reply


def test_small_grid_end_to_end(tmp_path, capsys, grid_file):
    db = tmp_path / "sweep.sqlite"
    with LLMTestServer(seeded_packing_reply, latency_s=0.5) as srv:
        cfg = grid_file(srv.base_url)
        rc = main(["sweep", str(cfg), "--store", str(db), "--json"])
        out = capsys.readouterr().out
        assert rc == 0
        assert len(srv.requests) == CALLS  # nothing lost, nothing extra
        # every run has N <= 4, yet the one endpoint limit (16) is what the server saw
        assert srv.peak_in_flight == 16
    doc = json.loads(out.strip().splitlines()[-1])
    assert doc["finished"] == RUNS and doc["failed"] == []
    assert doc["endpoints"][srv.base_url.rstrip("/")] == {"limit": 16, "peak": 16}
    sweep = load_sweep(cfg)
    assert max(r.config.breadth for r in sweep.runs) <= 4
    got = ledger(db)
    assert sorted(got) == sorted(r.run_id for r in sweep.runs)  # the expanded ids, once each
    for run in sweep.runs:
        assert got[run.run_id]["status"] == "finished"
        assert got[run.run_id]["counted"] == run.config.budget  # exactly C
        assert got[run.run_id]["solutions"] == 1  # the best value, for pictures
    sweeps = rows(db, "SELECT DISTINCT json_extract(config_json, '$.sweep') s FROM runs")
    assert sweeps == [{"s": "small"}]  # the dashboard groups the runs by it
    # reliability summary: one row per cell with n = 2 seeds, thresholds from the config
    assert len(doc["cells"]) == 6 and all(c["n"] == 2 for c in doc["cells"])
    assert set(doc["cells"][0]["p_reach"]) == {"0.5", "0.75"}
    assert "basevolve report --store" in out

    # rerun: everything is finished, nothing is sent again
    with LLMTestServer(seeded_packing_reply) as srv2:
        rc = main(["sweep", str(grid_file(srv2.base_url)), "--store", str(db)])
        capsys.readouterr()
        assert rc == 0 and srv2.requests == []
    assert main(["sweep", str(cfg), "--store", str(db), "--status", "--json"]) == 0
    status = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert status == json.loads(json.dumps(sweep_status(load_sweep(cfg), db)))
    assert status["complete"] and status["runs"]["finished"] == RUNS
    assert status["calls"] == status["calls_total"] == CALLS
    assert main(["sweep", str(cfg), "--store", str(db), "--status"]) == 0
    assert f"{RUNS}/{RUNS} runs finished" in capsys.readouterr().out


@pytest.fixture()
def server_process(tmp_path):
    """The test server as its own process (it must outlive the killed sweep)."""
    replies = ["```python\n" + PACKING_PROGRAM.format(scale=s) + "```\n"
               for s in (0.4, 0.6, 0.8, 0.9)]
    (tmp_path / "replies.json").write_text(json.dumps(replies))
    with spawn_test_server("--replies-file", str(tmp_path / "replies.json"), latency=0.5) as url:
        yield url


def _progress(db: Path) -> tuple[int, int, int]:
    """(finished runs, counted calls, calls sent < 0.1 s ago still pending)."""
    try:
        fin = rows(db, "SELECT count(*) n FROM runs WHERE status='finished'")[0]["n"]
        c = rows(db, "SELECT coalesce(sum(counted),0) c, coalesce(sum(status='pending' AND "
                     "created_at > ?),0) p FROM calls", time.time() - 0.1)[0]
        return fin, c["c"], c["p"]
    except Exception:
        return 0, 0, 0


def test_sigkill_then_rerun_finishes_every_run_exactly(tmp_path, server_process, grid_file):
    db = tmp_path / "sweep.sqlite"
    cfg = grid_file(server_process)
    cmd = [sys.executable, "-m", "basevolve", "sweep", str(cfg), "--store", str(db)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            fin, _, fresh = _progress(db)
            if fin >= 1 and fresh >= 1:
                break
            assert proc.poll() is None, "the sweep ended before it could be killed"
            time.sleep(0.02)
        else:
            pytest.fail("the sweep never reached the kill point")
        live = sweep_status(load_sweep(cfg), db)  # from another process, while it runs
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    assert live["runs"]["running"] >= 1 and live["runs"]["finished"] >= 1
    after = sweep_status(load_sweep(cfg), db)
    assert after["runs"]["running"] == 0 and after["runs"]["interrupted"] >= 1
    assert not after["complete"]

    done = subprocess.run([*cmd, "--json"], capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    sweep = load_sweep(cfg)
    got = ledger(db)
    assert sorted(got) == sorted(r.run_id for r in sweep.runs)  # no duplicate, none lost
    for run in sweep.runs:
        assert got[run.run_id]["status"] == "finished"
        assert got[run.run_id]["counted"] == run.config.budget
    assert sum(r["lost"] for r in got.values()) >= 1  # the kill really cut calls short
    dup = rows(db, "SELECT run_id, call_index, count(*) n FROM calls GROUP BY 1, 2 HAVING n > 1")
    assert dup == []


def _store_bytes(db: Path) -> bytes:
    return db.read_bytes()


@pytest.mark.parametrize(("case", "needle"), [
    ("unknown-key", "unknown key grid[0].depht"),
    ("empty-grid", "grid[0].budget is an empty list"),
    ("depth", "--depth 3 does not divide --budget 8"),
    ("preset", "unknown preset 'papers'"),
    ("ray-address", "cannot reach the Ray cluster at '127.0.0.1:9'"),
])
def test_bad_input_exits_2_and_leaves_the_store_alone(tmp_path, capsys, case, needle):
    db = tmp_path / "kept.sqlite"
    RunStore(db).close()
    before = _store_bytes(db)
    good = ('[[grid]]\ntask = "circle_packing"\nmodel = "test-model"\nparams = 1e9\n'
            'base_url = "http://127.0.0.1:9/v1"\nbudget = 8\n')
    texts = {"unknown-key": good + "depht = 2\n", "empty-grid": good.replace("8", "[]"),
             "depth": good + "depth = 3\n", "preset": good, "ray-address": good}
    cfg = tmp_path / "bad.toml"
    cfg.write_text(texts[case])
    if case == "preset":
        argv = ["sweep", "init", "--preset", "papers", "--out", str(tmp_path / "p.toml")]
    elif case == "ray-address":
        pytest.importorskip("ray")
        with LLMTestServer() as srv:  # a live endpoint, so only the cluster is missing
            cfg.write_text(good.replace("http://127.0.0.1:9/v1", srv.base_url))
            argv = ["sweep", str(cfg), "--store", str(db), "--executor", "ray", "--address",
                    "127.0.0.1:9"]
            assert main(argv) == 2
            argv = []
    else:
        argv = ["sweep", str(cfg), "--store", str(db)]
    if argv:
        assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("basevolve: error:") and needle in err[0]
    assert "Traceback" not in err[0]
    assert _store_bytes(db) == before
    assert not Path(f"{db}.lock").exists()  # no run was ever locked
    assert not (tmp_path / "p.toml").exists()


def test_each_endpoint_has_its_own_limit(tmp_path, capsys):
    """One server per model, limits 3 and 5: each server sees exactly its own limit."""
    with LLMTestServer(seeded_packing_reply, latency_s=0.5) as a, \
            LLMTestServer(seeded_packing_reply, latency_s=0.5) as b:
        cfg = tmp_path / "two.toml"
        cfg.write_text(f"""
[[endpoints]]
base_url = "{a.base_url}"
limit = 3
[[endpoints]]
base_url = "{b.base_url}"
limit = 5
[[grid]]
task = "circle_packing"
model = ["model-a", "model-b"]
base_url = ["{a.base_url}", "{b.base_url}"]
zip = [["model", "base_url"]]
params = 1e9
budget = 4
depth = "powers-of-2"
seeds = 2
""")
        assert main(["sweep", str(cfg), "--store", str(tmp_path / "two.sqlite")]) == 0
        capsys.readouterr()
        assert (a.peak_in_flight, b.peak_in_flight) == (3, 5)
        assert len(a.requests) == len(b.requests) == 3 * 4 * 2  # 3 depths x C x 2 seeds
        assert {r["model"] for r in a.requests} == {"model-a"}
