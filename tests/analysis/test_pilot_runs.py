"""Issue 24, item 6: the file `advise --pilot` writes runs as written.

The pilot used to name the model without `params` or `base_url`, so `basevolve sweep`
refused a model outside the catalog (naming the CLI's `--params` inside a TOML file).
Here the file is written by the real command and run by `basevolve sweep` against the
real test server; a model the sweep could not run is refused before anything is written.
"""

from __future__ import annotations

import json
import sqlite3
import tomllib

import pytest

from basevolve.cli import main
from basevolve.testing import LLMTestServer


def _pilot(tmp_path, *extra: str) -> int:
    return main(["advise", "--pilot", "--task", "min_max_distance", "--budget", "4",
                 "--pilot-seeds", "1", "--out", str(tmp_path / "pilot.toml"), *extra])


def test_written_pilot_runs_as_written_against_the_test_server(tmp_path, capsys):
    with LLMTestServer(model_ids=["my-org/Custom-1B"]) as srv:
        assert _pilot(tmp_path, "--model", "my-org/Custom-1B", "--params", "1B",
                      "--base-url", srv.base_url) == 0
        out = capsys.readouterr().out
        # budgets capped at C = 4: (2, 4) x every power-of-2 depth x 1 seed = 4 + 12 calls
        assert "budgets [2, 4]" in out and "16 LLM calls" in out
        doc = tomllib.loads((tmp_path / "pilot.toml").read_text())
        assert doc["grid"][0]["params"] == 1e9 and doc["defaults"]["base_url"] == srv.base_url
        db = tmp_path / "pilot.sqlite"
        assert main(["sweep", str(tmp_path / "pilot.toml"), "--store", str(db), "--json"]) == 0
        assert len(srv.requests) == 16
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["failed"] == [] and result["finished"] == result["runs_total"] == 5
    con = sqlite3.connect(db)
    try:
        runs = con.execute("SELECT status, model, active_params FROM runs").fetchall()
        calls = con.execute("SELECT sum(counted) FROM calls").fetchone()[0]
    finally:
        con.close()
    assert len(runs) == 5 and {r[0] for r in runs} == {"finished"}
    assert {(r[1], r[2]) for r in runs} == {("my-org/Custom-1B", 1e9)} and calls == 16


@pytest.mark.parametrize(("argv", "needle"), [
    (["--model", "my-org/Custom-1B", "--base-url", "http://127.0.0.1:9/v1"], "--params 8e9"),
    (["--model", "qwen3-8b"], "--base-url URL"),
    (["--model", "my-org/Custom-1B", "--params", "lots", "--base-url", "http://h/v1"],
     "--params must be a parameter count such as 8e9 or 8B, got 'lots'"),
])
def test_a_pilot_the_sweep_could_not_run_is_refused_unwritten(tmp_path, capsys, argv, needle):
    assert _pilot(tmp_path, *argv) == 2
    err = capsys.readouterr().err
    assert needle in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not (tmp_path / "pilot.toml").exists()


def test_sweep_names_its_own_keys_for_a_model_it_cannot_run(tmp_path, capsys):
    """The sweep's own error for such a file names TOML keys, never a CLI flag."""
    cfg = tmp_path / "s.toml"
    for grid, needle in (('model = "my-org/X"', "params = 8e9"),
                         ('model = "qwen3-8b"', 'base_url = "http://HOST:PORT/v1"')):
        cfg.write_text(f'[[grid]]\ntask = "min_max_distance"\n{grid}\nbudget = 2\n')
        assert main(["sweep", str(cfg), "--store", str(tmp_path / "x.sqlite")]) == 2
        err = capsys.readouterr().err
        assert needle in err and "--params" not in err and "--base-url" not in err
        assert not (tmp_path / "x.sqlite").exists()
