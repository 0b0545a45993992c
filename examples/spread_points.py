"""An example basevolve task: spread 12 points in the unit square (docs/tasks.md).

Run it with::

    basevolve tasks --show examples/spread_points.py
    basevolve evaluate --task examples/spread_points.py my_program.py
    basevolve run --task examples/spread_points.py --budget 8 --depth 4

A task file is ordinary Python that defines exactly one subclass of
``basevolve.tasks.base.Task``.  The evolved program (``initial_program`` and everything
the LLM writes from it) runs in the sandbox and only returns plain data; ``score_value``
is *your* trusted scorer and runs in the basevolve process on that data.
"""

from __future__ import annotations

import math
from typing import Any

from basevolve.tasks.base import REFERENCE_TOL, ScoreResult, Task

N_POINTS = 12
# A 4 x 3 grid with spacing 1/3 gives a minimum distance of 1/3: fitness 1.0 means
# "as good as the grid"; better arrangements exist, so a search can exceed 1.0.
GRID_DISTANCE = 1.0 / 3.0

INITIAL_PROGRAM = '''\
"""Place 12 points in the unit square, as far apart from each other as possible."""

import random


# EVOLVE-BLOCK-START
def spread_points():
    """Return 12 (x, y) pairs with 0 <= x, y <= 1."""
    rng = random.Random(0)
    return [[rng.random(), rng.random()] for _ in range(12)]


# EVOLVE-BLOCK-END
'''

SYSTEM_MESSAGE = """\
You are an expert in geometric optimization.
Improve the function spread_points() so that it returns 12 points (a list of [x, y]
pairs) inside the unit square [0, 1] x [0, 1] whose smallest pairwise distance is as
large as possible.  The score is that smallest distance divided by 1/3 (the distance of
a 4 x 3 grid).  Points outside the square make the program invalid.  Return the whole
program in one Python code block."""


class SpreadPoints(Task):
    """Maximise the smallest pairwise distance of 12 points in the unit square."""

    name = "spread_points"
    entry = "spread_points"  # the function the sandbox calls, with no arguments
    description = "Spread 12 points in the unit square (fitness = min distance / (1/3))."
    timeout_s = 10.0  # seconds one evolved program may run

    @property
    def initial_program(self) -> str:
        return INITIAL_PROGRAM

    @property
    def system_message(self) -> str:
        return SYSTEM_MESSAGE

    def score_value(self, value: Any, *, tol: float = REFERENCE_TOL) -> ScoreResult:
        """Score the returned data.  Never trust it: check shape, finiteness, bounds."""
        try:
            points = [(float(x), float(y)) for x, y in value]
        except (TypeError, ValueError):
            return ScoreResult(0.0, False, {}, "expected a list of [x, y] pairs")
        if len(points) != N_POINTS:
            return ScoreResult(0.0, False, {}, f"expected {N_POINTS} points, got {len(points)}")
        if not all(math.isfinite(c) for p in points for c in p):
            return ScoreResult(0.0, False, {}, "a coordinate is not finite")
        if any(not (-tol <= c <= 1 + tol) for p in points for c in p):
            return ScoreResult(0.0, False, {}, "a point lies outside the unit square")
        dmin = min(math.dist(p, q) for i, p in enumerate(points) for q in points[i + 1 :])
        return ScoreResult(dmin / GRID_DISTANCE, True, {"min_distance": dmin})
