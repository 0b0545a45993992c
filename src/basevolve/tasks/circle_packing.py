"""Circle packing (CP, n = 26): maximise the sum of radii of 26 disjoint circles in the unit square.

Paper, Appendix "Task Details": ``fitness = sum_radii / 2.635`` (AlphaEvolve's n = 26
construction; later *Evolve runs slightly exceed it, so fitness may be a little above 1).

Scoring rules (reference evaluators, tolerance ``tol`` = 1e-6; strict mode ``tol`` = 0):

* the entry returns ``(centers, radii, sum_radii)``; ``centers`` (26, 2), ``radii``
  (26,), both finite real numbers (arrays or nested lists, see
  :mod:`basevolve.geometry`);
* ``sum_radii`` is **never trusted**: the fitness uses ``radii.sum()`` recomputed here.
  The reported value is only recorded (``reported_sum_radii`` metric, when it is a
  finite number) and does not affect validity;
* a negative radius is invalid; a **zero radius is allowed** (as in the reference
  evaluators, ``r >= 0``): such a circle adds nothing, but it must still lie in the
  square and outside every other circle;
* containment: ``x - r >= -tol``, ``x + r <= 1 + tol`` and the same for ``y``;
* non-overlap: ``|c_i - c_j| >= r_i + r_j - tol`` for every pair.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from basevolve.errors import TaskError
from basevolve.geometry import (
    as_float_array,
    as_float_scalar,
    finite_metrics,
    pairwise_distances,
    quiet_numpy,
)
from basevolve.tasks.base import REFERENCE_TOL, TASKS, ScoreResult
from basevolve.tasks.builtin import BuiltinTask

N_CIRCLES = 26
BENCHMARK_SUM_RADII = 2.635  # AlphaEvolve, n = 26 (paper, Appendix "Task Details")


def parse_packing(
    value: Any,
) -> tuple[np.ndarray | None, np.ndarray | None, float | None, str | None]:
    """Split the entry's return value into ``(centers, radii, reported_sum, error)``."""
    if not isinstance(value, list | tuple) or len(value) != 3:
        kind = (
            f"a sequence of length {len(value)}"
            if isinstance(value, list | tuple)
            else type(value).__name__
        )
        return (
            None,
            None,
            None,
            (f"construct_packing() must return (centers, radii, sum_radii); got {kind}"),
        )
    centers, err = as_float_array(value[0], (N_CIRCLES, 2), "centers")
    if err:
        return None, None, None, err
    radii, err = as_float_array(value[1], (N_CIRCLES,), "radii")
    if err:
        return None, None, None, err
    return centers, radii, as_float_scalar(value[2]), None


@quiet_numpy
def score_packing(value: Any, *, tol: float = REFERENCE_TOL) -> ScoreResult:
    """Trusted CP scorer: a pure function of the returned data; never raises."""
    centers, radii, reported, err = parse_packing(value)
    if err:
        return ScoreResult(0.0, False, {}, err)
    assert centers is not None and radii is not None
    total = float(radii.sum())
    metrics = finite_metrics({"sum_radii": total})
    if reported is not None:
        metrics["reported_sum_radii"] = reported

    def invalid(reason: str) -> ScoreResult:
        return ScoreResult(0.0, False, metrics, reason)

    if (radii < 0).any():
        i = int(np.argmin(radii))
        return invalid(f"circle {i} has a negative radius {float(radii[i])!r}")
    # Smallest slack to the four walls, per circle: x - r, y - r, 1 - x - r, 1 - y - r.
    slack = np.concatenate([centers - radii[:, None], 1.0 - centers - radii[:, None]], axis=1)
    worst = np.unravel_index(int(np.argmin(slack)), slack.shape)
    if slack[worst] < -tol:
        i = int(worst[0])
        return invalid(
            f"circle {i} (center {centers[i].tolist()}, radius {float(radii[i])!r}) sticks out of the"
            f" unit square by {-slack[worst]:.3g} (tolerance {tol:g})"
        )
    dist, ii, jj = pairwise_distances(centers)
    gap = dist - (radii[ii] + radii[jj])
    k = int(np.argmin(gap))
    if gap[k] < -tol:
        return invalid(f"circles {ii[k]} and {jj[k]} overlap by {-gap[k]:.3g} (tolerance {tol:g})")
    return ScoreResult(total / BENCHMARK_SUM_RADII, True, metrics, None)


@TASKS.decorator("circle_packing")
class CirclePacking(BuiltinTask):
    """26 circles in the unit square; fitness = recomputed sum of radii / 2.635."""

    name = "circle_packing"
    entry = "construct_packing"
    description = "Pack 26 disjoint circles in the unit square, maximising the sum of radii (fitness = sum / 2.635)."
    timeout_s = 60.0

    def draw(self, value: Any, path: Path) -> None:
        """Circles in the unit square, parsed as the scorer parses them."""
        centers, radii, _, err = parse_packing(value)
        if err or centers is None or radii is None:
            raise TaskError(f"cannot draw: {err}")
        from basevolve.viz import geometry  # matplotlib only when a picture is drawn

        geometry.draw_circle_packing(centers, radii, path, score=self.score_value(value))

    def score_value(self, value: Any, *, tol: float = REFERENCE_TOL) -> ScoreResult:
        return score_packing(value, tol=tol)
