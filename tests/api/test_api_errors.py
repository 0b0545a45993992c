"""Bad input through the Python API: the documented basevolve exceptions with the CLI's
messages, nothing stored, never a bare KeyError/AttributeError/TypeError."""

from __future__ import annotations

import socket
import sqlite3

import pandas as pd
import pytest

import basevolve
from basevolve.cli import main


def _closed_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/v1"


# (CLI flags, the same input as API keywords, the exception class)
SAME_AS_CLI = [
    (["--budget", "10", "--depth", "3"], {"budget": 10, "depth": 3}, basevolve.ConfigError),
    (["--budget", "10", "--breadth", "3"], {"budget": 10, "breadth": 3}, basevolve.ConfigError),
    (["--budget", "10", "--breadth", "2", "--depth", "5"], {"budget": 10, "breadth": 2, "depth": 5},
     basevolve.ConfigError),
    (["--budget", "0"], {"budget": 0}, basevolve.ConfigError),
    (["--budget", "4", "--arms", "5", "--allocator", "ucb"],
     {"budget": 4, "arms": 5, "allocator": "ucb"}, basevolve.ConfigError),
    (["--budget", "4", "--allocator", "nope"], {"budget": 4, "allocator": "nope"},
     basevolve.ConfigError),
    (["--budget", "4", "--protocol", "nope"], {"budget": 4, "protocol": "nope"},
     basevolve.ConfigError),
    (["--budget", "4", "--task", "no_such_task"], {"budget": 4, "task": "no_such_task"},
     basevolve.TaskError),
    (["--budget", "4", "--seed", "-1"], {"budget": 4, "seed": -1}, basevolve.ConfigError),
    (["--budget", "4", "--max-in-flight", "0"], {"budget": 4, "max_in_flight": 0},
     basevolve.ConfigError),
    (["--budget", "4", "--pull", "generation", "--depth", "1", "--arms", "2",
      "--allocator", "ucb"],
     {"budget": 4, "pull": "generation", "depth": 1, "arms": 2, "allocator": "ucb"},
     basevolve.ConfigError),
    (["--budget", "4", "--arm-in-flight", "0"], {"budget": 4, "arm_in_flight": 0},
     basevolve.ConfigError),
    (["--budget", "4", "--protocol-param", "nope=1"], {"budget": 4, "protocol_params": {"nope": 1}},
     basevolve.ConfigError),
    (["--budget", "4", "--model", "no-such-model"], {"budget": 4, "model": "no-such-model"},
     basevolve.ConfigError),
    (["--budget", "4", "--base-url", "{closed}"], {"budget": 4, "base_url": "{closed}"},
     basevolve.LLMError),
]


def _as_keywords(message: str) -> str:
    """The CLI's message as the API words it: the model and endpoint arguments are named
    as the keywords the caller wrote (issue 24, item 2), everything else as the CLI."""
    return message.replace("--params 8e9", "params=8e9").replace("fix --base-url", "fix base_url")


@pytest.mark.parametrize(("flags", "kwargs", "error"), SAME_AS_CLI)
def test_run_bad_input_matches_the_cli(tmp_path, capsys, flags, kwargs, error):
    url = _closed_url()
    flags = [f.replace("{closed}", url) for f in flags]
    kwargs = {k: url if v == "{closed}" else v for k, v in kwargs.items()}
    store = tmp_path / "s.sqlite"
    args = flags if "--task" in flags else ["--task", "min_max_distance", *flags]
    if "--base-url" not in flags:
        args += ["--base-url", url]
        kwargs.setdefault("base_url", url)
    assert main(["run", *args, "--store", str(store)]) == 2
    cli_message = capsys.readouterr().err.strip().removeprefix("basevolve: error: ")
    kwargs.setdefault("task", "min_max_distance")
    with pytest.raises(error) as info:
        basevolve.run(store=store, progress=False, **kwargs)
    assert str(info.value) == _as_keywords(cli_message)
    assert isinstance(info.value, basevolve.BasevolveError)
    assert not store.exists()


@pytest.mark.parametrize(("kwargs", "error", "message"), [
    ({"arms": "3"}, basevolve.ConfigError, "arms= must be an integer, got '3'"),
    ({"max_tokens": 1.5}, basevolve.ConfigError, "max_tokens= must be an integer or None"),
    ({"temperature": "hot"}, basevolve.ConfigError, "temperature= must be a number"),
    ({"count_failed_attempts": 1}, basevolve.ConfigError, "must be True or False"),
    ({"budget": "4"}, basevolve.ConfigError, "budget= must be an integer, got '4'"),
    ({"budget": "8", "depth": None}, basevolve.ConfigError, "^budget= must be an integer"),
    ({"depth": "2"}, basevolve.ConfigError, "^depth= must be an integer or None, got '2'"),
    ({"bogus_option": 1}, basevolve.ConfigError, "unknown option 'bogus_option'"),
    ({"task": 42}, basevolve.TaskError, "task must be a task name"),
    ({"progress": "yes"}, basevolve.ConfigError, "progress must be True, False or a callable"),
    ({"store": 3}, basevolve.ConfigError, "store= must be a file path"),
])
def test_python_only_mistakes_are_config_errors(tmp_path, kwargs, error, message):
    args = {"task": "min_max_distance", "budget": 4, "base_url": _closed_url(),
            "store": tmp_path / "s.sqlite", "progress": False, **kwargs}
    with pytest.raises(error, match=message.replace("(", r"\(")):
        basevolve.run(**args)
    assert not (tmp_path / "s.sqlite").exists()


class NoEntry(basevolve.Task):
    name = "no_entry"
    initial_program = "def f():\n    return 1\n"
    system_message = "x"

    def score_value(self, value, *, tol=1e-6):
        return basevolve.ScoreResult(score=0.0, valid=False)


class ClashesWithBuiltin(NoEntry):
    name = "circle_packing"
    entry = "f"


def test_bad_task_objects(tmp_path):
    store = tmp_path / "s.sqlite"
    with pytest.raises(basevolve.TaskError, match="non-empty string class attribute 'entry'"):
        basevolve.run(NoEntry(), 2, base_url=_closed_url(), store=store)
    with pytest.raises(basevolve.TaskError, match="is a built-in task's"):
        basevolve.run(ClashesWithBuiltin, 2, base_url=_closed_url(), store=store)
    assert not store.exists()


def test_resume_bad_input_matches_the_cli(tmp_path, capsys):
    missing = tmp_path / "none.sqlite"
    assert main(["run", "--resume", "x", "--store", str(missing)]) == 2
    cli = capsys.readouterr().err.strip().removeprefix("basevolve: error: ")
    with pytest.raises(basevolve.StoreError) as info:
        basevolve.resume("x", store=missing)
    assert str(info.value) == cli and not missing.exists()

    foreign = tmp_path / "mine.sqlite"
    con = sqlite3.connect(foreign)
    con.execute("CREATE TABLE precious (x)")
    con.commit()
    con.close()
    before = foreign.read_bytes()
    with pytest.raises(basevolve.StoreError, match="not a basevolve store"):
        basevolve.resume("x", store=foreign)
    with pytest.raises(basevolve.StoreError, match="not a basevolve store"):
        basevolve.run("min_max_distance", 2, store=foreign)
    assert foreign.read_bytes() == before
    with pytest.raises(basevolve.ConfigError, match="run_id must be"):
        basevolve.resume(None, store=missing)  # type: ignore[arg-type]


def test_analyze_bad_input_matches_the_cli(tmp_path, capsys):
    missing = tmp_path / "none.sqlite"
    assert main(["analyze", "--store", str(missing)]) == 2
    cli = capsys.readouterr().err.strip().removeprefix("basevolve: error: ")
    with pytest.raises(basevolve.ConfigError) as info:
        basevolve.analyze(store=missing)
    assert str(info.value) == cli
    with pytest.raises(basevolve.ConfigError, match="give exactly one of"):
        basevolve.analyze()
    runs = pd.DataFrame({"task": ["t"], "model": ["m"]})
    with pytest.raises(basevolve.ConfigError, match="missing"):
        basevolve.analyze(runs=runs)
    with pytest.raises(basevolve.ConfigError, match="resamples= must be an integer"):
        basevolve.analyze(store=missing, resamples="many")
    with pytest.raises(basevolve.ConfigError, match="thresholds= must be"):
        basevolve.analyze(store=missing, thresholds="0.9")
    with pytest.raises(basevolve.ConfigError, match="store= must be a file path"):
        basevolve.analyze(store=runs)
