"""Sandbox worker: the memory cap of a whole evaluation when no cgroup is available.

Runs INSIDE the sandbox, loaded by ``_worker.py`` (standard library only).  Why (issue
22, item 17): ``RLIMIT_AS`` bounds each process, not the evaluation, so a program that
forks could use ``max_processes x memory_mb``.  Where the pool could not give the slot a
memory cgroup (``basevolve.sandbox.cgroups``), the worker watches instead: every
``WATCH_S`` while an evaluation (or a session call) runs and the program has more than
one process, it sums the proportional set size (``Pss`` from ``/proc/PID/smaps_rollup``:
pages shared between the forks are split among them, not counted once per process) of
every process of the evaluation -- the worker's children and their descendants; the
worker is a child subreaper, so orphans are among them -- and kills the evaluation when
the sum exceeds ``memory_mb``.  A single process needs no watching: its rlimit holds.

Known limit: between two looks a program can allocate more (at a few GB/s, up to about
``WATCH_S`` worth); the cgroup has no such window.
"""

from __future__ import annotations

import os
import sys
from typing import Any

_procs = sys.modules["_basevolve_sandbox_procs"]  # loaded by _worker.py before this module
WATCH_S = 0.05


def _children(pid: int | str) -> list[int]:
    kids: list[int] = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as fh:
                kids.extend(int(k) for k in fh.read().split())
    except OSError:
        pass
    return kids


def pss_kb(pid: int) -> int:
    """The process's proportional set size in KiB (resident size where Pss is hidden)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as fh:
            for line in fh:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    try:
        with open(f"/proc/{pid}/statm") as fh:
            return int(fh.read().split()[1]) * (os.sysconf("SC_PAGE_SIZE") // 1024)
    except (OSError, ValueError, IndexError):
        return 0


def evaluation_pids() -> list[int]:
    """Every process of the running evaluation: the worker's live subtree."""
    todo = [p for p in _children("self") if p not in _procs.EXITING]
    found: list[int] = []
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(_children(pid))
    return found


class Watcher:
    """Per-evaluation state; ``cap_mb=None`` (a cgroup caps memory) makes it a no-op."""

    def __init__(self, cfg: dict[str, Any]) -> None:
        cap = cfg.get("watch_memory_mb")
        self.cap_kb = int(cap) * 1024 if cap else None
        self.used_kb = 0

    def interval(self, remaining: float) -> float:
        """How long the worker may wait before it looks again."""
        return min(remaining, WATCH_S) if self.cap_kb else remaining

    def exceeded(self, pid: int) -> bool:
        """True when the evaluation whose first process is ``pid`` is over the cap."""
        if self.cap_kb is None or _procs.alone(pid):
            return False
        total = sum(pss_kb(p) for p in evaluation_pids())
        self.used_kb = max(self.used_kb, total)
        return total > self.cap_kb

    def facts(self) -> dict[str, Any]:
        """The header fields a parent needs to report the kill."""
        return {"memory_exceeded": True, "memory_by": "watcher",
                "memory_used_mb": round(self.used_kb / 1024, 1),
                "memory_limit_mb": (self.cap_kb or 0) // 1024}
