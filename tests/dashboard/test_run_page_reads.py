"""Issue 22, item 11: what the run page reads, and that reading less changed no value.

The first view of a 20,000-call run is bound by the rows it reads: every value SQLite
hands to Python is an object to create and convert (benchmarks/README.md, "A run of
20,000 calls").  So the bulk reads are kept narrow -- at most 10 values per call, 12 per
program and 2 per allocation event -- and never select the long text columns (prompts,
replies, program code and output, eligibility lists).  The narrow reads pack flags into
bits, bound events by the last seq instead of reading every seq, map trajectories out of
range to one code and count retries from the attempts' own index: the second test
patches a copy of a real run with what could break that (retried calls, events of
impossible trajectories, a live append) and checks every affected number against the
store, counted here row by row.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from dashboard_support import BASE

from basevolve.dashboard import run_data
from basevolve.dashboard.db import ReadOnlyStore
from basevolve.dashboard.run_cache import RunRows

RUN = BASE["run_id"]
#: the long text columns of calls, programs and allocations: never read for the page
TEXT = re.compile(r"\b(messages_json|raw_text|text|code|stdout|stderr|metrics_json|"
                  r"eligible_json|meta_json)\b")
WIDTH = {"calls": 10, "programs": 12, "allocations": 2}


def outer_table(sql: str) -> str | None:
    """The table after the outermost ``FROM`` (subqueries in parentheses skipped)."""
    depth, top = 0, []
    for ch in sql:
        depth += (ch == "(") - (ch == ")")
        top.append(ch if depth == 0 and ch not in "()" else " ")
    found = re.search(r"\bFROM (\w+)", "".join(top))
    return found.group(1) if found else None


class Recording(ReadOnlyStore):
    """A read-only store that keeps every statement and the rows it returned."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.seen: list[tuple[str, list[Any]]] = []

    def query(self, sql: str, params: Any = (), *, plain: bool = False) -> list[Any]:
        rows = super().query(sql, params, plain=True) if plain else super().query(sql, params)
        self.seen.append((sql, rows))
        return rows

    def one(self, sql: str, params: Any = ()) -> Any:
        row = super().one(sql, params)
        self.seen.append((sql, [] if row is None else [row]))
        return row


def test_the_run_page_reads_narrow_rows_and_no_long_text(store):
    rec = Recording(store)
    page = run_data.run_page(rec, RUN)
    assert page is not None and page["totals"]["calls_done"] == BASE["budget"]
    bulk: dict[str, int] = {}
    for sql, rows in rec.seen:
        flat = " ".join(sql.split())
        if "summary_json" in flat:  # the allocator's last state: one row, by design
            assert flat.endswith("LIMIT 1"), flat
            continue
        assert not TEXT.search(flat), flat
        assert "SELECT *" not in flat or "FROM runs" in flat, flat
        table = outer_table(flat)
        if table in WIDTH and "LIMIT" not in flat and rows:
            assert len(rows[0]) <= WIDTH[table], (table, len(rows[0]), flat)
            bulk[table] = max(bulk.get(table, 0), len(rows))
    con = sqlite3.connect(store)
    try:
        counts = {t: con.execute(f"SELECT count(*) FROM {t} WHERE run_id = ?", (RUN,)).fetchone()[0]
                  for t in WIDTH}
    finally:
        con.close()
    assert bulk == counts  # each table's rows were read, once in full, narrowly
    rec.db.close()


def _expected(db: Path, k: int) -> dict[str, Any]:
    """Retries, pull counts per arm and mean rewards, counted row by row in Python."""
    con = sqlite3.connect(db)
    try:
        retries = sum(max(n - 1, 0) for (n,) in con.execute(
            "SELECT (SELECT count(*) FROM attempts a WHERE a.call_id = c.call_id) "
            "FROM calls c WHERE run_id = ?", (RUN,)))
        events = con.execute("SELECT kind, trajectory, reward FROM allocations "
                             "WHERE run_id = ? ORDER BY seq", (RUN,)).fetchall()
    finally:
        con.close()
    arm = [t if 0 <= t < k else 0 for _, t, _ in events]
    pulls = [0] * k
    total, n = [0.0] * k, [0] * k
    for (kind, _, reward), a in zip(events, arm, strict=True):
        if kind in ("assign", "ask"):
            pulls[a] += 1
        if kind == "tell" and reward is not None:
            total[a] += reward
            n[a] += 1
    return {"retries": retries, "pulls": pulls, "events": len(events),
            "asks": sum(kind == "ask" for kind, _, _ in events),
            "mean": [t / c if c else None for t, c in zip(total, n, strict=True)]}


def _check(page: dict[str, Any], want: dict[str, Any]) -> None:
    assert page["totals"]["retries"] == want["retries"]
    per_arm = page["pulls"]["per_arm"]
    assert [row[-1] for row in per_arm] == want["pulls"]
    assert page["pulls"]["events"] == want["events"] and page["pulls"]["asks"] == want["asks"]
    assert page["pulls"]["mean_reward"] == pytest.approx(want["mean"], rel=1e-12)


def test_retries_and_impossible_trajectories_match_the_store(store, tmp_path):
    db = tmp_path / "patched.sqlite"
    src, dst = sqlite3.connect(store), sqlite3.connect(db)
    src.backup(dst)
    src.close()
    k = BASE["arms"]
    with dst:
        calls = [r[0] for r in dst.execute(
            "SELECT call_id FROM calls WHERE run_id = ? ORDER BY call_index", (RUN,))]
        for call, extra in ((calls[1], 2), (calls[5], 1)):  # 2 and 1 retries
            for i in range(extra):
                dst.execute("INSERT INTO attempts (call_id, attempt_index, status, error) "
                            "VALUES (?, ?, 'failed', 'HTTP 500')", (call, 100 + i))
        seq = dst.execute("SELECT max(seq) FROM allocations WHERE run_id = ?", (RUN,)).fetchone()[0]
        for i, (kind, traj, reward) in enumerate([("ask", -3, None), ("ask", 2**50, None),
                                                  ("tell", 2**62, 0.25), ("ask", k - 1, None),
                                                  ("tell", -(2**63), -1.5),
                                                  ("tell", 1, None)]):
            dst.execute("INSERT INTO allocations (run_id, seq, kind, pull_id, trajectory, reward, "
                        "created_at) VALUES (?, ?, ?, ?, ?, ?, 0)",
                        (RUN, seq + 1 + i, kind, 10_000 + i, traj, reward))
    dst.close()
    want = _expected(db, k)
    assert want["retries"] >= 3 and want["pulls"][0] >= 2
    ro = ReadOnlyStore(db)
    rows = RunRows(RUN)
    rows.refresh(ro)
    _check(run_data.run_page(ro, RUN, rows), want)
    _check(run_data.run_page(ro, RUN), want)
    assert rows.refresh(ro) is False  # nothing new: the kept page stands
    con = sqlite3.connect(db)  # a live run appends: the kept rows read only what is new
    with con:
        for i, traj in enumerate((2**40 + 1, 2**40, 1)):  # beyond the code's range, at it
            con.execute("INSERT INTO allocations (run_id, seq, kind, pull_id, trajectory, "
                        "created_at) VALUES (?, ?, 'ask', ?, ?, 0)",
                        (RUN, seq + 100 + i, 20_000 + i, traj))
    con.close()
    assert rows.refresh(ro) is True
    want = _expected(db, k)
    kept, fresh = run_data.run_page(ro, RUN, rows), run_data.run_page(ro, RUN)
    assert kept == fresh
    _check(kept, want)
    ro.db.close()
