"""Run ids are safe file names wherever they become paths (issue 22, item 10).

``--run-id ../../../../tmp/x`` wrote ``best_program.py`` outside ``basevolve-out/``:
the id names the folder ``basevolve-out/RUN_ID``.  Every way a run gets an id (the CLI,
``basevolve.run(run_id=...)``, a sweep's derived ids) is checked; a refusal is one line,
exit 2 and no store written.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import basevolve
from basevolve.cli import main
from basevolve.config import MAX_RUN_ID, RunConfig, check_run_id, generate_run_id
from basevolve.testing import LLMTestServer

BAD_IDS = ["../../../../tmp/x", "..", ".", "a/b", "/abs", ".hidden", "-rf", "x y",
           "a\x1b[2Jb", "tab\there", "x" * (MAX_RUN_ID + 1), "\u00e9t\u00e9", "a\\b"]


@pytest.mark.parametrize("bad", BAD_IDS)
def test_cli_refuses_an_unsafe_run_id_before_writing(tmp_path: Path, monkeypatch, capsys,
                                                     bad: str) -> None:
    deep = tmp_path / "a" / "b" / "c" / "d"
    deep.mkdir(parents=True)
    monkeypatch.chdir(deep)
    code = main(["run", "--task", "min_max_distance", "--budget", "2", f"--run-id={bad}",
                 "--store", "s.sqlite"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "not a safe run id" in err and "\x1b" not in err
    assert not (deep / "s.sqlite").exists()
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["a", "b", "c", "d"]


@pytest.mark.parametrize("good", ["r1", "cli", "my_run-2.1+ucb", "A" * MAX_RUN_ID])
def test_safe_ids_pass_unchanged(good: str) -> None:
    assert check_run_id(good) == good


def test_generated_ids_are_safe_for_any_task_name() -> None:
    for task in ("min_max_distance", "/abs/path/task.py", "../x", "a b\x1b[2J", "é", "",
                 "x" * 500):
        rid = generate_run_id(task)
        assert check_run_id(rid) == rid
    cfg = RunConfig(task="/some/where/task file.py", budget=2)  # default id from a path
    assert "/" not in cfg.run_id and " " not in cfg.run_id


def test_python_api_refuses_an_unsafe_run_id(tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"
    with pytest.raises(basevolve.ConfigError, match="not a safe run id"):
        basevolve.run("min_max_distance", 2, run_id="../../escape", store=store,
                      out=tmp_path / "out", progress=False)
    assert not store.exists() and not (tmp_path / "out").exists()


def test_resume_of_a_stored_unsafe_id_needs_an_explicit_out(tmp_path: Path, monkeypatch,
                                                            capsys) -> None:
    """A store written before ids were checked may hold ``../escape``: --resume still
    finds the run, but writes nothing outside basevolve-out/ unless told where."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    with LLMTestServer(latency_s=0.0) as srv:
        assert main(["run", "--task", "min_max_distance", "--budget", "2", "--params", "1e9",
                     "--base-url", srv.base_url, "--store", "s.sqlite", "--run-id", "old",
                     "--out", str(tmp_path / "first")]) == 0
    con = sqlite3.connect("s.sqlite")  # what an older basevolve could have stored
    con.execute("PRAGMA foreign_keys=OFF")
    tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    for table in tables:
        cols = [r[1] for r in con.execute(f"PRAGMA table_info({table})")]
        if "run_id" in cols:
            con.execute(f"UPDATE {table} SET run_id = '../escape' WHERE run_id = 'old'")
    con.execute("UPDATE runs SET config_json = replace(config_json, '\"old\"', "
                "'\"../escape\"')")
    con.commit()
    con.close()
    capsys.readouterr()
    before = Path("s.sqlite").read_bytes()
    assert main(["run", "--resume", "../escape", "--store", "s.sqlite"]) == 2
    err = capsys.readouterr().err
    assert "--out" in err and len(err.strip().splitlines()) == 1
    assert Path("s.sqlite").read_bytes() == before
    assert not (tmp_path / "escape").exists() and not Path("basevolve-out").exists()
    out = tmp_path / "chosen"
    assert main(["run", "--resume", "../escape", "--store", "s.sqlite", "--out", str(out)]) == 0
    assert not (tmp_path / "escape").exists()
    assert {p.name for p in tmp_path.iterdir()} <= {"chosen", "first", "work"}
