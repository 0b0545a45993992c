"""Shared pieces of the sweep tests: the small grid of issue 11 and store readers.

The grid: budgets C in {2, 4} x every power-of-2 depth x 2 seeds (every run has
N = C/T <= 4), plus one BaSE row (UCB, K = 2, C = 4): 12 runs, 40 calls.  Its runs'
widths add up to 24 > 16, so a sweep sharing one 16-slot endpoint must fill it.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

SMALL_GRID = """\
[sweep]
name = "small"
thresholds = [0.5, 0.75]

[[endpoints]]
base_url = "{url}"
limit = 16

[defaults]
task = "circle_packing"
model = "test-model"
params = 1e9
base_url = "{url}"
seeds = 2

[[grid]]
budget = [2, 4]
depth = "powers-of-2"

[[grid]]
budget = 4
allocator = "ucb"
arms = 2
"""
RUNS, CALLS = 12, 40


def write_grid(path: Path, url: str, text: str = SMALL_GRID) -> Path:
    path.write_text(text.format(url=url))
    return path


def rows(db: Path, sql: str, *params: object) -> list[dict]:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    con.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in con.execute(sql, params)]
    finally:
        con.close()


def ledger(db: Path) -> dict[str, dict]:
    """Per run: status, budget, counted/lost calls, best score, child scores, solutions."""
    out = {r["run_id"]: dict(r) for r in rows(db, "SELECT run_id, status, budget FROM runs")}
    for r in rows(db, "SELECT run_id, sum(counted) c, sum(status='lost') lost FROM calls "
                      "GROUP BY run_id"):
        out[r["run_id"]].update(counted=r["c"], lost=r["lost"])
    for r in rows(db, "SELECT run_id, max(score) best FROM programs GROUP BY run_id"):
        out[r["run_id"]]["best"] = r["best"]
    for r in rows(db, "SELECT run_id, count(*) n FROM solutions GROUP BY run_id"):
        out[r["run_id"]]["solutions"] = r["n"]
    for rid in out:
        out[rid].setdefault("solutions", 0)
        out[rid]["scores"] = sorted(x["score"] for x in rows(
            db, "SELECT score FROM programs WHERE run_id=? AND is_initial=0", rid))
    return out
