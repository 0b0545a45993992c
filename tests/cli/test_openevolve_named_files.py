"""OpenEvolve tasks whose files are named otherwise, and their config keys (issue 31).

The fixture ``tests/data/openevolve/renamed`` (written for these tests) names its program
``init_program.py`` and its evaluator ``evaluator_stub.py`` (beside a helper module), keeps
a ``config.yml`` and a second phase's config under ``configs/``.  Run end to end against
the repo's test server (in process, so the prompts are seen), a real sandbox and a real
SQLite store, with exactly C calls.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from run_support import StopAfter

import basevolve
from basevolve.cli import main
from basevolve.sandbox.config import MAX_TIMEOUT_S
from basevolve.testing import LLMTestServer

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "openevolve" / "renamed"
NAMED = ["--program", "init_program.py", "--evaluator", "evaluator_stub.py"]
SQRT2 = 2 ** 0.5
CLOSE = "def estimate():\n    return 1.4\n"
EXACT = "def estimate():\n    return 2 ** 0.5\n"
LONG = "def estimate():\n    return 1.41\n" + "".join(f"# padding {i:03}\n" for i in range(40))


def reply(code: str) -> str:
    return f"Here it is.\n```python\n{code}```\n"


def closeness(value: float) -> float:
    return 1.0 / (1.0 + abs(value - SQRT2))


def rows(store: Path, sql: str) -> list[sqlite3.Row]:
    con = sqlite3.connect(store)
    con.row_factory = sqlite3.Row
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def run_args(store: Path, url: str, budget: int, *extra: str) -> list[str]:
    return ["run", *extra, "--budget", str(budget), "--params", "1e9", "--base-url", url,
            "--max-in-flight", "1", "--store", str(store), "--run-id", "r", "--json"]


def test_unnamed_files_are_refused_saying_which_file_and_how_to_name_it(capsys):
    assert main(["tasks", "--show", str(FIXTURE)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert ("no initial program: looked for initial_program.py; name yours with --program "
            "FILE (found init_program.py: e.g. --program init_program.py)") in err
    assert main(["tasks", "--show", str(FIXTURE), "--program", "init_program.py"]) == 2
    err = capsys.readouterr().err.strip()
    assert ("no evaluator: looked for evaluator.py; name yours with --evaluator FILE (found "
            "evaluator_stub.py: e.g. --evaluator evaluator_stub.py)") in err
    assert main(["tasks", "--show", str(FIXTURE), *NAMED[:2], "--evaluator", "nope.py"]) == 2
    assert "--evaluator 'nope.py' does not exist" in capsys.readouterr().err
    assert main(["run", "--program", str(FIXTURE / "init_program.py"), "--budget", "1"]) == 2
    assert "without --task, name the program and the evaluator: missing --evaluator" in \
        capsys.readouterr().err


def test_show_lists_the_named_files_and_the_config_keys(capsys):
    assert main(["tasks", "--show", str(FIXTURE), *NAMED, "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    x = d["directory"]
    assert (x["program"], x["evaluator"], x["config"]) == (
        "init_program.py", "evaluator_stub.py", "config.yml")  # config.yml found
    assert d["system_message"] == "Improve estimate() so that it returns the square root of two."
    assert x["max_code_length"] == 400 and x["random_seed"] == 7
    assert not x["diff_based_evolution"] and x["include_artifacts"] and not x["cascade"]
    assert x["timeout_s"] == MAX_TIMEOUT_S / 8  # 180000 s clamped, not refused
    assert x["not_applied"] == ["max_iterations", "my_own_key (not OpenEvolve's)",
                                "prompt.num_top_programs", "llm.temperature"]
    warning, clamp = x["warnings"]
    assert warning.startswith("config.yml: not applied by basevolve: max_iterations, ")
    assert "evaluator.timeout=180000 s is clamped" in clamp
    assert main(["tasks", "--show", str(FIXTURE), *NAMED]) == 0
    text = capsys.readouterr().out
    assert text.count("not applied by basevolve") == 1  # one line, not one per key


def test_run_with_named_files_spends_exactly_c_and_applies_the_config(tmp_path, capsys):
    store = tmp_path / "s.sqlite"
    with LLMTestServer([reply(CLOSE), reply(LONG), reply(EXACT)]) as srv:
        code = main(run_args(store, srv.base_url, 3, "--task", str(FIXTURE), *NAMED))
        prompts = [r["messages"] for r in srv.requests]
    captured = capsys.readouterr()
    assert code == 0, captured.err
    summary = json.loads(captured.out.strip().splitlines()[-1])
    assert summary["calls_completed"] == 3 and summary["status"] == "finished"
    assert rows(store, "SELECT count(*) n FROM calls WHERE counted = 1")[0]["n"] == 3
    assert len(prompts) == 3
    assert all(m[0]["content"].startswith("Improve estimate()") for m in prompts)
    assert "SEARCH" not in prompts[0][1]["content"]  # diff_based_evolution: false
    # include_artifacts (default true): the parent's artifact reaches the prompt
    assert "estimate() gave 1.0" in prompts[0][1]["content"]
    assert "estimate() gave 1.4" in prompts[1][1]["content"]
    err = captured.err.splitlines()
    assert sum("not applied by basevolve" in line for line in err) == 1
    assert "basevolve: seed 7 from config.yml random_seed (--seed overrides it)" in err
    config = json.loads(rows(store, "SELECT config_json FROM runs")[0]["config_json"])
    assert config["seed"] == 7 and config["feedback"] == "artifacts"  # include_artifacts
    assert config["protocol_params"] == {"mode": "full"}
    assert config["task_params"] == {"program": str(FIXTURE / "init_program.py"),
                                     "evaluator": str(FIXTURE / "evaluator_stub.py")}
    progs = rows(store, "SELECT code, score, valid, error, metrics_json FROM programs "
                        "ORDER BY seq")
    initial, close, long, exact = progs
    assert initial["score"] == pytest.approx(closeness(1.0))  # only closeness counts
    assert json.loads(initial["metrics_json"])["complexity"] == 12.0
    assert close["valid"] and close["score"] == pytest.approx(closeness(1.4))
    assert not long["valid"] and long["score"] == 0.0 and len(long["code"]) > 400
    assert long["error"].startswith("code_too_long: the program has") and \
        "max_code_length 400 (config.yml)" in long["error"]
    assert exact["valid"] and exact["score"] == pytest.approx(1.0)
    assert summary["best_score"] == pytest.approx(1.0)


def test_the_three_paths_alone_and_a_phase_config(tmp_path, capsys):
    """OpenEvolve's ``PROGRAM EVALUATOR --config`` form: no --task; configs/phase2.yaml
    asks for diffs and no artifacts; a SEARCH/REPLACE reply is applied to the parent."""
    edit = ("<<<<<<< SEARCH\n    return 1.0\n=======\n    return 1.41421\n"
            ">>>>>>> REPLACE\n")
    store = tmp_path / "s.sqlite"
    with LLMTestServer([edit, reply(CLOSE)]) as srv:
        code = main(run_args(store, srv.base_url, 2, "--program",
                             str(FIXTURE / "init_program.py"), "--evaluator",
                             str(FIXTURE / "evaluator_stub.py"), "--config",
                             str(FIXTURE / "configs" / "phase2.yaml"), "--seed", "3"))
        prompts = [r["messages"] for r in srv.requests]
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert json.loads(captured.out.strip().splitlines()[-1])["calls_completed"] == 2
    assert len(prompts) == 2 and prompts[0][0]["content"].startswith("Phase 2:")
    assert "<<<<<<< SEARCH" in prompts[0][1]["content"]  # the diff template
    assert not any("estimate() gave" in m[1]["content"] for m in prompts)  # no artifacts
    config = json.loads(rows(store, "SELECT config_json FROM runs")[0]["config_json"])
    assert config["task"] == str(FIXTURE) and config["seed"] == 3
    assert config["feedback"] == "none" and config["protocol_params"] == {"mode": "diff"}
    child = rows(store, "SELECT code, score FROM programs WHERE call_id IS NOT NULL "
                        "ORDER BY seq")[0]
    assert "return 1.41421\n" in child["code"] and child["score"] == pytest.approx(
        closeness(1.41421))


def test_flags_win_over_the_config_and_say_so(tmp_path, capsys):
    store = tmp_path / "s.sqlite"
    with LLMTestServer([reply(CLOSE)]) as srv:
        code = main(run_args(store, srv.base_url, 1, "--task", str(FIXTURE), *NAMED,
                             "--seed", "5", "--feedback", "none", "--protocol-param",
                             "mode=diff"))
    err = capsys.readouterr().err
    assert code == 0
    assert "--seed 5 wins over config.yml random_seed 7" in err
    assert "--feedback none wins over config.yml include_artifacts/enable_artifacts" in err
    assert "--protocol-param mode=diff wins over config.yml diff_based_evolution (full)" in err
    config = json.loads(rows(store, "SELECT config_json FROM runs")[0]["config_json"])
    assert (config["seed"], config["feedback"], config["protocol_params"]) == (
        5, "none", {"mode": "diff"})


def test_python_api_takes_the_names_as_task_params(tmp_path):
    with LLMTestServer([reply(EXACT)]) as srv:
        result = basevolve.run(task=str(FIXTURE), budget=1, params=1e9, base_url=srv.base_url,
                               store=tmp_path / "api.sqlite", run_id="api", progress=False,
                               task_params={"program": "init_program.py",
                                            "evaluator": "evaluator_stub.py"})
    assert result.calls_completed == 1 and result.best_score == pytest.approx(1.0)
    config = json.loads(rows(tmp_path / "api.sqlite",
                             "SELECT config_json FROM runs")[0]["config_json"])
    assert config["seed"] == 7  # the config's random_seed (the API's seed=0 is "not set")
    assert config["task_params"]["program"] == str(FIXTURE / "init_program.py")


def test_a_program_outside_the_directory_is_hashed_with_the_run(tmp_path, capsys):
    directory = tmp_path / "task"
    shutil.copytree(FIXTURE, directory)
    outside = tmp_path / "start.py"
    outside.write_text(CLOSE)
    assert main(["tasks", "--show", str(directory), "--program", str(outside), "--evaluator",
                 "evaluator_stub.py", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["initial_program"] == CLOSE and d["directory"]["program"] == str(outside)


@pytest.mark.parametrize(("evaluator", "quoted"), [
    ("import missing_tool\n\n\ndef evaluate(program_path):\n    return {'x': 1.0}\n",
     "ModuleNotFoundError: No module named 'missing_tool'"),
    ("def evaluate(program_path):\n    raise RuntimeError('needs the mlir toolchain')\n",
     "RuntimeError: needs the mlir toolchain"),
], ids=["cannot import", "raises"])
def test_an_initial_program_the_evaluator_cannot_score_stops_before_any_call(
        tmp_path, capsys, evaluator, quoted):
    """Issue 31, item 9: one line quoting the evaluator's error, no LLM call, exit 2, and
    the run stored as failed with that reason."""
    directory = tmp_path / "task"
    shutil.copytree(FIXTURE, directory)
    (directory / "evaluator_stub.py").write_text(evaluator)
    store = tmp_path / "s.sqlite"
    with LLMTestServer([reply(EXACT)]) as srv:
        code = main(run_args(store, srv.base_url, 3, "--task", str(directory), *NAMED))
        sent = len(srv.requests)
    err = capsys.readouterr().err
    assert code == 2 and sent == 0
    errors = [line for line in err.splitlines() if line.startswith("basevolve: error:")]
    assert len(errors) == 1 and quoted in errors[0] and "Traceback" not in err
    assert "could not be evaluated, so no LLM call was made" in errors[0]
    run = rows(store, "SELECT status, error FROM runs")[0]
    assert run["status"] == "failed" and quoted in run["error"]
    assert rows(store, "SELECT count(*) n FROM calls")[0]["n"] == 0



def test_resume_loads_the_named_files_from_another_folder(tmp_path, monkeypatch):
    """The names are stored as absolute paths: --resume from elsewhere loads the same
    files, and the run still ends with exactly C calls."""
    from basevolve.config import RunConfig
    from basevolve.engine import start_run
    from basevolve.engine.run_checks import checked_run

    monkeypatch.chdir(FIXTURE)  # relative names, resolved here and stored absolute
    store = tmp_path / "s.sqlite"
    with LLMTestServer([reply(CLOSE), reply(EXACT)]) as srv:
        # the task's params are resolved where the options meet the registries (issue 33)
        cfg = checked_run(RunConfig(task=str(FIXTURE), budget=3, base_url=srv.base_url,
                                    run_id="r", max_in_flight=1, params=1e9,
                                    task_params={"program": "init_program.py",
                                                 "evaluator": "evaluator_stub.py"}))
        assert cfg.task_params["program"] == str(FIXTURE / "init_program.py")
        with pytest.raises(KeyboardInterrupt):
            start_run(cfg, store, progress=StopAfter(1))
        monkeypatch.chdir(tmp_path)
        assert main(["run", "--resume", "r", "--store", str(store), "--program", "x.py"]) == 2
        result = basevolve.resume("r", store=store, progress=False)
        sent = len(srv.requests)
    assert result.calls_completed == 3 and result.resumed and sent >= 3  # + a lost call
    assert result.summary["task_changes"] == 0 and result.best_score == pytest.approx(1.0)
