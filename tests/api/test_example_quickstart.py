"""examples/notebook_quickstart.py runs as a plain script: two runs, analysis, a plot."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_notebook_quickstart_runs_as_a_script(tmp_path):
    env = {**os.environ, "MPLBACKEND": "Agg",
           "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "notebook_quickstart.py"),
                           "--out", str(tmp_path), "--budget", "8"],
                          capture_output=True, text=True, env=env, timeout=240)
    assert done.returncode == 0, done.stderr
    assert "greedy T=4" in done.stdout and "base-ucb K=4" in done.stdout  # the analysis table
    png = tmp_path / "running_best.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    con = sqlite3.connect(tmp_path / "quickstart.sqlite")
    try:
        rows = con.execute("SELECT r.run_id, r.status, (SELECT sum(counted) FROM calls c "
                           "WHERE c.run_id = r.run_id) FROM runs r ORDER BY r.run_id").fetchall()
    finally:
        con.close()
    assert rows == [("base-ucb-K4", "finished", 8), ("greedy-T4", "finished", 8)]
