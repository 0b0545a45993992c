"""Helpers shared by the CLI tests that interrupt a run (kill-and-resume tests)."""

from __future__ import annotations

import sqlite3
import time
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


def wait_for(path: Path, needle: str, timeout_s: float) -> str:
    """A file's text once ``needle`` is in it (a run's stderr, polled every 0.1 s)."""
    deadline = time.monotonic() + timeout_s
    text = ""
    while time.monotonic() < deadline:
        text = path.read_text() if path.exists() else ""
        if needle in text:
            return text
        time.sleep(0.1)
    raise AssertionError(f"{needle!r} not seen; stderr so far:\n{text}")
