"""The function-task examples end to end (issue 21, part 4) through the Python API.

Each shipped example (``examples/bin_packing.py``, ``speed_sort.py``,
``symbolic_regression.py``) runs with ``basevolve.run`` against the real test server
(the generic ``evolve-block`` reply: the parent's EVOLVE block replaced by a candidate
block, rendered in each protocol's format), real sandboxes and a real store, with every
protocol, alone and under BaSE.  The grid is a Latin square: every example meets every
protocol once, and every example and every protocol also runs under UCB and under
Thompson sampling with K = 2.  Each run must spend exactly C counted calls, store one
program row per code call (all scored by the trusted evaluator) and beat its initial
program: every candidate block of ``tests/data/function_example_blocks.json`` but one
deliberately broken regression formula scores above the example's initial program.

Also: a function-task run SIGKILLed mid-flight and resumed from the store ends with
exactly C calls, and a broken candidate is stored with score 0, its reason and the
evaluator's artifacts.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

import basevolve
from basevolve.testing import LLMTestServer
from basevolve.testing.evolve_block import CANDIDATES_ENV, EvolveBlockReplies
from basevolve.testing.process import server_process

ROOT = Path(__file__).resolve().parents[2]
BLOCKS = json.loads((ROOT / "tests" / "data" / "function_example_blocks.json").read_text())
EXAMPLE_NAMES = ("bin_packing", "speed_sort", "symbolic_regression")
PROTOCOLS = ("greedy", "openevolve", "codeevolve", "shinkaevolve")
ALLOCATORS = ("single", "ucb", "thompson")
# small populations so the island protocols' machinery (meta prompts, migration,
# judge calls) happens within a few calls
SMALL = {"greedy": {}, "openevolve": {"num_islands": 2, "migration_interval": 2},
         "codeevolve": {"num_islands": 2, "init_pop": 1, "migration_interval": 2},
         "shinkaevolve": {"migration_interval": 2}}
BUDGET = 6
GRID = [(ex, proto, ALLOCATORS[(i + j) % 3])
        for i, ex in enumerate(EXAMPLE_NAMES) for j, proto in enumerate(PROTOCOLS)]


def example(name: str) -> str:
    return str(ROOT / "examples" / f"{name}.py")


def check_store(store: Path, run_id: str, budget: int) -> sqlite3.Connection:
    """Exact budget, one program row per code call, every row scored by the trusted
    evaluator; returns the open connection for further checks."""
    con = sqlite3.connect(store)
    assert con.execute("SELECT status FROM runs WHERE run_id=?", (run_id,)).fetchone()[0] == \
        "finished"
    assert con.execute("SELECT sum(counted) FROM calls WHERE run_id=?", (run_id,)).fetchone()[0] \
        == budget
    code_calls = sorted(c for (c,) in con.execute(
        "SELECT call_id FROM calls WHERE run_id=? AND counted=1 AND purpose IN "
        "('mutation', 'fix')", (run_id,)))
    children = sorted(c for (c,) in con.execute(
        "SELECT call_id FROM programs WHERE run_id=? AND is_initial=0", (run_id,)))
    assert children == code_calls and children
    trust = {t for (t,) in con.execute("SELECT DISTINCT trust FROM programs WHERE run_id=?",
                                       (run_id,))}
    assert trust == {"trusted-evaluator"}
    return con


def initial_score(con: sqlite3.Connection, run_id: str) -> float:
    return con.execute("SELECT score FROM programs WHERE run_id=? AND is_initial=1",
                       (run_id,)).fetchone()[0]


@pytest.mark.parametrize(("name", "protocol", "allocator"), GRID,
                         ids=[f"{e}-{p}-{a}" for e, p, a in GRID])
def test_example_runs_with_every_protocol_and_under_base(tmp_path, name, protocol, allocator):
    store, rid = tmp_path / "s.sqlite", f"{name}-{protocol}-{allocator}"
    with LLMTestServer(EvolveBlockReplies(BLOCKS[name])) as srv:
        result = basevolve.run(task=example(name), budget=BUDGET, base_url=srv.base_url,
                               store=store, run_id=rid, protocol=protocol,
                               protocol_params=SMALL[protocol], allocator=allocator,
                               arms=1 if allocator == "single" else 2, params=1e9,
                               max_in_flight=2, progress=False)
        assert len(srv.requests) == BUDGET  # the server saw exactly C requests
    assert result.status == "finished" and result.calls_completed == BUDGET
    assert result.task == name and result.summary["trust"] == "trusted-evaluator"
    con = check_store(store, rid, BUDGET)
    if allocator != "single":
        arms = {t for (t,) in con.execute("SELECT DISTINCT trajectory FROM calls")}
        assert arms == {0, 1}
    # a better candidate block was found: the run improved on its initial program
    assert result.best_score > initial_score(con, rid)
    best = con.execute("SELECT code FROM programs WHERE program_id=?",
                       (result.summary["best_program_id"],)).fetchone()[0]
    assert any(block in best for block in BLOCKS[name])


def test_a_broken_candidate_is_stored_with_its_reason_and_artifacts(tmp_path):
    """Every child non-finite: score 0, the evaluator's reason and the failing case."""
    broken = [b for b in BLOCKS["symbolic_regression"] if "np.log" in b]
    store = tmp_path / "s.sqlite"
    with LLMTestServer(EvolveBlockReplies(broken)) as srv:
        result = basevolve.run(task=example("symbolic_regression"), budget=2,
                               base_url=srv.base_url, store=store, run_id="broken",
                               params=1e9, progress=False)
    con = check_store(store, "broken", 2)
    rows = con.execute("SELECT score, valid, error, artifacts_json FROM programs "
                       "WHERE is_initial=0").fetchall()
    assert len(rows) == 2
    for score, valid, error, artifacts in rows:
        assert score == 0 and valid == 0 and "not finite" in error
        assert "predicted nan" in json.loads(artifacts)["failing case"]
    assert result.best_score == pytest.approx(initial_score(con, "broken"))


def test_sigkill_and_resume_of_a_function_task_run_ends_at_exactly_c(tmp_path, monkeypatch,
                                                                     kill_mid_run):
    """`basevolve run` on an example, killed with calls in flight, resumed to exactly C;
    the server is a process of its own, answering with ``--reply-function evolve-block``
    and the candidates of BASEVOLVE_TEST_CANDIDATES."""
    blocks = tmp_path / "blocks.json"
    blocks.write_text(json.dumps(BLOCKS["symbolic_regression"]))
    monkeypatch.setenv(CANDIDATES_ENV, str(blocks))
    store, out = tmp_path / "kill.sqlite", tmp_path / "out"
    budget = 8
    with server_process("--reply-function", "evolve-block") as url:
        cmd = [sys.executable, "-m", "basevolve", "run", "--task", example("symbolic_regression"),
               "--base-url", url, "--params", "1e9", "--budget", str(budget), "--depth", "4",
               "--store", str(store), "--run-id", "victim", "--out", str(out)]
        kill_mid_run(cmd, store, 3)
        done = subprocess.run([sys.executable, "-m", "basevolve", "run", "--resume", "victim",
                               "--store", str(store), "--out", str(out), "--json"],
                              capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["calls_completed"] == budget and summary["resumed"]
    con = check_store(store, "victim", budget)
    lost = con.execute("SELECT count(*) FROM calls WHERE status='lost'").fetchone()[0]
    reissued = con.execute("SELECT count(*) FROM calls WHERE reissue_of IN "
                           "(SELECT call_id FROM calls WHERE status='lost')").fetchone()[0]
    assert lost >= 1 and reissued == lost  # killed with calls in flight; each re-issued once
    assert summary["best_score"] > initial_score(con, "victim")


@pytest.mark.parametrize("name", ["bin_packing", "openevolve_dir"])
def test_a_reply_without_a_program_is_recorded_at_the_runs_trust_level(tmp_path, name):
    """A child with no program (the reply held none) is stored at the evaluator's trust
    level, so a function-task run reports one level (it said 'trusted-evaluator,
    trusted-scorer' when such a reply came, seen once in a long test run)."""
    task = str(ROOT / "examples" / name) + ("" if name.endswith("_dir") else ".py")
    level = "evaluator-in-sandbox" if name.endswith("_dir") else "trusted-evaluator"
    store = tmp_path / "s.sqlite"
    with LLMTestServer(["I would rather not write code today."]) as srv:
        result = basevolve.run(task=task, budget=2, base_url=srv.base_url, store=store,
                               run_id="nocode", params=1e9, progress=False)
    con = sqlite3.connect(store)
    rows = con.execute("SELECT trust, error FROM programs WHERE is_initial=0").fetchall()
    assert len(rows) == 2 and all(t == level and "code" in e for t, e in rows), rows
    assert result.summary["trust"] == level
