"""The OpenEvolve-layout example with every protocol, alone and under BaSE (issue 21, part 4).

``examples/openevolve_dir`` runs through ``basevolve.run`` against the real test server
(the generic ``evolve-block`` reply: the parent's EVOLVE block replaced by one of the
candidate ``search`` functions below, rendered in each protocol's format), real
sandboxes and a real store.  Each run must spend exactly C counted calls, store one
program row per code call, every one scored by the directory's evaluator in the sandbox
(trust ``evaluator-in-sandbox``), and beat the initial program: every candidate is a
finer search than the initial 41-point grid.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import basevolve
from basevolve.testing import LLMTestServer
from basevolve.testing.evolve_block import EvolveBlockReplies

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "openevolve_dir"
CANDIDATES = [
    "def search(f, lo, hi):\n"
    "    xs = [lo + (hi - lo) * i / 150 for i in range(151)]\n"
    "    return min(xs, key=f)\n",
    "def search(f, lo, hi):\n"
    "    n = 100\n"
    "    xs = [lo + (hi - lo) * i / n for i in range(n + 1)]\n"
    "    best = min(xs, key=f)\n"
    "    step = (hi - lo) / n\n"
    "    for _ in range(25):\n"
    "        step /= 2\n"
    "        best = min((best - step, best, best + step), key=lambda x: f(min(max(x, lo), hi)))\n"
    "    return min(max(best, lo), hi)\n",
]
PROTOCOLS = ("greedy", "openevolve", "codeevolve", "shinkaevolve")
ALLOCATORS = ("single", "ucb", "thompson", "ucb")
SMALL = {"greedy": {}, "openevolve": {"num_islands": 2, "migration_interval": 2},
         "codeevolve": {"num_islands": 2, "init_pop": 1, "migration_interval": 2},
         "shinkaevolve": {"migration_interval": 2}}
BUDGET = 6


@pytest.mark.parametrize(("protocol", "allocator"), list(zip(PROTOCOLS, ALLOCATORS,
                                                            strict=True)),
                         ids=[f"{p}-{a}" for p, a in zip(PROTOCOLS, ALLOCATORS, strict=True)])
def test_openevolve_dir_runs_with_every_protocol(tmp_path, protocol, allocator):
    store, rid = tmp_path / "s.sqlite", f"oe-{protocol}-{allocator}"
    with LLMTestServer(EvolveBlockReplies(CANDIDATES)) as srv:
        result = basevolve.run(task=str(EXAMPLE), budget=BUDGET, base_url=srv.base_url,
                               store=store, run_id=rid, protocol=protocol,
                               protocol_params=SMALL[protocol], allocator=allocator,
                               arms=1 if allocator == "single" else 2, params=1e9,
                               max_in_flight=2, progress=False)
        assert len(srv.requests) == BUDGET
    assert result.status == "finished" and result.calls_completed == BUDGET
    assert result.summary["trust"] == "evaluator-in-sandbox"
    con = sqlite3.connect(store)
    try:
        assert con.execute("SELECT sum(counted) FROM calls").fetchone()[0] == BUDGET
        code_calls = sorted(c for (c,) in con.execute(
            "SELECT call_id FROM calls WHERE counted=1 AND purpose IN ('mutation', 'fix')"))
        children = sorted(c for (c,) in con.execute(
            "SELECT call_id FROM programs WHERE is_initial=0"))
        assert children == code_calls and children
        trust = {t for (t,) in con.execute("SELECT DISTINCT trust FROM programs")}
        assert trust == {"evaluator-in-sandbox"}
        initial = con.execute("SELECT score FROM programs WHERE is_initial=1").fetchone()[0]
        best = con.execute("SELECT code FROM programs WHERE program_id=?",
                           (result.summary["best_program_id"],)).fetchone()[0]
        assert any(c in best for c in CANDIDATES)
        if allocator != "single":
            assert {t for (t,) in con.execute("SELECT DISTINCT trajectory FROM calls")} == {0, 1}
    finally:
        con.close()
    assert result.best_score > initial
