"""``kill -9`` right after a run is marked finished; its resume writes what was lost
(issue 22, item 5).

The run's status becomes ``finished`` before its outputs are written: ``best_program.py``,
the picture (the best program runs once more), the best value in ``solutions`` and the
``run_summary`` row.  A process killed in between left none of them, and a resume only
printed "best program -".  Here a real ``basevolve run`` process is SIGKILLed while it
is deterministically inside that window (the task's ``draw`` announces itself with a
marker file and then waits), and the resume, by the CLI and by ``resume_run_async``,
must write every missing piece without touching what the run stored.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from basevolve.engine.runner import resume_run_async
from basevolve.store import RunStore
from basevolve.testing.process import server_process

TASK_FILE = '''"""Twelve points; draw() waits while HOLD_DRAW names a marker file (a test task)."""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from basevolve.tasks.base import REFERENCE_TOL, ScoreResult, Task

PROGRAM = """
def spread():
    return [[i / 3.0, j / 2.0] for i in range(4) for j in range(3)]
"""


class HoldPicture(Task):
    name = "hold_picture"
    entry = "spread"
    description = "12 grid points; the picture can be held"
    timeout_s = 10.0

    @property
    def initial_program(self) -> str:
        return PROGRAM

    @property
    def system_message(self) -> str:
        return "Return the whole program in one Python code block."

    def score_value(self, value: Any, *, tol: float = REFERENCE_TOL) -> ScoreResult:
        try:
            points = [(float(x), float(y)) for x, y in value]
        except (TypeError, ValueError):
            return ScoreResult(0.0, False, {}, "expected [x, y] pairs")
        return ScoreResult(float(len(points)), True, {})

    def draw(self, value: Any, path: Path) -> None:
        marker = os.environ.get("HOLD_DRAW")
        if marker:  # inside the window between "finished" and the summary row: wait here
            Path(marker).write_text("drawing")
            time.sleep(3600)
        Path(path).write_bytes(b"a picture of %d points" % len(value))
'''


def _query(store: Path, sql: str) -> list[tuple]:
    con = sqlite3.connect(store)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def _kill_while_drawing(cmd: list[str], marker: Path) -> None:
    proc = subprocess.Popen(cmd, env={**os.environ, "HOLD_DRAW": str(marker)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300  # a backstop only: the run waits for the kill
    try:
        while not marker.exists():
            assert proc.poll() is None, "the run ended before it drew its picture"
            assert time.monotonic() < deadline, "the run never reached its picture"
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    assert proc.returncode == -signal.SIGKILL


def test_a_run_killed_after_finishing_gets_its_outputs_on_resume(tmp_path: Path) -> None:
    task = tmp_path / "hold_task.py"
    task.write_text(TASK_FILE)
    store, marker = tmp_path / "s.sqlite", tmp_path / "drawing"
    env = {k: v for k, v in os.environ.items() if k != "HOLD_DRAW"}
    with server_process(latency=0.0) as url:
        _kill_while_drawing(
            [sys.executable, "-m", "basevolve", "run", "--task", str(task), "--base-url", url,
             "--params", "1e9", "--budget", "2", "--store", str(store), "--run-id", "v",
             "--out", str(tmp_path / "killed")], marker)
    # the window: finished, but no summary row and no stored solution
    assert _query(store, "SELECT status FROM runs") == [("finished",)]
    assert _query(store, "SELECT count(*) FROM run_summary") == [(0,)]
    assert _query(store, "SELECT count(*) FROM solutions") == [(0,)]
    calls_before = _query(store, "SELECT call_id, status, counted, raw_text FROM calls")
    programs_before = _query(store, "SELECT program_id, code, score FROM programs")
    async_copy = tmp_path / "copy.sqlite"  # the same killed state, for the async path
    for suffix in ("", "-wal"):
        if Path(f"{store}{suffix}").exists():
            shutil.copy(f"{store}{suffix}", f"{async_copy}{suffix}")

    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "basevolve", "run", "--resume", "v", "--store",
                           str(store), "--out", str(out), "--json"], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["resumed"] is False and summary["repaired"] is True
    assert summary["best_program"] == str(out / "best_program.py")
    assert summary["picture"] == str(out / "best.png")
    best = _query(store, f"SELECT code FROM programs WHERE program_id={summary['best_program_id']}")
    assert (out / "best_program.py").read_text() == best[0][0]
    assert (out / "best.png").read_bytes() == b"a picture of 12 points"
    row = _query(store, "SELECT best_program_id, calls_completed, summary_json FROM run_summary")
    assert [(r[0], r[1]) for r in row] == [(summary["best_program_id"], 2)]
    assert json.loads(row[0][2])["best_program"] == str(out / "best_program.py")
    assert _query(store, "SELECT program_id FROM solutions") == [(summary["best_program_id"],)]
    # nothing the run stored was redone or changed
    assert _query(store, "SELECT call_id, status, counted, raw_text FROM calls") == calls_before
    assert _query(store, "SELECT program_id, code, score FROM programs") == programs_before

    again = subprocess.run([sys.executable, "-m", "basevolve", "run", "--resume", "v", "--store",
                            str(store), "--json"], env=env, capture_output=True, text=True,
                           timeout=600)
    assert again.returncode == 0, again.stderr[-2000:]
    assert json.loads(again.stdout.strip().splitlines()[-1])["repaired"] is False

    with RunStore(async_copy, create=False) as copy:
        repaired = asyncio.run(resume_run_async("v", copy))
    assert repaired["repaired"] is True and repaired["resumed"] is False
    assert _query(async_copy, "SELECT best_program_id FROM run_summary") == [
        (summary["best_program_id"],)]
    assert _query(async_copy, "SELECT program_id FROM solutions") == [
        (summary["best_program_id"],)]
