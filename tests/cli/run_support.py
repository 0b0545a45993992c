"""Helpers shared by the CLI tests that interrupt a run (kill-and-resume tests)."""

from __future__ import annotations

import sqlite3
from pathlib import Path


class StopAfter:
    """A progress callback that interrupts the run (like Ctrl-C) after ``n`` completed
    calls."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __call__(self, snapshot: dict) -> None:
        if snapshot["calls_completed"] >= self.n:
            raise KeyboardInterrupt


def rows(store: Path, sql: str) -> list[dict]:
    """``sql``'s rows from the store at ``store``, as dicts."""
    con = sqlite3.connect(store)
    con.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in con.execute(sql)]
    finally:
        con.close()
