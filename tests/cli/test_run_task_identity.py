"""Issue 12, item 1: a run remembers the task it was scored with, and a resume with a
changed task is refused unless ``--allow-task-change`` (which is recorded)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from run_support import StopAfter

from basevolve.cli import main
from basevolve.config import RunConfig
from basevolve.engine import start_run
from basevolve.testing import LLMTestServer

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "spread_points.py"



def _interrupted_run(tmp_path: Path, srv: LLMTestServer, task_file: Path) -> Path:
    store = tmp_path / "s.sqlite"
    cfg = RunConfig(task=str(task_file), budget=4, depth=4, base_url=srv.base_url,
                    run_id="r", max_in_flight=1)
    with pytest.raises(KeyboardInterrupt):
        start_run(cfg, store, progress=StopAfter(1))
    return store


def test_task_identity_stored_and_changed_task_refused(tmp_path, monkeypatch, capsys):
    task_file = tmp_path / "tasks" / "my_copy.py"
    task_file.parent.mkdir()
    shutil.copy(EXAMPLE, task_file)
    monkeypatch.chdir(tmp_path / "tasks")
    with LLMTestServer(latency_s=0.0) as srv:
        # a relative path on the command line is stored absolute
        store = _interrupted_run(tmp_path, srv, Path("my_copy.py"))
        con = sqlite3.connect(store)
        con.row_factory = sqlite3.Row
        row = dict(con.execute("SELECT * FROM runs").fetchone())
        con.close()
        assert row["task"] == "spread_points"  # the declared name, not the file name
        assert row["task_kind"] == "file" and row["task_path"] == str(task_file.resolve())
        assert json.loads(row["config_json"])["task"] == str(task_file.resolve())
        assert row["task_source"] == task_file.read_text() and len(row["task_sha256"]) == 64
        assert row["status"] == "interrupted"

        # edit the scorer (x10) and resume from another folder: refused, store untouched
        task_file.write_text(task_file.read_text().replace(
            "return ScoreResult(dmin / GRID_DISTANCE,", "return ScoreResult(10 * dmin / GRID_DISTANCE,"))
        monkeypatch.chdir(tmp_path)
        before = store.read_bytes()
        calls_before = len(srv.requests)
        code = main(["run", "--resume", "r", "--store", str(store), "--out", str(tmp_path / "o")])
        err = capsys.readouterr().err
        assert code == 2 and "changed since run 'r' started" in err
        assert "--allow-task-change" in err and str(task_file.resolve()) in err
        assert len(err.strip().splitlines()) == 1
        assert store.read_bytes() == before and len(srv.requests) == calls_before

        # with the flag it continues to exactly C calls and records the change
        code = main(["run", "--resume", "r", "--store", str(store), "--allow-task-change",
                     "--out", str(tmp_path / "o"), "--json"])
        assert code == 0
        summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
        assert summary["calls_completed"] == 4 and summary["task_changes"] == 1
        assert summary["task"] == "spread_points"
        con = sqlite3.connect(store)
        changes = con.execute("SELECT old_sha256, new_sha256, task_source FROM task_changes")
        (old, new, source), = changes.fetchall()
        assert old == row["task_sha256"] and new != old and "10 * dmin" in source
        con.close()


def test_unchanged_task_resumes_and_flag_needs_resume(tmp_path, capsys):
    with LLMTestServer(latency_s=0.0) as srv:
        store = _interrupted_run(tmp_path, srv, EXAMPLE)
        assert main(["run", "--resume", "r", "--store", str(store), "--json",
                     "--out", str(tmp_path / "o")]) == 0
        summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
        assert summary["calls_completed"] == 4 and summary["task_changes"] == 0
        assert summary["task_file"] == str(EXAMPLE)
        code = main(["run", "--task", "min_max_distance", "--budget", "2", "--store",
                     str(tmp_path / "t.sqlite"), "--allow-task-change", "--params", "1.5e9", "--base-url",
                     srv.base_url])
        assert code == 2 and "goes with --resume" in capsys.readouterr().err


def test_run_named_by_declared_task_name(tmp_path, capsys):
    with LLMTestServer(latency_s=0.0) as srv:
        code = main(["run", "--task", str(EXAMPLE), "--budget", "2", "--params", "1.5e9",
                     "--base-url", srv.base_url,
                     "--store", str(tmp_path / "s.sqlite"), "--out", str(tmp_path / "o"),
                     "--json"])
    assert code == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["run_id"].startswith("spread_points-") and summary["task"] == "spread_points"
    assert summary["best_score"] > 0  # the example's initial program scores and runs
