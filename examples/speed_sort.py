"""Example function task: a speed task -- a correct and faster sort wins (docs/tasks.md).

Run it with::

    basevolve tasks --show examples/speed_sort.py
    basevolve run --task examples/speed_sort.py --budget 8 --depth 4

The evolved program defines ``sort_values(values)``: a 1-D float64 numpy array in, the
same values in ascending order out (a numpy array or a list).  The initial program is a
pure-Python insertion sort.  Everything that decides the score lives here, in the
trusted evaluator, which runs in the basevolve process and calls the sandboxed program:

1. **Correctness first** (untimed): a few edge cases (empty, one value, sorted,
   reversed, all equal, duplicates, negatives and -0.0) must come back exactly as
   ``np.sort`` returns them.
2. **Speed** (timed): inputs of ``SIZES`` values, ``REPEATS`` fresh arrays per size,
   each checked against ``np.sort`` as well.  A call's time is its ``cpu_s``: the CPU
   seconds of the program's process (all its threads), measured by the sandbox worker
   *outside* that process, so a program that patches ``time`` cannot fake it.  CPU
   rather than wall time because a run evaluates several programs at once and shares
   the machine with the LLM client: wall time would charge a program for its
   neighbours (``wall_s`` is still reported, as the metric ``timed_wall_seconds``).
   Per size the fastest of the repeats counts (as ``timeit`` does), and ``T`` is the
   sum over the sizes.

Fitness = ``T0 / (T0 + T)`` with ``T0 = 5 ms``: strictly decreasing in ``T`` and in
(0, 1); 0.5 means the timed calls took 5 ms of CPU together.  A program that returns a
wrong answer, fails or times out on any call scores 0 with the reason (and the failing
input as an artifact).  Each call's time includes the sandbox's work in the program's
process (decoding the argument, encoding the answer: about 0.1 ms), so even ``np.sort``
stays below 1.  A program cannot buy speed by waiting: sleeping costs no CPU but sorts
nothing, and every call has a wall-clock limit (``call_timeout_s``).

Absolute times depend on the machine (CPU model, numpy build), so scores are
comparable only within one machine.  The inputs are drawn afresh for every evaluation
from a seed taken from ``secrets`` (stored as the metric ``input_seed``, so a failing
case can be reproduced): a fixed seed would let a program regenerate the inputs and
sort them at import time, which is not timed.  Set ``INPUT_SEED`` to an int to fix it.
"""

from __future__ import annotations

import secrets

import numpy as np

from basevolve.records import CallResult
from basevolve.sandbox.session import ProgramSession
from basevolve.tasks.base import ScoreResult
from basevolve.tasks.function import FunctionTask

SIZES = (100, 300, 900)  # values per timed input
REPEATS = 3  # fresh inputs per size; the fastest call of each size counts
T0 = 0.005  # CPU seconds: the time at which the score is 0.5
INPUT_SEED: int | None = None  # None: a fresh seed for every evaluation (see above)

INITIAL_PROGRAM = '''\
"""A sort function whose speed is evolved."""

import numpy as np


# EVOLVE-BLOCK-START
def sort_values(values: np.ndarray) -> list[float]:
    """Return the values of the 1-D float array `values` in ascending order."""
    out = [float(v) for v in values]
    for i in range(1, len(out)):  # insertion sort
        x = out[i]
        j = i - 1
        while j >= 0 and out[j] > x:
            out[j + 1] = out[j]
            j -= 1
        out[j + 1] = x
    return out
# EVOLVE-BLOCK-END
'''

SYSTEM_MESSAGE = f"""\
You are an expert in writing fast Python code.
Make the function sort_values(values) as fast as possible while keeping it correct.
`values` is a 1-D numpy array of float64 (up to {max(SIZES)} values, possibly with
duplicates, negative numbers and -0.0); return the same values in ascending order, as
a numpy array or a list of floats, exactly as numpy.sort would.  numpy is available.
A trusted evaluator calls the function on fresh random inputs and measures each call's
CPU time from outside the program: fitness = {T0 * 1000:g} ms / ({T0 * 1000:g} ms + T), T the
total CPU seconds of the timed calls (higher is better); any wrong answer scores 0.
Return the whole program in one Python code block."""


def edge_cases() -> list[np.ndarray]:
    """Untimed correctness checks that random inputs rarely hit."""
    return [np.array([], dtype=float), np.array([3.5]), np.arange(7, dtype=float),
            np.arange(7, dtype=float)[::-1].copy(), np.full(5, 2.0),
            np.array([1.0, -0.0, 0.0, -2.5, 1.0, 1e300, -1e-300, 7.0, 0.0])]


def timed_inputs(seed: int) -> list[list[np.ndarray]]:
    """Per size, REPEATS fresh arrays of floats (with duplicates and negative numbers)."""
    rng = np.random.default_rng(seed)
    out = []
    for n in SIZES:
        arrays = []
        for _ in range(REPEATS):
            arrays.append(np.round(rng.normal(0.0, 100.0, size=n), 1))  # 0.1 steps: duplicates
        out.append(arrays)
    return out


class SpeedSort(FunctionTask):
    """Sort 1-D float arrays correctly, as fast as possible (timed by trusted code)."""

    name = "speed_sort"
    entry = "sort_values"
    description = "Speed task: a correct and faster sort_values(values) wins (T0 = 5 ms)."
    timeout_s = 30.0  # the import and every call together
    call_timeout_s = 2.0  # one call (a pure-Python sort of 900 values takes ~10-50 ms)

    @property
    def initial_program(self) -> str:
        return INITIAL_PROGRAM

    @property
    def system_message(self) -> str:
        return SYSTEM_MESSAGE

    def evaluate_program(self, program: ProgramSession) -> ScoreResult:
        """Check every answer against np.sort; time the timed calls from outside."""
        seed = INPUT_SEED if INPUT_SEED is not None else secrets.randbits(31)
        for k, x in enumerate(edge_cases()):
            failed = _check(program.call("sort_values", x), x, f"edge case {k}")
            if failed is not None:
                return failed
        cpu, wall = 0.0, 0.0
        for n, arrays in zip(SIZES, timed_inputs(seed), strict=True):
            fastest = None
            for r, x in enumerate(arrays):
                result = program.call("sort_values", x)
                failed = _check(result, x, f"size {n}, input {r} (input_seed {seed})")
                if failed is not None:
                    return failed
                if fastest is None or result.cpu_s < fastest.cpu_s:
                    fastest = result
            assert fastest is not None
            cpu += fastest.cpu_s
            wall += fastest.wall_s
        return ScoreResult(T0 / (T0 + cpu), True, metrics={
            "timed_cpu_seconds": cpu, "timed_wall_seconds": wall, "input_seed": float(seed),
            "calls": float(program.calls)})


def _check(result: CallResult, x: np.ndarray, case: str) -> ScoreResult | None:
    """None when the call returned np.sort(x) exactly, else a score-0 result saying why."""
    if not result.ok:
        return ScoreResult(0.0, False, error=f"{case}: sort_values() failed: {result.error}",
                           artifacts={"failing call": f"{case}: {result.error}"})
    expected = np.sort(x)
    got = _as_floats(result.value)
    if got is None or got.shape != expected.shape:
        reason = f"must return {len(x)} numbers, got {_describe(result.value)}"
    elif not np.array_equal(got, expected):  # -0.0 == 0.0: their order is free
        bad = int(np.flatnonzero(got != expected)[0])
        reason = (f"wrong order: position {bad} holds {float(got[bad])!r}, numpy.sort "
                  f"gives {float(expected[bad])!r}")
    else:
        return None
    return ScoreResult(0.0, False, error=f"{case}: {reason}", artifacts={
        "failing case": f"{case}: input {_describe(x.tolist())}: {reason}"})


def _as_floats(value: object) -> np.ndarray | None:
    """``value`` as a 1-D float array when it is a list/array of real numbers, else None."""
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError):
        return None
    if arr.dtype.kind not in "iuf" or arr.ndim != 1:
        return None
    return arr.astype(float)


def _describe(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."
