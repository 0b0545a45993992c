"""Example function task with two objectives: bin packing, fewer bins vs. less CPU time
(issue 36; docs/tasks.md, "Several objectives").

Run it with::

    basevolve tasks --show examples/pareto_bin_packing/task.py
    basevolve run --task examples/pareto_bin_packing/task.py --budget 16 --depth 16

The evolved program is an offline packer, ``pack(items, capacity)``: a list of item sizes
in, one bin index per item out.  Packing better costs time -- more restarts of a
perturbed first-fit-decreasing, a smarter order, a local search -- so there is no single
best program, only a trade-off, and the task declares both sides as objectives instead
of guessing a weighted sum before the run:

* ``quality`` (max): the mean, over the instances, of (lower bound on the bins needed) /
  (bins used); 1.0 would be optimal on every instance.  This is also the task's score.
* ``cpu_ms`` (min): the CPU milliseconds the program's process spent in its ``pack``
  calls, all instances together, measured by the sandbox worker *outside* that process
  (``CallResult.cpu_s``), so a program cannot fake it.  CPU rather than wall time because
  a run evaluates several programs at once on a shared machine.  Absolute times depend
  on the machine, so fronts are comparable only within one machine.

Everything that decides the vector lives here, in the trusted evaluator: the instances
(seeded, 4 sets of 120 items of size 30..80, capacity 150: hard enough for
first-fit decreasing that more restarts find fewer bins), the check of the returned
assignment (one non-negative bin index per item, no bin over capacity) and the sums.
A program that returns anything else scores 0 with the reason and has no vector.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from basevolve.sandbox.session import ProgramSession
from basevolve.tasks.base import ScoreResult
from basevolve.tasks.function import FunctionTask

CAPACITY = 150.0
N_SETS, N_ITEMS, SEED = 4, 120, 2036

INITIAL_PROGRAM = '''\
"""Offline bin packing: one bin index per item."""

import random


# EVOLVE-BLOCK-START
def pack(items: list[float], capacity: float) -> list[int]:
    """Return the bin of each item (0, 1, 2, ...); no bin may hold more than
    `capacity`.  Perturbed first-fit decreasing, best of a few restarts: more
    restarts pack tighter and cost more time."""
    rng = random.Random(7)
    restarts = 3
    noise = 0.2
    best = None
    for r in range(max(1, int(restarts))):
        keys = [x * (1.0 + noise * rng.random() * min(r, 1)) for x in items]
        order = sorted(range(len(items)), key=lambda i: -keys[i])
        rooms, where = [], [0] * len(items)
        for i in order:
            for b, room in enumerate(rooms):
                if room >= items[i]:
                    rooms[b] = room - items[i]
                    where[i] = b
                    break
            else:
                rooms.append(capacity - items[i])
                where[i] = len(rooms) - 1
        if best is None or len(rooms) < best[0]:
            best = (len(rooms), where)
    return best[1]
# EVOLVE-BLOCK-END
'''

SYSTEM_MESSAGE = """\
You are an expert in combinatorial optimization and fast Python.
Improve the function pack(items, capacity) of an offline bin packer: `items` is a list
of item sizes, and it must return one bin index (0, 1, 2, ...) per item such that no bin
holds more than `capacity`.  Two objectives count, and they pull against each other:
quality = lower bound on the bins / bins used (higher is better) and the CPU milliseconds
pack() takes (lower is better).  A faster packer that packs as well, or a tighter one
that costs little more, are both progress.  Return the whole program in one Python
code block."""


def instances() -> list[list[float]]:
    """The item sizes of each set (seeded, so every evaluation packs the same sets)."""
    rng = np.random.default_rng(SEED)
    return [rng.integers(30, 81, size=N_ITEMS).astype(float).tolist() for _ in range(N_SETS)]


def check_assignment(value: Any, items: list[float]) -> str | int:
    """The number of bins used by a valid assignment, or why it is not one."""
    if not isinstance(value, list | tuple) or len(value) != len(items):
        return f"pack() must return a list of {len(items)} bin indices, got {_describe(value)}"
    loads: dict[int, float] = {}
    for item, b in zip(items, value, strict=True):
        if isinstance(b, bool) or not isinstance(b, int | np.integer) or b < 0:
            return f"bin index {_describe(b)} is not a non-negative integer"
        loads[int(b)] = loads.get(int(b), 0.0) + item
    over = [b for b, load in loads.items() if load > CAPACITY + 1e-9]
    if over:
        return f"bin {over[0]} holds {loads[over[0]]:g} > capacity {CAPACITY:g}"
    return len(loads)


class ParetoBinPacking(FunctionTask):
    """Offline bin packing with two objectives: quality (max) and CPU time (min)."""

    name = "pareto_bin_packing"
    entry = "pack"
    description = "Bin packing, two objectives: quality (max) vs. CPU ms of pack() (min)."
    objectives = {"quality": "max", "cpu_ms": "min"}  # issue 36
    timeout_s = 60.0  # the import and all calls together
    call_timeout_s = 10.0  # one call of pack()

    @property
    def initial_program(self) -> str:
        return INITIAL_PROGRAM

    @property
    def system_message(self) -> str:
        return SYSTEM_MESSAGE

    def evaluate_program(self, program: ProgramSession) -> ScoreResult:
        """Pack every set with the program's pack(); trust nothing it returns."""
        ratios, cpu, wall = [], 0.0, 0.0
        for k, items in enumerate(instances()):
            r = program.call("pack", items, CAPACITY)
            if not r.ok:
                return ScoreResult(0.0, False, error=f"set {k}: pack() failed: {r.error}")
            used = check_assignment(r.value, items)
            if isinstance(used, str):
                return ScoreResult(0.0, False, error=f"set {k}: {used}")
            ratios.append(math.ceil(sum(items) / CAPACITY) / used)
            cpu, wall = cpu + r.cpu_s, wall + r.wall_s
        quality = float(np.mean(ratios))
        return ScoreResult(quality, True, metrics={
            "quality": quality, "cpu_ms": 1000.0 * cpu, "wall_ms": 1000.0 * wall})


def _describe(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
