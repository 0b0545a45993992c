"""Helpers shared by the CLI tests that interrupt a run (kill-and-resume tests)."""

from __future__ import annotations


class StopAfter:
    """A progress callback that interrupts the run (like Ctrl-C) after ``n`` completed
    calls."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __call__(self, snapshot: dict) -> None:
        if snapshot["calls_completed"] >= self.n:
            raise KeyboardInterrupt
