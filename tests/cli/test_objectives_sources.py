"""Issue 36, item 1: objectives declared by every kind of source -- an OpenEvolve task
directory (its config's ``basevolve:`` section, or ``--objectives`` naming its
evaluator's metrics), the Python API's ``objectives=`` / ``reference_point=`` and a sweep
file's keys -- stored with the run; a bad one is one line, exit 2 (or ConfigError), with
nothing stored.

Real runs: the repo's test server, real sandboxes (the directory's evaluator runs in the
sandbox), a real SQLite store.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from run_support import rows
from test_objectives_cli import reply as two_numbers_reply
from test_objectives_cli import task_file

import basevolve
from basevolve.cli import main
from basevolve.errors import ConfigError
from basevolve.testing import LLMTestServer

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "openevolve_dir"
MEDIUM = ("def search(f, lo, hi):\n    xs = [lo + (hi - lo) * i / 60 for i in range(61)]\n"
          "    return min(xs, key=f)\n")


def _directory(tmp_path: Path, section: str) -> Path:
    d = tmp_path / "oe"
    shutil.copytree(EXAMPLE, d)
    (d / "config.yaml").write_text((d / "config.yaml").read_text() + section)
    return d


def _oe_run(d: Path, url: str, store: Path, *extra: str) -> int:
    return main(["run", "--task", str(d), "--budget", "2", "--params", "1e9",
                 "--base-url", url, "--model", "test-model", "--store", str(store),
                 "--run-id", "oe", "--out", str(store.parent / "out"), *extra])


def _stored(store: Path) -> dict:
    return json.loads(rows(store, "SELECT config_json FROM runs")[0]["config_json"])


def test_openevolve_directory_declares_objectives_in_its_config(tmp_path, capsys):
    d = _directory(tmp_path, "basevolve:\n  objectives: {combined_score: max, "
                             "worst_score: max}\n  reference_point: [0.0, 0.0]\n")
    store = tmp_path / "s.sqlite"
    fence = f"```python\n{MEDIUM}```\n"
    with LLMTestServer([fence]) as srv:
        assert _oe_run(d, srv.base_url, store) == 0
    cfg = _stored(store)
    assert cfg["objectives"] == {"combined_score": "max", "worst_score": "max"}
    assert cfg["reference_point"] == [0.0, 0.0]
    assert rows(store, "SELECT sum(counted) n FROM calls")[0]["n"] == 2


def test_openevolve_objectives_on_the_command_line_checked_against_its_metrics(
        tmp_path, capsys):
    d = _directory(tmp_path, "")
    store = tmp_path / "s.sqlite"
    with LLMTestServer([f"```python\n{MEDIUM}```\n"]) as srv:
        assert _oe_run(d, srv.base_url, store, "--objectives",
                       "combined_score:max,seconds:min") == 2
        err = capsys.readouterr().err.strip()
        assert not store.exists() and srv.n_requests == 0
        assert _oe_run(d, srv.base_url, store, "--objectives",
                       "combined_score:max,solved:max") == 0
    # the directory's usual warning line (max_iterations is --budget), then one error line
    assert [ln for ln in err.splitlines() if "error" in ln] == [err.splitlines()[-1]]
    assert "Traceback" not in err
    assert ("objective 'seconds' is not a metric the initial program's evaluation reports"
            in err and "combined_score" in err)  # it lists the metrics the evaluator reports
    cfg = _stored(store)
    assert list(cfg["objectives"]) == ["combined_score", "solved"]
    assert len(cfg["reference_point"]) == 2


def test_openevolve_config_with_a_bad_direction(tmp_path, capsys):
    d = _directory(tmp_path, "basevolve:\n  objectives: {combined_score: higher, "
                             "solved: max}\n")
    store = tmp_path / "s.sqlite"
    with LLMTestServer(["x"]) as srv:
        assert _oe_run(d, srv.base_url, store) == 2
    err = capsys.readouterr().err.strip()
    assert "config.yaml: basevolve.objectives: objective 'combined_score' has direction " \
           "'higher'; use 'max' or 'min'" in err
    assert len(err.splitlines()) == 1 and not store.exists()


def test_python_api_objectives_and_reference_point(tmp_path):
    task = task_file(tmp_path)
    store = tmp_path / "api.sqlite"
    with LLMTestServer(two_numbers_reply) as srv:
        common = {"base_url": srv.base_url, "model": "test-model", "params": 1e9,
                  "store": store, "progress": False, "allocator": "ucb", "arms": 2}
        r = basevolve.run(str(task), 4, run_id="api", objectives={"b": "min", "a": "max"},
                          reference_point=(5.0, 0.5), **common)
        assert r.summary["calls_completed"] == 4
        before = store.read_bytes()
        with pytest.raises(ConfigError, match="objective 'nope' is not a metric"):
            basevolve.run(str(task), 4, run_id="bad", objectives={"a": "max", "nope": "min"},
                          **common)
        assert store.read_bytes() == before and srv.n_requests == 4
    cfg = _stored(store)
    assert cfg["objectives"] == {"a": "max", "b": "min"} and cfg["reference_point"] == [0.5, 5.0]


def test_sweep_file_keys(tmp_path, capsys):
    task = task_file(tmp_path)
    store = tmp_path / "sweep.sqlite"
    with LLMTestServer(two_numbers_reply) as srv:
        grid = tmp_path / "grid.toml"
        grid.write_text(f'''
[sweep]
name = "mo"
[[endpoints]]
base_url = "{srv.base_url}"
limit = 4
[defaults]
task = "{task}"
model = "test-model"
params = 1e9
base_url = "{srv.base_url}"
objectives = {{a = "max", b = "min"}}
reference_point = "0.0,5.0"
reward = "improvement"
[[grid]]
budget = 4
allocator = "ucb"
arms = 2
''')
        assert main(["sweep", str(grid), "--store", str(store), "--json"]) == 0
    cfg = _stored(store)
    assert cfg["objectives"] == {"a": "max", "b": "min"} and cfg["reference_point"] == [0.0, 5.0]
    assert rows(store, "SELECT sum(counted) n FROM calls")[0]["n"] == 4


def test_openevolve_initial_program_that_cannot_be_evaluated(tmp_path, capsys):
    """The directory's own stop (issue 31, item 9) comes first, and nothing is stored."""
    d = _directory(tmp_path, "")
    (d / "initial_program.py").write_text("raise RuntimeError('broken start')\n\n\n"
                                          "def search(f, lo, hi):\n    return lo\n")
    store = tmp_path / "s.sqlite"
    with LLMTestServer(["x"]) as srv:
        assert _oe_run(d, srv.base_url, store, "--objectives",
                       "combined_score:max,solved:max") != 0
        assert srv.n_requests == 0
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "could not be evaluated, so no LLM call was made" in err and "broken start" in err
    assert not store.exists()


def test_python_api_takes_the_flag_string_and_a_list_point(tmp_path):
    """objectives= as --objectives spells it and reference_point= as a list (issue 36)."""
    task = task_file(tmp_path)
    store = tmp_path / "api2.sqlite"
    with LLMTestServer(two_numbers_reply) as srv:
        common = {"base_url": srv.base_url, "model": "test-model", "params": 1e9,
                  "store": store, "progress": False}
        with pytest.raises(ConfigError, match=r"^objectives=: objective 'a' has direction 'up'"):
            basevolve.run(str(task), 2, run_id="bad", objectives="a:up,b:min", **common)
        assert not store.exists() and srv.n_requests == 0
        r = basevolve.run(str(task), 2, run_id="flag", objectives="a:max,b:min",
                          reference_point=[0.5, 5.0], **common)
        assert r.summary["calls_completed"] == 2
    cfg = _stored(store)
    assert cfg["objectives"] == {"a": "max", "b": "min"} and cfg["reference_point"] == [0.5, 5.0]
