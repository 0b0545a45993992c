"""The run a store holds as its decisions and results, for comparing a killed and resumed
run with an uninterrupted one (``--deterministic``, issue 23): shared by the engine tests."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any


def decided_order(con: sqlite3.Connection) -> Callable[[int], int]:
    """call id -> the n-th call decided: a call sent again after a kill stands in its
    first call's place."""
    rows = con.execute("SELECT call_id, reissue_of FROM calls ORDER BY call_index").fetchall()
    parent = dict(rows)
    decided = {cid: n for n, cid in enumerate(c for c, p in rows if p is None)}

    def key(cid: int) -> int:
        while parent[cid] is not None:
            cid = parent[cid]
        return decided[cid]

    return key


def logical_run(store: Path) -> dict[str, list[tuple[Any, ...]]]:
    """The run as its decisions and results, whatever calls were lost and sent again:
    a re-sent call stands in its first call's place (the n-th call decided); pulls by
    rank (ids are event numbers, which the lost calls' rows shift)."""
    con = sqlite3.connect(store)
    try:
        key = decided_order(con)
        pulls = [p for (p,) in con.execute(
            "SELECT pull_id FROM allocations WHERE kind IN ('assign', 'ask') ORDER BY seq")]
        rank = {p: i for i, p in enumerate(pulls)}
        calls = sorted((key(r[0]), rank[r[1]], *r[2:]) for r in con.execute(
            "SELECT call_id, pull_id, trajectory, generation, slot, parent_id, seed, purpose, "
            "messages_json, text, counted FROM calls WHERE status = 'ok'"))
        programs = [(key(r[0]) if r[0] is not None else None, *r[1:]) for r in con.execute(
            "SELECT call_id, program_id, parent_id, trajectory, generation, score, valid, "
            "code, error FROM programs ORDER BY seq")]
        allocations = [(r[0], rank[r[1]], *r[2:]) for r in con.execute(
            "SELECT kind, pull_id, trajectory, units, reward, eligible_json, summary_json "
            "FROM allocations ORDER BY seq")]
        return {"calls": calls, "programs": programs, "allocations": allocations}
    finally:
        con.close()
