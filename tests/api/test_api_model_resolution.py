"""Issue 24, items 1 and 2: ``basevolve.run`` resolves the model exactly as
``basevolve run`` does, and takes ``params`` in the forms ``--params`` takes.

Before: ``basevolve.run(task=..., budget=..., base_url=...)`` stored ``model =
"embedded"`` (FLOPs at the embedded model's 1.54B parameters) for replies a server
gave, and ``params="1B"`` was refused with a message naming ``--params``.  Each test
runs the real CLI and the real API against the real test server and compares the stores.
"""

from __future__ import annotations

import json
import sqlite3

import pytest

import basevolve
from basevolve.cli import main
from basevolve.testing import LLMTestServer

TASK = "min_max_distance"


def _stored(store, run_id: str) -> tuple[str, float, float, int]:
    """(model, active params, FLOPs, uncached tokens) of a stored run."""
    con = sqlite3.connect(store)
    try:
        model, params = con.execute("SELECT model, active_params FROM runs WHERE run_id=?",
                                    (run_id,)).fetchone()
        flops, tokens = con.execute(
            "SELECT sum(flops), sum(prompt_tokens - cached_tokens + completion_tokens) "
            "FROM calls WHERE run_id=?", (run_id,)).fetchone()
    finally:
        con.close()
    return model, params, flops, tokens


def test_api_stores_the_served_model_as_the_cli_does(tmp_path, capsys):
    store = tmp_path / "s.sqlite"
    with LLMTestServer(model_ids=["Qwen/Qwen3-8B"]) as srv:
        r = basevolve.run(task=TASK, budget=2, base_url=srv.base_url, store=store,
                          run_id="api", progress=False)
        assert main(["run", "--task", TASK, "--budget", "2", "--base-url", srv.base_url,
                     "--store", str(store), "--run-id", "cli", "--out",
                     str(tmp_path / "o")]) == 0
        assert {q["model"] for q in srv.requests} == {"Qwen/Qwen3-8B"}
    capsys.readouterr()
    api, cli = _stored(store, "api"), _stored(store, "cli")
    assert r.summary["model"] == api[0] == cli[0] == "Qwen/Qwen3-8B"
    assert api[1] == cli[1] == 8.19e9  # the catalog's qwen3-8b, not the embedded 1.54B
    assert api[2] == pytest.approx(2 * 8.19e9 * api[3]) and api[3] > 0


def test_api_refuses_an_uncatalogued_served_model_naming_its_keywords(tmp_path):
    store = tmp_path / "s.sqlite"
    with LLMTestServer(model_ids=["my-org/Custom-7B"]) as srv:
        with pytest.raises(basevolve.ConfigError) as info:
            basevolve.run(task=TASK, budget=2, base_url=srv.base_url, store=store,
                          progress=False)
        message = str(info.value)
        assert "'my-org/Custom-7B'" in message and "params=8e9" in message
        assert "model=NAME" in message and "--params" not in message
        assert srv.requests == [] and not store.exists()
        r = basevolve.run(task=TASK, budget=2, base_url=srv.base_url, params="7B",
                          store=store, run_id="seven", progress=False)
    model, params, flops, tokens = _stored(store, "seven")
    assert r.summary["model"] == model == "my-org/Custom-7B" and params == 7e9
    assert flops == pytest.approx(2 * 7e9 * tokens)


@pytest.mark.parametrize("given", ["1B", "1e9", "1000M", 1e9, 1_000_000_000])
def test_params_forms_of_the_cli_are_accepted_by_the_api_and_a_sweep(tmp_path, capsys, given):
    """One set of forms: ``--params``, ``params=`` and a sweep file's ``params``."""
    store = tmp_path / "s.sqlite"
    toml_value = json.dumps(given)  # "1B" -> a TOML string, 1e9 -> a number
    (tmp_path / "g.toml").write_text(
        "[sweep]\nname = \"p\"\n[defaults]\nbase_url = \"{url}\"\n[[grid]]\n"
        f"task = \"{TASK}\"\nmodel = \"test-model\"\nparams = {toml_value}\nbudget = 2\n")
    with LLMTestServer() as srv:
        basevolve.run(task=TASK, budget=2, base_url=srv.base_url, params=given, store=store,
                      run_id="api", progress=False)
        assert main(["run", "--task", TASK, "--budget", "2", "--base-url", srv.base_url,
                     "--params", str(given), "--store", str(store), "--run-id", "cli",
                     "--out", str(tmp_path / "o")]) == 0
        grid = tmp_path / "g.toml"
        grid.write_text(grid.read_text().replace("{url}", srv.base_url))
        assert main(["sweep", str(grid), "--store", str(store)]) == 0
    capsys.readouterr()
    con = sqlite3.connect(store)
    try:
        params = {r[0]: r[1] for r in con.execute("SELECT run_id, active_params FROM runs")}
    finally:
        con.close()
    assert len(params) == 3 and set(params.values()) == {1e9}


@pytest.mark.parametrize(("bad", "needle"), [
    ("lots", "params= must be a parameter count such as 8e9 or \"8B\", got 'lots'"),
    (-1, "params= must be a positive parameter count"),
    (True, "params= must be a number of parameters, got True"),
])
def test_bad_params_name_the_keyword_the_flag_and_the_toml_key(tmp_path, capsys, bad, needle):
    with pytest.raises(basevolve.ConfigError) as info:
        basevolve.run(task=TASK, budget=2, base_url="http://127.0.0.1:9/v1", params=bad,
                      store=tmp_path / "s.sqlite", progress=False)
    assert needle in str(info.value) and "--params" not in str(info.value)
    grid = tmp_path / "g.toml"
    grid.write_text(f"[[grid]]\ntask = \"{TASK}\"\nmodel = \"x/y\"\nbudget = 2\n"
                    f"params = {json.dumps(bad)}\n")
    assert main(["sweep", str(grid), "--store", str(tmp_path / "w.sqlite")]) == 2
    err = capsys.readouterr().err
    assert "grid[0].params must be" in err and "--params" not in err
    assert not (tmp_path / "s.sqlite").exists() and not (tmp_path / "w.sqlite").exists()
