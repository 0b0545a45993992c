"""Issue 36, items 1, 2 and 7: declaring several objectives on the command line, in a
task file and in an OpenEvolve directory's config; every bad declaration is one line,
exit 2, with nothing stored (the store file absent, or unchanged when it held a run).

Real runs through the CLI against the repo's test server, real sandboxes, a real SQLite
store.  The task file's scorer reports metrics whose values the tests know: a = 1, b = 2
for the initial program, and ``bad`` = NaN.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import moocore
import numpy as np
import pytest

from basevolve.cli import main
from basevolve.testing import LLMTestServer

TASK = '''
import math
import basevolve


class TwoNumbers(basevolve.Task):
    name = "two_numbers"
    entry = "solve"
    timeout_s = 20.0
    initial_program = ("# EVOLVE-BLOCK-START\\ndef solve():\\n    return [1.0, 2.0]\\n"
                       "# EVOLVE-BLOCK-END\\n")
    system_message = "Return two numbers [a, b]: a large, b small."
    DECLARED

    def score_value(self, value, *, tol=1e-6):
        try:
            a, b = (float(v) for v in value)
        except Exception:
            return basevolve.ScoreResult(score=0.0, valid=False, error="not two numbers")
        return basevolve.ScoreResult(score=a - b, valid=True,
                                     metrics={"a": a, "b": b, "bad": math.nan, "label": "x"})
'''


def reply(body: dict, index: int) -> str:
    """Child ``i``: a trade-off [a, b] on a line, so several children are on the front."""
    a, b = 1.0 + (index % 5), 2.0 + 0.5 * (index % 5) + 0.3 * (index % 3)
    return f"```python\ndef solve():\n    return [{a}, {b}]\n```\n"


def task_file(tmp_path: Path, declared: str = "") -> Path:
    path = tmp_path / "two_numbers.py"
    path.write_text(TASK.replace("DECLARED", declared))
    return path


def _run(url: str, store: Path, task: Path | str, *extra: str, run_id: str = "mo") -> int:
    return main(["run", "--task", str(task), "--budget", "6", "--base-url", url,
                 "--model", "test-model", "--params", "1e9", "--store", str(store),
                 "--out", str(store.parent / "out"), "--run-id", run_id, "--seed", "3",
                 "--allocator", "ucb", "--arms", "2", "--reward", "improvement", *extra])


def _digest(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None


def rows_of(store: Path, sql: str) -> list[tuple]:
    con = sqlite3.connect(store)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def _config(store: Path, run_id: str) -> dict:
    con = sqlite3.connect(store)
    try:
        return json.loads(con.execute("SELECT config_json FROM runs WHERE run_id=?",
                                      (run_id,)).fetchone()[0])
    finally:
        con.close()


BAD = [
    (["--objectives", "a:max,zz:min"], "objective 'zz' is not a metric the initial program's "
     "evaluation reports"),
    (["--objectives", "a:max,b:up"], "objective 'b' has direction 'up'; use 'max' or 'min'"),
    (["--objectives", "a:max,bad:min"], "objective 'bad' of the initial program is nan"),
    (["--objectives", "a:max,label:min"], "objective 'label' of the initial program is str"),
    (["--objectives", "a:max"], "1 objective declared; declare two or more"),
    (["--objectives", "a:max,b:min", "--reference-point", "5,10"],
     "--reference-point: a = 5 is above the initial program's 1"),
    (["--objectives", "a:max,b:min", "--reference-point", "0,nan"],
     "--reference-point: value 'nan' for 'b' is not a finite number"),
    (["--objectives", "a:max,b:min", "--reference-point", "0"],
     "--reference-point: 1 values for 2 objectives"),
    (["--reference-point", "0,3"], "--reference-point needs --objectives"),
    (["--reward-front", "run"], "--reward-front needs --objectives"),
]


@pytest.mark.parametrize(("extra", "message"), BAD, ids=[" ".join(b[0]) for b in BAD])
def test_bad_declaration_is_one_line_exit_2_nothing_stored(tmp_path, capsys, extra, message):
    task = task_file(tmp_path)
    with LLMTestServer(reply) as srv:
        # a fresh store: the file is never created
        store = tmp_path / "new.sqlite"
        assert _run(srv.base_url, store, task, *extra) == 2
        err = capsys.readouterr().err.strip()
        assert message in err and len(err.splitlines()) == 1 and "Traceback" not in err
        assert not store.exists() and srv.n_requests == 0
        # a store holding a run: byte for byte unchanged
        held = tmp_path / "held.sqlite"
        assert _run(srv.base_url, held, task, run_id="first") == 0
        before, sent = _digest(held), srv.n_requests
        capsys.readouterr()
        assert _run(srv.base_url, held, task, *extra, run_id="second") == 2
        assert message in capsys.readouterr().err
        assert _digest(held) == before and srv.n_requests == sent


def test_cli_objectives_stored_with_the_derived_reference_point(tmp_path, capsys):
    task = task_file(tmp_path)
    store = tmp_path / "s.sqlite"
    with LLMTestServer(reply) as srv:
        assert _run(srv.base_url, store, task, "--objectives", "a:max,b:min", "--json") == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["calls_completed"] == 6
    cfg = _config(store, "mo")
    assert cfg["objectives"] == {"a": "max", "b": "min"}
    # derived once from the initial program's (1, 2): each side worsened by max(|v|, 1)
    assert cfg["reference_point"] == [0.0, 4.0] and cfg["reward_front"] == "trajectory"
    con = sqlite3.connect(store)
    n_initial = con.execute("SELECT count(*) FROM programs WHERE is_initial=1").fetchone()[0]
    con.close()
    assert n_initial == 1  # the start check's evaluation is the stored one, not a second
    # the summary's front: every stored program's (a, b), the front and its hypervolume
    # recomputed here with moocore
    con = sqlite3.connect(store)
    vecs = {pid: (m["a"], m["b"]) for pid, mj in con.execute(
        "SELECT program_id, metrics_json FROM programs WHERE valid=1")
        for m in [json.loads(mj)]}
    con.close()
    pts = np.asarray(list(vecs.values()))
    keep = moocore.is_nondominated(pts, maximise=[True, False], keep_weakly=True)
    front = summary["front"]
    assert sorted(tuple(m["vector"]) for m in front["members"]) == sorted(
        {tuple(p) for p in pts[keep].tolist()}) and front["size"] >= 2
    assert front["hypervolume"] == pytest.approx(float(moocore.hypervolume(
        pts, ref=np.asarray([0.0, 4.0]), maximise=[True, False])))


def test_task_file_declares_objectives_and_reference_point(tmp_path, capsys):
    task = task_file(tmp_path, 'objectives = {"a": "max", "b": "min"}\n'
                               '    reference_point = (0.5, 9.0)')
    store = tmp_path / "s.sqlite"
    with LLMTestServer(reply) as srv:
        assert _run(srv.base_url, store, task, "--reward-front", "run") == 0
        cfg = _config(store, "mo")
        assert cfg["objectives"] == {"a": "max", "b": "min"}
        assert cfg["reference_point"] == [0.5, 9.0] and cfg["reward_front"] == "run"
        # the command line wins over the task's declaration; objectives are kept in name
        # order (the store sorts a config's keys) and a declared point is reordered too
        assert _run(srv.base_url, store, task, "--objectives", "b:min,a:max",
                    run_id="flag") == 0
        assert _run(srv.base_url, store, task, "--objectives", "b:min,a:max",
                    "--reference-point", "7,0.25", run_id="point") == 0
    cfg = _config(store, "flag")
    assert list(cfg["objectives"]) == ["a", "b"] and cfg["reference_point"] == [0.0, 4.0]
    assert _config(store, "point")["reference_point"] == [0.25, 7.0]


def test_task_file_with_a_bad_declaration(tmp_path, capsys):
    task = task_file(tmp_path, 'objectives = {"a": "max", "b": "lower"}')
    store = tmp_path / "s.sqlite"
    with LLMTestServer(reply) as srv:
        assert _run(srv.base_url, store, task) == 2
    err = capsys.readouterr().err.strip()
    assert "task 'two_numbers' objectives: objective 'b' has direction 'lower'" in err
    assert len(err.splitlines()) == 1 and not store.exists()


def test_single_objective_config_has_no_objective_keys(tmp_path):
    task = task_file(tmp_path)
    store = tmp_path / "s.sqlite"
    with LLMTestServer(reply) as srv:
        assert _run(srv.base_url, store, task) == 0
    cfg = _config(store, "mo")
    assert not {"objectives", "reference_point", "reward_front"} & set(cfg)
    summary = json.loads(rows_of(store, "SELECT summary_json FROM run_summary")[0][0])
    assert "front" not in summary
