"""Shared fixtures for engine tests: a real sandbox pool and scripted MinMaxDist replies.

MinMaxDist programs that return a fixed point set have a score we can compute by hand
(``task.score_value``), so a test knows the score of every program the server hands out.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from basevolve.sandbox import SandboxConfig, SandboxPool
from basevolve.tasks import load_task

TASK = "min_max_distance"


def program_reply(points: np.ndarray) -> str:
    return (
        "Here is an improved program.\n```python\nimport numpy as np\n\n\n"
        "def min_max_dist_dim2_16():\n"
        f"    return np.array({points.tolist()!r})\n```\n"
    )


class ScriptedReplies:
    """Reply ``i`` = a program whose points come from ``default_rng(seed + i)``.

    ``scores[i]`` is the true score of reply ``i``; every 5th reply (when ``junk``)
    is prose without a program, which must become a score-0 child.
    """

    def __init__(self, seed: int = 0, junk: bool = False) -> None:
        self.seed, self.junk = seed, junk
        self.task = load_task(TASK)
        self.scores: dict[int, float] = {}
        self._lock = threading.Lock()

    def __call__(self, body: dict, index: int) -> str:
        if self.junk and index % 5 == 4:
            with self._lock:
                self.scores[index] = 0.0
            return "I could not improve the program, sorry."
        points = np.random.default_rng(self.seed + index).uniform(0, 1, size=(16, 2))
        score = self.task.score_value(points).score
        with self._lock:
            self.scores[index] = score
        return program_reply(points)


@pytest.fixture(scope="session")
def pool() -> Iterator[SandboxPool]:
    with SandboxPool(SandboxConfig(workers=1)) as p:
        yield p


@pytest.fixture(scope="session")
def initial_score(pool: SandboxPool) -> float:
    task = load_task(TASK)
    return task.evaluate(pool.run(task.initial_program, task.entry, task.timeout_s)).score


@pytest.fixture(scope="session")
def scripted() -> type[ScriptedReplies]:
    """The :class:`ScriptedReplies` factory (fixtures avoid importing conftest)."""
    return ScriptedReplies


def pending_counts(store: Path) -> tuple[int, int]:
    """(counted calls, calls sent < 0.1 s ago and still pending): kill while one is fresh,
    so it is certainly still in flight (the servers here take >= 0.3 s) when SIGKILL lands."""
    try:
        con = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
        try:
            return con.execute(
                "SELECT coalesce(sum(counted),0), coalesce(sum(status='pending' AND "
                "created_at > ?),0) FROM calls", (time.time() - 0.1,)).fetchone()
        finally:
            con.close()
    except sqlite3.Error:
        return (0, 0)


def kill_run_mid_flight(cmd: list[str], store: Path, min_counted: int) -> None:
    """Start ``basevolve run`` as a process and SIGKILL it once ``min_counted`` calls are
    counted and a fresh call is in flight."""
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            counted, pending = pending_counts(store)
            if counted >= min_counted and pending >= 1:
                break
            assert proc.poll() is None, "run ended before it could be killed"
            time.sleep(0.02)
        else:
            pytest.fail("run never reached the kill point")
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()


@pytest.fixture(scope="session")
def kill_mid_run() -> Callable[[list[str], Path, int], None]:
    """:func:`kill_run_mid_flight` (fixtures avoid importing conftest)."""
    return kill_run_mid_flight
