"""``--request-timeout`` and ``--call-timeout`` (issue 22, item 18) against a stalled server.

A stalled endpoint used to hold a call for up to 1,800 s, and neither limit was on the
CLI.  Here the real test server accepts requests and never answers the stalled ones
(``Fault.STALL`` with an hour's stall); the run is the real ``basevolve run`` with the
real sandbox.  Each stalled attempt must end at the timeout given (not before; the
upper bound is loose, for a loaded box, and far below the old defaults), the run must
go on, and the ledger must be exact: C answered calls charged, the stalled ones stored
with their attempts and not charged.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from pathlib import Path

import pytest

from basevolve.api.arguments import build_config
from basevolve.cli import main
from basevolve.config import DEFAULT_CALL_TIMEOUT_S, DEFAULT_REQUEST_TIMEOUT_S, RunConfig
from basevolve.engine.runner import llm_settings
from basevolve.errors import ConfigError
from basevolve.llm.settings import LLMSettings
from basevolve.sweep.config import parse_sweep
from basevolve.testing import Fault, LLMTestServer

TASK = "min_max_distance"
SLACK_S = 20.0  # a stalled attempt ends within timeout + this (old default: 600 s)


def _run(tmp_path: Path, srv: LLMTestServer, *flags: str, budget: int = 3) -> dict:
    store = tmp_path / "s.sqlite"
    code = main(["run", "--task", TASK, "--budget", str(budget), "--params", "1e9",
                 "--base-url", srv.base_url, "--store", str(store), "--run-id", "t",
                 "--out", str(tmp_path / "out"), "--max-in-flight", "1", "--json", *flags])
    assert code == 0
    return {"store": store}


def _ledger(store: Path) -> tuple[list[tuple], list[tuple]]:
    con = sqlite3.connect(store)
    try:
        calls = con.execute("SELECT call_id, status, counted, reissue_of FROM calls "
                            "ORDER BY call_index").fetchall()
        attempts = con.execute("SELECT call_id, attempt_index, status, latency_s, flops "
                               "FROM attempts ORDER BY call_id, attempt_index").fetchall()
    finally:
        con.close()
    return calls, attempts


def test_a_stalled_request_ends_at_request_timeout_and_is_retried(tmp_path, capsys):
    with LLMTestServer(stall_s=3600.0) as srv:
        srv.inject(Fault.STALL, times=1)  # the first request is accepted, never answered
        ran = _run(tmp_path, srv, "--request-timeout", "1.5", "--call-timeout", "120")
        sent = len(srv.requests)
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["calls_completed"] == 3 and summary["status"] == "finished"
    calls, attempts = _ledger(ran["store"])
    assert [c[1:3] for c in calls] == [("ok", 1)] * 3  # the stalled call was retried
    first = [a for a in attempts if a[0] == calls[0][0]]
    assert [a[2] for a in first] == ["timeout", "ok"]
    assert 1.5 <= first[0][3] < 1.5 + SLACK_S, first[0]
    assert first[0][4] > 0  # sent but unanswered: charged the worst case in FLOPs
    assert sent == 4 and len(attempts) == 4


def test_a_stalled_call_ends_at_call_timeout_and_the_budget_stays_exact(tmp_path, capsys):
    with LLMTestServer(stall_s=3600.0) as srv:
        srv.inject(Fault.STALL, times=2)  # two calls stall in turn; each hits --call-timeout
        ran = _run(tmp_path, srv, "--request-timeout", "60", "--call-timeout", "1.5")
        sent = len(srv.requests)
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["calls_completed"] == 3
    calls, attempts = _ledger(ran["store"])
    failed = [c for c in calls if c[1] == "failed"]
    assert len(failed) == 2 and all(c[2] == 0 for c in failed)  # not charged to C
    assert sum(c[2] for c in calls) == 3 and len(calls) == 5 and sent == 5
    assert {c[3] for c in calls if c[3] is not None} == {c[0] for c in failed}  # re-issued
    for call in failed:
        mine = [a for a in attempts if a[0] == call[0]]
        assert [a[2] for a in mine] == ["deadline"]  # one attempt: the deadline bound it
        assert 1.5 - 0.05 <= mine[0][3] < 1.5 + SLACK_S, mine


def test_defaults_are_for_an_endpoint_and_the_embedded_model_keeps_its_own():
    http = RunConfig(task=TASK, budget=2, base_url="http://127.0.0.1:9/v1")
    s = llm_settings(http)
    assert (s.attempt_timeout_s, s.call_deadline_s) == (DEFAULT_REQUEST_TIMEOUT_S,
                                                       DEFAULT_CALL_TIMEOUT_S) == (300.0, 900.0)
    embedded = llm_settings(RunConfig(task=TASK, budget=2))
    assert (embedded.attempt_timeout_s, embedded.call_deadline_s) == (
        LLMSettings().attempt_timeout_s, LLMSettings().call_deadline_s)
    given = llm_settings(RunConfig(task=TASK, budget=2, request_timeout=5, call_timeout=7.5))
    assert (given.attempt_timeout_s, given.call_deadline_s) == (5.0, 7.5)
    # the Python API takes them as keywords, like every other RunConfig field
    cfg = build_config(TASK, 2, None, None, request_timeout=2.5, call_timeout=10)
    assert (cfg.request_timeout, cfg.call_timeout) == (2.5, 10)
    with pytest.raises(ConfigError, match="request_timeout="):  # the keyword (issue 37)
        build_config(TASK, 2, None, None, request_timeout="soon")


def test_a_sweep_takes_them_without_renaming_its_runs(tmp_path):
    base = {"sweep": {"name": "t"}, "defaults": {"task": TASK, "budget": 2, "seeds": 1},
            "grid": [{"depth": [1, 2]}]}
    plain = parse_sweep(base)
    timed = parse_sweep({**base, "defaults": {**base["defaults"], "request_timeout": 30,
                                              "call_timeout": 90.5}})
    assert [r.run_id for r in plain.runs] == [r.run_id for r in timed.runs]
    assert {(r.config.request_timeout, r.config.call_timeout) for r in timed.runs} == {(30, 90.5)}
    with pytest.raises(ConfigError, match="--call-timeout"):
        parse_sweep({**base, "defaults": {**base["defaults"], "call_timeout": 0}})


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "1e9", "soon"])
@pytest.mark.parametrize("flag", ["--request-timeout", "--call-timeout"])
def test_bad_timeouts_are_one_line_and_exit_2(tmp_path, capsys, flag, value):
    store = tmp_path / "s.sqlite"
    with pytest.raises(SystemExit) if value == "soon" else contextlib.nullcontext() as stop:
        code = main(["run", "--task", TASK, "--budget", "2", "--store", str(store), flag, value])
    if value == "soon":  # argparse refuses a non-number itself
        code = stop.value.code
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and flag in err
    assert len([line for line in err.splitlines() if "error" in line.lower()]) == 1
    assert not store.exists()


def test_resume_refuses_new_timeouts(tmp_path, capsys):
    """--resume continues with the stored config (the timeouts are stored with it)."""
    with LLMTestServer() as srv:
        _run(tmp_path, srv, "--request-timeout", "30", budget=2)
        capsys.readouterr()
        code = main(["run", "--resume", "t", "--store", str(tmp_path / "s.sqlite"),
                     "--call-timeout", "5"])
    assert code == 2 and "drop --call-timeout" in capsys.readouterr().err
    con = sqlite3.connect(tmp_path / "s.sqlite")
    stored = json.loads(con.execute("SELECT config_json FROM runs").fetchone()[0])
    con.close()
    assert (stored["request_timeout"], stored["call_timeout"]) == (30.0, None)

