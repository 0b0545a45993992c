"""Example function task: a FunSearch-style online bin-packing heuristic (docs/tasks.md).

Run it with::

    basevolve tasks --show examples/bin_packing.py
    basevolve run --task examples/bin_packing.py --budget 8 --depth 4

The evolved program is only the *heuristic*: ``priority(item, bins)`` scores every bin
that can still take ``item``.  The packing loop, the instances and the score live here,
in the trusted evaluator, which calls the sandboxed program once per item (500 calls per
evaluation).  The program never sees an instance ahead of time and cannot change how it
is scored.  Instances are generated at run time from a fixed seed: 5 sets of 100 items
of size 20..100 packed into bins of capacity 150 (in the style of the OR-Library sets
FunSearch used).  Fitness = mean over the sets of (lower bound on the bins needed) /
(bins used): 1.0 would be optimal on every set.
"""

from __future__ import annotations

import math

import numpy as np

from basevolve.sandbox.session import ProgramSession
from basevolve.tasks.base import ScoreResult
from basevolve.tasks.function import FunctionTask

CAPACITY = 150
N_SETS, N_ITEMS, SEED = 5, 100, 2026

INITIAL_PROGRAM = '''\
"""Priority function for online bin packing."""

import numpy as np


# EVOLVE-BLOCK-START
def priority(item: float, bins: np.ndarray) -> np.ndarray:
    """Priority of placing `item` into each bin; `bins` holds the remaining capacities
    of the bins that can take it.  The item goes to the bin with the highest priority."""
    return -(bins - item)  # best fit: the fullest bin that still fits
# EVOLVE-BLOCK-END
'''

SYSTEM_MESSAGE = """\
You are an expert in combinatorial optimization.
Improve the function priority(item, bins) of an online bin-packing heuristic.  Items
arrive one by one; `bins` is a numpy array of the remaining capacities of the open bins
that can still take the item, and the item is placed into the bin whose priority is
highest (a new bin is opened when none fits).  Return a numpy array of one priority per
bin.  The score is the mean, over several instances, of the lower bound on the number of
bins divided by the number of bins used (higher is better).  Return the whole program
in one Python code block."""


def instances() -> list[np.ndarray]:
    """The item sizes of each set (seeded, so every evaluation packs the same sets)."""
    rng = np.random.default_rng(SEED)
    return [rng.integers(20, 101, size=N_ITEMS).astype(float) for _ in range(N_SETS)]


class BinPacking(FunctionTask):
    """Online bin packing with an evolved priority function (FunSearch-style)."""

    name = "bin_packing"
    entry = "priority"  # the function the evaluator calls, once per item
    description = "FunSearch-style online bin packing: 5 x 100 items, capacity 150."
    timeout_s = 60.0  # the import and all 500 calls together
    call_timeout_s = 1.0  # one call of priority()

    @property
    def initial_program(self) -> str:
        return INITIAL_PROGRAM

    @property
    def system_message(self) -> str:
        return SYSTEM_MESSAGE

    def evaluate_program(self, program: ProgramSession) -> ScoreResult:
        """Pack every set with the program's priority(); trust nothing it returns."""
        ratios, used = [], []
        for k, items in enumerate(instances()):
            bins: list[float] = []  # remaining capacities
            for item in items:
                fits = [i for i, room in enumerate(bins) if room >= item]
                if not fits:
                    bins.append(CAPACITY - item)
                    continue
                r = program.call("priority", float(item), np.array([bins[i] for i in fits]))
                if not r.ok:
                    return ScoreResult(0.0, False, error=f"set {k}: priority() failed: {r.error}",
                                       artifacts={"failing call": f"set {k}, item {item:g}: "
                                                  f"{r.error}"})
                scores = np.asarray(r.value, dtype=float) if _numeric(r.value) else None
                if scores is None or scores.shape != (len(fits),) or not np.isfinite(scores).all():
                    return ScoreResult(0.0, False, error=f"set {k}: priority() must return "
                                       f"{len(fits)} finite numbers, got {_describe(r.value)}")
                bins[fits[int(np.argmax(scores))]] -= item
            lower = math.ceil(items.sum() / CAPACITY)
            ratios.append(lower / len(bins))
            used.append(len(bins))
        return ScoreResult(float(np.mean(ratios)), True,
                           metrics={"bins_used": float(sum(used)), "calls": float(program.calls)})


def _numeric(value: object) -> bool:
    """A list or array of real numbers (never a string or an object)."""
    try:
        return np.asarray(value).dtype.kind in "iuf"
    except (TypeError, ValueError):
        return False


def _describe(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
