"""Heilbronn triangle (HT, n = 11): maximise the smallest triangle area among 11 points.

Paper, Appendix "Task Details": the points lie on or inside the equilateral triangle
(0,0), (1,0), (1/2, sqrt(3)/2); the evaluator enumerates all C(11,3) = 165 triples,
takes the smallest area, normalises it by the container's area sqrt(3)/4, and divides by
AlphaEvolve's 0.036529889880030156.

Containment uses the Euclidean distance to each edge with tolerance ``tol`` (1e-6 in the
reference mode, 0 in strict mode).  A zero-area triple (collinear or coincident points)
gives score 0 and is reported **invalid** with the reason naming the triple (basevolve
convention: ``valid`` is exactly ``error is None``).  The initial program (all points
at the origin) is such a configuration and scores 0, as in the paper.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from basevolve.geometry import (
    TRIANGLE_AREA,
    as_float_array,
    finite_metrics,
    quiet_numpy,
    triangle_areas,
    triangle_edge_slack,
    triple_indices,
)
from basevolve.tasks.base import REFERENCE_TOL, TASKS, ScoreResult
from basevolve.tasks.builtin import BuiltinTask

N_POINTS = 11
BENCHMARK_MIN_AREA_NORMALIZED = 0.036529889880030156  # AlphaEvolve, n = 11
_TRIPLES = triple_indices(N_POINTS)
_EDGE_NAMES = ("bottom edge y = 0", "left edge", "right edge")


def smallest_triangle(points: np.ndarray) -> tuple[float, tuple[int, int, int]]:
    """Smallest area over all triples and the triple attaining it."""
    areas = triangle_areas(points, _TRIPLES)
    k = int(np.argmin(areas))
    i, j, m = (int(x) for x in _TRIPLES[k])
    return float(areas[k]), (i, j, m)


@quiet_numpy
def score_points(value: Any, *, tol: float = REFERENCE_TOL) -> ScoreResult:
    """Trusted HT scorer: a pure function of the returned data; never raises."""
    points, err = as_float_array(value, (N_POINTS, 2), "points")
    if err:
        return ScoreResult(0.0, False, {}, err)
    assert points is not None
    min_area, triple = smallest_triangle(points)
    normalized = min_area / TRIANGLE_AREA
    metrics = finite_metrics({"min_area_normalized": normalized, "min_area": min_area})
    slack = triangle_edge_slack(points)
    worst = np.unravel_index(int(np.argmin(slack)), slack.shape)
    if slack[worst] < -tol:
        i, edge = int(worst[0]), int(worst[1])
        return ScoreResult(
            0.0,
            False,
            metrics,
            f"point {i} {points[i].tolist()} lies outside the triangle, {-slack[worst]:.3g}"
            f" beyond the {_EDGE_NAMES[edge]} (tolerance {tol:g})",
        )
    if min_area == 0.0:
        return ScoreResult(
            0.0,
            False,
            metrics,
            f"points {triple[0]}, {triple[1]} and {triple[2]} are collinear or coincide"
            " (smallest triangle area 0), so the score is 0",
        )
    return ScoreResult(normalized / BENCHMARK_MIN_AREA_NORMALIZED, True, metrics, None)


@TASKS.decorator("heilbronn_triangle")
class HeilbronnTriangle(BuiltinTask):
    """11 points in the unit equilateral triangle; fitness = normalised min area / 0.0365299."""

    name = "heilbronn_triangle"
    entry = "heilbronn_triangle11"
    description = (
        "Place 11 points in the equilateral triangle maximising the smallest triangle area"
        " (fitness = min area / (sqrt(3)/4) / 0.036529889880030156)."
    )
    timeout_s = 60.0

    def draw(self, value: Any, path: Path) -> None:
        """The points in the triangle with the smallest triangle they span."""
        pts = self.points_to_draw(value, (N_POINTS, 2))
        from basevolve.viz import geometry  # matplotlib only when a picture is drawn

        geometry.draw_heilbronn_triangle(pts, smallest_triangle(pts), path,
                                         score=self.score_value(value))

    def score_value(self, value: Any, *, tol: float = REFERENCE_TOL) -> ScoreResult:
        return score_points(value, tol=tol)
