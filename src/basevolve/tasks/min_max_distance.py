"""MinMaxDist (MMD, n = 16, d = 2): maximise (d_min / d_max)^2 over 16 points in the plane.

Paper, Appendix "Task Details": ``fitness = (d_min / d_max)^2 * 12.889266112`` (the
AlphaEvolve benchmark ratio is ``1 / sqrt(12.889266112) ~= 0.2786``).  The objective is
invariant to translation, rotation and scale, so there is no containment constraint and
the tolerance is irrelevant: reference and strict scores coincide.

Degenerate configurations: if two points coincide, ``d_min = 0`` and the score is 0.
Such a program is reported **invalid** with the reason naming the pair, following the
convention of all basevolve scorers that ``valid`` is exactly ``error is None`` (a zero
score always comes with a stated reason).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from basevolve.geometry import as_float_array, pairwise_distances, quiet_numpy
from basevolve.tasks.base import REFERENCE_TOL, TASKS, ScoreResult
from basevolve.tasks.builtin import BuiltinTask

N_POINTS = 16
BENCHMARK_INV_RATIO_SQUARED = 12.889266112  # 1 / (AlphaEvolve's d_min/d_max)^2


@quiet_numpy
def score_points(value: Any, *, tol: float = REFERENCE_TOL) -> ScoreResult:
    """Trusted MMD scorer: a pure function of the returned data; never raises.

    ``tol`` is accepted for the common scorer signature; MMD has no constraint it applies to.
    """
    del tol
    points, err = as_float_array(value, (N_POINTS, 2), "points")
    if err:
        return ScoreResult(0.0, False, {}, err)
    assert points is not None
    dist, ii, jj = pairwise_distances(points)
    kmin, kmax = int(np.argmin(dist)), int(np.argmax(dist))
    dmin, dmax = float(dist[kmin]), float(dist[kmax])
    if not np.isfinite(dist).all():
        return ScoreResult(
            0.0, False, {}, "coordinates are so large that distances overflow; rescale the points"
        )
    if dmin == 0.0:
        return ScoreResult(
            0.0,
            False,
            {"min_max_ratio": 0.0, "dmin": 0.0, "dmax": dmax},
            f"points {ii[kmin]} and {jj[kmin]} coincide (d_min = 0), so the score is 0",
        )
    ratio = dmin / dmax
    metrics = {
        "min_max_ratio": ratio,
        "inv_ratio_squared": ratio * ratio,
        "dmin": dmin,
        "dmax": dmax,
    }
    return ScoreResult(ratio * ratio * BENCHMARK_INV_RATIO_SQUARED, True, metrics, None)


def extreme_pairs(points: np.ndarray) -> tuple[tuple[int, int], tuple[int, int]]:
    """Indices of the closest and of the farthest pair (used by the picture)."""
    dist, ii, jj = pairwise_distances(points)
    kmin, kmax = int(np.argmin(dist)), int(np.argmax(dist))
    return (int(ii[kmin]), int(jj[kmin])), (int(ii[kmax]), int(jj[kmax]))


@TASKS.decorator("min_max_distance")
class MinMaxDistance(BuiltinTask):
    """16 points in the plane; fitness = (d_min/d_max)^2 * 12.889266112."""

    name = "min_max_distance"
    entry = "min_max_dist_dim2_16"
    description = "Place 16 points in the plane maximising (d_min/d_max)^2 (fitness = ratio^2 * 12.889266112)."
    timeout_s = 60.0

    def draw(self, value: Any, path: Path) -> None:
        """The points with their closest and farthest pairs."""
        pts = self.points_to_draw(value, (N_POINTS, 2))
        from basevolve.viz import geometry  # matplotlib only when a picture is drawn

        geometry.draw_min_max_distance(pts, extreme_pairs(pts), path,
                                       score=self.score_value(value))

    def score_value(self, value: Any, *, tol: float = REFERENCE_TOL) -> ScoreResult:
        return score_points(value, tol=tol)
