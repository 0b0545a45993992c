"""The function-task examples through the command line (issue 21, part 4).

``basevolve run --task examples/X.py`` for each shipped function-task example, against
the real test server answering with the generic ``evolve-block`` reply (candidate
blocks from ``tests/data/function_example_blocks.json``), with each protocol, alone and
under BaSE; then a small sweep over one example run with ``basevolve sweep``, analysed
with ``basevolve analyze --store`` and reported with ``basevolve report``.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from basevolve.cli import main
from basevolve.testing import LLMTestServer
from basevolve.testing.evolve_block import EvolveBlockReplies

ROOT = Path(__file__).resolve().parents[2]
BLOCKS = json.loads((ROOT / "tests" / "data" / "function_example_blocks.json").read_text())
CASES = [  # (example, protocol, its parameters, allocator flags)
    ("bin_packing", "greedy", [], ["--allocator", "ucb", "--arms", "2"]),
    ("speed_sort", "openevolve", ["num_islands=2", "mode=diff"], []),
    ("symbolic_regression", "codeevolve", ["num_islands=2", "init_pop=1"],
     ["--allocator", "thompson", "--arms", "2"]),
    ("speed_sort", "shinkaevolve", ["migration_interval=2"],
     ["--allocator", "ucb", "--arms", "2"]),
]
BUDGET = 6


def example(name: str) -> str:
    return str(ROOT / "examples" / f"{name}.py")


@pytest.mark.parametrize(("name", "protocol", "params", "alloc"), CASES,
                         ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_basevolve_run_on_an_example(tmp_path, capsys, name, protocol, params, alloc):
    store = tmp_path / "s.sqlite"
    args = ["run", "--task", example(name), "--budget", str(BUDGET), "--params", "1e9",
            "--protocol", protocol, *(a for p in params for a in ("--protocol-param", p)),
            *alloc, "--max-in-flight", "2", "--store", str(store), "--run-id", "cli",
            "--out", str(tmp_path / "out"), "--json"]
    with LLMTestServer(EvolveBlockReplies(BLOCKS[name])) as srv:
        code = main([*args, "--base-url", srv.base_url])
        assert len(srv.requests) == BUDGET
    out = capsys.readouterr().out
    assert code == 0
    summary = json.loads(out.strip().splitlines()[-1])
    assert summary["task"] == name and summary["calls_completed"] == BUDGET
    assert summary["trust"] == "trusted-evaluator"
    con = sqlite3.connect(store)
    assert con.execute("SELECT sum(counted) FROM calls").fetchone()[0] == BUDGET
    assert con.execute("SELECT protocol, allocator FROM runs").fetchone() == (
        protocol, alloc[1] if alloc else "single")
    code_calls = con.execute("SELECT count(*) FROM calls WHERE purpose IN ('mutation', 'fix')"
                             ).fetchone()[0]
    assert con.execute("SELECT count(*) FROM programs WHERE is_initial=0").fetchone()[0] == \
        code_calls >= 1
    assert {t for (t,) in con.execute("SELECT trust FROM programs")} == {"trusted-evaluator"}
    initial = con.execute("SELECT score FROM programs WHERE is_initial=1").fetchone()[0]
    assert summary["best_score"] > initial  # a better candidate block won
    best = (tmp_path / "out" / "best_program.py").read_text()
    assert any(block in best for block in BLOCKS[name])


SWEEP = """\
[sweep]
name = "symreg"
thresholds = [0.5, 0.9]

[defaults]
task = "{task}"
model = "test-model"
params = 1e9
base_url = "{url}"
seeds = 2

[[grid]]
budget = 4
depth = "powers-of-2"
"""


def test_sweep_analyze_and_report_on_a_function_task(tmp_path, capsys):
    """A depth/breadth grid (C = 4, T in 1, 2, 4) x 2 seeds over symbolic regression."""
    db, cfg = tmp_path / "sweep.sqlite", tmp_path / "sweep.toml"
    with LLMTestServer(EvolveBlockReplies(BLOCKS["symbolic_regression"])) as srv:
        cfg.write_text(SWEEP.format(task=example("symbolic_regression"), url=srv.base_url))
        assert main(["sweep", str(cfg), "--store", str(db), "--json"]) == 0
        assert len(srv.requests) == 6 * 4
    doc = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert doc["finished"] == 6 and doc["failed"] == []
    con = sqlite3.connect(db)
    runs = con.execute("SELECT r.run_id, r.depth, r.budget, sum(c.counted) FROM runs r "
                       "JOIN calls c USING (run_id) GROUP BY r.run_id").fetchall()
    assert sorted((d, b, n) for _, d, b, n in runs) == [(1, 4, 4)] * 2 + [(2, 4, 4)] * 2 + \
        [(4, 4, 4)] * 2
    assert {t for (t,) in con.execute("SELECT trust FROM programs")} == {"trusted-evaluator"}

    fast = ["--resamples", "50", "--shuffles", "50", "--gate-shuffles", "50"]
    assert main(["analyze", "--store", str(db), "--json", *fast]) == 0
    analysis = json.loads(capsys.readouterr().out)
    cells = [r for r in analysis["summary"] if r["task"] == "symbolic_regression"]
    assert len(cells) == 3 and all(r["n"] == 2 for r in cells)  # one per depth, 2 seeds each
    assert all(0 < r["mean"] <= 1 for r in cells)

    out = tmp_path / "report"
    assert main(["report", "--store", str(db), "--out", str(out), *fast]) == 0
    capsys.readouterr()
    assert (out / "index.html").is_file()
    tables = (out / "tables.md").read_text()
    assert "symbolic" in tables and "regression" in tables
