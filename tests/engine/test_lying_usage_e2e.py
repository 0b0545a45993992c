"""A FLOPs budget against a server whose ``usage`` lies (issue 22, item 3).

Before: negative token counts *added* budget back (a ``--budget-flops`` run made 1,317
calls and was still under budget), and ``10**30`` raised ``OverflowError`` in the store,
leaving the call ``pending`` and the run crashed.  Now such usage is unmeasured: every
call's FLOPs are the worst case an attempt without usage is charged (no measured prompt,
``--max-tokens`` of output), the budget charges each call exactly what it reserved for it
(issue 32: its worst case, prompt bound included), the run ends within its budget after
the few calls that budget pays for, and the summary and ``runs --json`` count the refused
usages.
"""

from __future__ import annotations

import json
import sqlite3

import pytest

from basevolve.cli import main
from basevolve.records import IMPOSSIBLE_USAGE
from basevolve.testing import LLMTestServer
from basevolve.testing.llm_server import default_reply

PARAMS = 1e9
MAX_TOKENS = 200
PER_CALL = 2 * PARAMS * MAX_TOKENS  # the worst case of an attempt that reported no usage
LIMIT = 40 * PER_CALL  # the first call must fit its reserved worst case (prompt bound too)
GUARD = 100  # requests after which the server fails: a run the lie fools ends fast, failed


def _guarded(body: dict, index: int) -> str:
    if index >= GUARD:
        raise RuntimeError("more calls than the budget pays for")
    return default_reply(body, index)


@pytest.mark.parametrize("lie", [{"completion_tokens": -100_000},
                                 {"completion_tokens": 10**30},
                                 {"prompt_tokens": 50, "cached_tokens": 10**6}])
def test_a_flops_budget_holds_against_lying_usage(tmp_path, capsys, lie) -> None:
    db = tmp_path / "lies.sqlite"
    with LLMTestServer(_guarded, **lie) as srv:
        assert main(["run", "--task", "min_max_distance", "--base-url", srv.base_url,
                     "--params", str(PARAMS), "--store", str(db), "--run-id", "lies",
                     "--budget-flops", f"{LIMIT:.0f}", "--max-tokens", str(MAX_TOKENS),
                     "--max-in-flight", "2", "--json"]) == 0
        requests = srv.n_requests
    s = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    con = sqlite3.connect(db)
    try:
        calls = con.execute("SELECT status, flops FROM calls").fetchall()
        reserved = [json.loads(m)["budget_reserved"] for (m,) in con.execute(
            "SELECT meta_json FROM calls")]
        attempts = con.execute("SELECT prompt_tokens, completion_tokens, flops, error "
                               "FROM attempts").fetchall()
    finally:
        con.close()
    assert s["status"] == "finished" and all(status == "ok" for status, _ in calls)
    # every call cost the worst case: the budget paid for at most LIMIT / PER_CALL calls
    assert all(f == pytest.approx(PER_CALL) for _, f in calls)
    assert 1 <= len(calls) <= LIMIT / PER_CALL and requests == len(attempts) == len(calls)
    assert all(r >= PER_CALL for r in reserved)  # the reservation adds the prompt's bound
    assert s["budget_spent"] == pytest.approx(sum(reserved))  # each call: its reservation
    assert s["budget_spent"] <= LIMIT
    assert s["flops"] == pytest.approx(s["flops_unmeasured"])  # nothing was measured
    assert (s["prompt_tokens"], s["cached_tokens"], s["completion_tokens"]) == (0, 0, 0)
    assert all(p is None and c is None and e.startswith(IMPOSSIBLE_USAGE)
               for p, c, _, e in attempts)
    assert s["usage_impossible"] == len(attempts)
    assert main(["runs", "--store", str(db), "--json"]) == 0
    row = json.loads(capsys.readouterr().out.strip().splitlines()[-1])[0]
    assert row["usage_impossible"] == len(attempts)


def test_an_honest_server_has_no_impossible_usage(tmp_path, capsys) -> None:
    db = tmp_path / "honest.sqlite"
    with LLMTestServer() as srv:
        assert main(["run", "--task", "min_max_distance", "--base-url", srv.base_url,
                     "--params", str(PARAMS), "--store", str(db), "--run-id", "honest",
                     "--budget", "3", "--json"]) == 0
    s = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert s["usage_impossible"] == 0 and s["flops_unmeasured"] == 0.0
    assert s["completion_tokens"] > 0
