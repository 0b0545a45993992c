"""The issue-16 allocators driven by the real engine (CLI, test server, sandbox, store):
exactly C calls, every pull accounted for, with several calls in flight (pending pulls)."""

from __future__ import annotations

import json

import pytest

from basevolve.store.export import raw_table, runs_table
from basevolve.testing import LLMTestServer
from basevolve.testing.replies import seeded_packing_reply


@pytest.mark.parametrize("name", ["successive_halving", "successive_rejects", "sw_ucb",
                                  "d_ucb"])
def test_allocator_runs_a_base_run_to_exactly_c_calls(tmp_path, capsys, name):
    from basevolve.cli import main

    db, c, k = tmp_path / "runs.db", 14, 3
    with LLMTestServer(seeded_packing_reply) as srv:
        rc = main([str(a) for a in (
            "run", "--task", "circle_packing", "--budget", c, "--model", "test-model",
            "--params", 1e9, "--base-url", srv.base_url, "--store", db, "--seed", 1,
            "--run-id", "r", "--out", tmp_path / "out", "--allocator", name, "--arms", k,
            "--max-in-flight", 4)])
        assert rc == 0, capsys.readouterr().err
        assert len(srv.requests) == c
    calls = raw_table(db, "calls")
    assert int(calls["counted"].sum()) == c
    allocs = raw_table(db, "allocations")
    asks = allocs[allocs["kind"].isin(["assign", "ask"])]
    assert len(asks) == c and (asks["kind"] == "assign").sum() == k
    assert sorted(asks["trajectory"].unique()) == list(range(k))  # every arm initialised
    last = json.loads(allocs[allocs["kind"] == "ask"]["summary_json"].iloc[-1])
    assert last["allocator"] == name
    assert runs_table(db)["allocator"].iloc[0] == name
