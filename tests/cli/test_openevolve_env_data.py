"""``--env`` / ``--env-secret`` / ``--data`` and fresh seeds, end to end (issue 31, items 6, 8, 11).

The fixture tests/data/openevolve/env_data has an evaluator that reads ``SCORE_SCALE``,
the secret ``FIXTURE_API_TOKEN`` and ``$BASEVOLVE_DATA/target.json`` and adds a small
``np.random`` term to its score.  Runs go against the test server (a real process
serving full rewrites from ``--replies-file``), real SQLite stores, the real sandbox.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from run_support import rows

from basevolve.cli import main
from basevolve.testing.process import server_process

HERE = Path(__file__).resolve().parents[1] / "data" / "openevolve"
TASK, DATA = HERE / "env_data", HERE / "env_data_files"
SECRET, SECRET_VALUE = "FIXTURE_API_TOKEN", "fixture-secret-value-31"
CLOSE = "def weights():\n    return [1.0, 2.0, 2.0]\n"  # error 1: scale / 2
EXACT = "def weights():\n    return [1.0, 2.0, 3.0]\n"  # error 0: scale


def reply(code: str) -> str:
    return f"Better weights.\n```python\n{code}```\n"



def run(tmp_path: Path, name: str, *extra: str, budget: int = 3) -> tuple[int, Path]:
    replies = tmp_path / "replies.json"
    replies.write_text(json.dumps([reply(CLOSE), reply(EXACT), reply(EXACT)]))
    store = tmp_path / f"{name}.sqlite"
    with server_process("--replies-file", str(replies), latency=0.0) as url:
        code = main(["run", "--task", str(TASK), "--budget", str(budget), "--params", "1e9",
                     "--base-url", url, "--max-in-flight", "1", "--store", str(store),
                     "--run-id", name, "--out", str(tmp_path / name), "--json", *extra])
    return code, store


PASS = ("--env", "SCORE_SCALE=2", "--env-secret", SECRET, "--data", str(DATA))


def test_variables_and_data_reach_the_evaluator_and_secrets_are_not_stored(
        tmp_path, capsys, monkeypatch):
    monkeypatch.setenv(SECRET, SECRET_VALUE)
    code, store = run(tmp_path, "a", *PASS, "--deterministic")
    out = capsys.readouterr().out
    assert code == 0, out
    summary = json.loads(out.strip().splitlines()[-1])
    assert summary["calls_completed"] == 3 and summary["status"] == "finished"  # exactly C
    children = rows(store, "SELECT code, score, valid, metrics_json, artifacts_json "
                           "FROM programs WHERE call_id IS NOT NULL ORDER BY seq")
    assert [c["valid"] for c in children] == [1, 1, 1]
    for child, base in zip(children, (1.0, 2.0, 2.0), strict=True):
        assert base <= child["score"] < base + 1e-3  # SCORE_SCALE=2 and target.json read
        assert json.loads(child["metrics_json"])["token_ok"] == 1.0  # the secret arrived
        assert json.loads(child["artifacts_json"])["metric.data_at"] == "/data"
    # one program (EXACT) evaluated twice: fresh draws each time (issue 31, item 8)
    assert children[1]["code"] == children[2]["code"]
    assert children[1]["score"] != children[2]["score"]
    config = json.loads(rows(store, "SELECT config_json FROM runs")[0]["config_json"])
    assert config["env"] == {"SCORE_SCALE": "2"} and config["env_secret"] == [SECRET]
    assert config["data"] == str(DATA)
    assert SECRET_VALUE.encode() not in store.read_bytes()  # the value is never stored
    # a second --deterministic run with the same seed replicates every score
    code, again = run(tmp_path, "b", *PASS, "--deterministic")
    assert code == 0
    scores = "SELECT score FROM programs ORDER BY seq"
    assert rows(again, scores) == rows(store, scores)


@pytest.mark.parametrize(("args", "message"), [
    (("--env", f"{SECRET}=x"), f"--env {SECRET}: the name looks secret"),
    (("--env", "MY_PASSWORD"), "--env MY_PASSWORD: the name looks secret"),
    (("--env-secret", "NOT_EXPORTED_TOKEN_31"), "NOT_EXPORTED_TOKEN_31 is not set in your"),
    (("--env", "UNSET_VARIABLE_31"), "--env UNSET_VARIABLE_31: UNSET_VARIABLE_31 is not set"),
    (("--env", "PATH=/x"), "--env PATH: the sandbox sets PATH itself"),
    (("--data", "/no/such/folder"), "--data '/no/such/folder' is not a folder"),
])
def test_bad_passthrough_is_one_line_exit_2_and_nothing_stored(tmp_path, capsys, args,
                                                                message):
    store = tmp_path / "s.sqlite"
    code = main(["run", "--task", str(TASK), "--budget", "2", "--params", "1e9",
                 "--base-url", "http://127.0.0.1:9/v1", "--store", str(store), *args])
    err = capsys.readouterr().err
    assert code == 2 and message in err, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not store.exists()


def test_resume_needs_the_secret_again(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv(SECRET, SECRET_VALUE)
    replies = tmp_path / "replies.json"
    replies.write_text(json.dumps([reply(CLOSE), reply(EXACT)]))
    store = tmp_path / "r.sqlite"
    with server_process("--replies-file", str(replies), latency=0.0) as url:
        argv = ["run", "--task", str(TASK), "--budget", "2", "--params", "1e9",
                "--base-url", url, "--max-in-flight", "1", "--store", str(store),
                "--run-id", "r", "--out", str(tmp_path / "out"), *PASS]
        from basevolve.config import RunConfig
        from basevolve.engine import start_run

        cfg = RunConfig(task=str(TASK), budget=2, params=1e9, base_url=url, run_id="r",
                        max_in_flight=1, env={"SCORE_SCALE": "2"}, env_secret=(SECRET,),
                        data=str(DATA))
        assert argv  # the CLI spelling of cfg, for the reader

        def stop(snapshot: dict) -> None:
            if snapshot["calls_completed"] >= 1:
                raise KeyboardInterrupt

        with pytest.raises(KeyboardInterrupt):
            start_run(cfg, store, progress=stop)
        monkeypatch.delenv(SECRET)
        before = store.read_bytes()
        assert main(["run", "--resume", "r", "--store", str(store)]) == 2
        err = capsys.readouterr().err
        assert f"export {SECRET} and run again" in err and len(err.strip().splitlines()) == 1
        assert store.read_bytes() == before
        monkeypatch.setenv(SECRET, SECRET_VALUE)
        assert main(["run", "--resume", "r", "--store", str(store), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["calls_completed"] == 2 and summary["best_score"] >= 2.0
    assert SECRET_VALUE.encode() not in store.read_bytes()
