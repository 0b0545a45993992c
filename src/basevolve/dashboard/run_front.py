"""The run page's front section: the Pareto front of a multi-objective run, live (issue 36).

Why a section of its own, and only for some runs: a run that declared objectives is
judged by its front, not by one best score; the page must show which programs are on
it and how its hypervolume grew.  The front, the vectors and the hypervolume are
:mod:`basevolve.store.run_fronts`' -- the reader ``export`` and ``analyze`` use -- so the
page cannot disagree with them.  A single-objective run gets no section and the run
page's JSON stays what it was.

What is sent: the objectives (names are outside text: the page writes them as text),
the reference point, every program with a vector (its id, vector, trajectory, call and
whether it is on the front) -- front members always, the others an even sample above
:data:`MAX_POINTS` (``thinned``) -- and the front's hypervolume before the first call and
after each charged call (thinned like the running best: the points where it changes).
The page draws one scatter per objective pair, front members highlighted, each point a
link to its program.  It is recomputed only when the run's rows change (the run page's
cache, :mod:`.app`), so a live run costs one read of its programs' metrics per change.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from basevolve.dashboard.db import ReadOnlyStore
from basevolve.store.run_fronts import (
    front_hypervolume,
    hypervolume_curve,
    points,
    run_objectives,
    step_vectors,
)

MAX_POINTS = 2000  # points of the scatter sent (front members are always all sent)
MAX_CURVE = 2000  # points of the hypervolume curve sent


def _changes(curve: np.ndarray) -> np.ndarray:
    """Indices that draw the same step line: first, last, each change and the point
    before it (evenly sampled above :data:`MAX_CURVE`)."""
    n = curve.size
    if n <= MAX_CURVE:
        return np.arange(n)
    change = np.flatnonzero(curve[1:] != curve[:-1])
    keep = np.unique(np.concatenate([[0, n - 1], change, change + 1]))
    if keep.size > MAX_CURVE:
        keep = np.unique(keep[np.linspace(0, keep.size - 1, MAX_CURVE).round().astype(int)])
    return keep


def front_section(store: ReadOnlyStore, run_id: str,
                  config: dict[str, Any]) -> dict[str, Any] | None:
    """The front section (module docstring), or None for a single-objective run."""
    ro = run_objectives(store.query, run_id, config)
    if ro is None:
        return None
    objs = ro.objectives
    pts = [p for p in points(store.query, run_id, objs) if p.vector is not None]
    front = [i for i, p in enumerate(pts) if p.on_front]
    rest = [i for i, p in enumerate(pts) if not p.on_front]
    room = max(MAX_POINTS - len(front), 0)
    if len(rest) > room:
        rest = [rest[int(j)] for j in np.unique(np.linspace(0, len(rest) - 1, room).round()
                                                 .astype(int))] if room else []
    shown = sorted(front + rest)
    section: dict[str, Any] = {
        "objectives": [{"name": n, "direction": d}
                       for n, d in zip(objs.names, objs.directions, strict=True)],
        "reference": None if ro.reference is None else list(ro.reference),
        "reference_derived": ro.derived,
        "programs": len(pts), "front_size": len(front),
        "thinned": len(shown) < len(pts),
        "points": {"program_id": [pts[i].program_id for i in shown],
                   "vector": [list(pts[i].vector or ()) for i in shown],
                   "front": [pts[i].on_front for i in shown],
                   "trajectory": [pts[i].trajectory for i in shown],
                   "call_index": [pts[i].call_index for i in shown],
                   "initial": [pts[i].is_initial for i in shown]},
        "hypervolume": None, "curve": None,
    }
    if ro.reference is not None:
        section["hypervolume"] = front_hypervolume(pts, objs, ro.reference)
        start, steps = step_vectors(store.query, run_id, objs)
        curve = np.asarray(hypervolume_curve(start, steps, objs, ro.reference), dtype=float)
        keep = _changes(curve)
        section["curve"] = {"calls": keep.tolist(), "hypervolume": curve[keep].tolist(),
                            "thinned": bool(keep.size < curve.size)}
    return section


__all__ = ["MAX_CURVE", "MAX_POINTS", "front_section"]
