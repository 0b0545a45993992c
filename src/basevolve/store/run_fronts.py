"""A stored run's objectives, its programs' objective vectors and its Pareto front (issue 36).

One reader for every surface that shows fronts -- ``export``, ``analyze``/``report`` and
the dashboard -- so they cannot disagree.  It reads only the store: the run's stored
config (``objectives``, ``reference_point``) and each program's evaluation metrics
(``programs.metrics_json``).  Like :mod:`basevolve.store.per_model` it takes a ``query``
callable, so the writer's :class:`~basevolve.store.sqlite.RunStore` and the dashboard's
read-only store both serve it.

Rules (the engine's, :mod:`basevolve.objectives`): a program's vector is
``Objectives.vector(metrics)``; a program with no vector (an objective missing, not a
number or not finite) or an invalid program is on no front.  The reference point is the
stored one; a run that has none stored yet (a store written before the engine derived it)
gets :func:`~basevolve.objectives.derive_reference_point` of its initial program's
vector, the rule the engine applies, and says so (``derived``).

Objective names are read leniently: a store written by another tool may hold any text
there, which every surface shows as text (escaped), never as markup; only the directions
must be ``max``/``min`` (otherwise the run is shown as a single-objective run).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from basevolve.fronts import Front, hypervolume, nondominated_mask
from basevolve.objectives import DIRECTIONS, Objectives, derive_reference_point

Query = Callable[[str, Sequence[Any]], list[Any]]
Vector = tuple[float, ...]


@dataclass(frozen=True)
class RunObjectives:
    """A multi-objective run's objectives and the reference point of its hypervolume."""

    objectives: Objectives
    reference: Vector | None  # None: neither stored nor derivable (no initial vector)
    derived: bool  # True: not stored; derived here from the initial program's vector

    def as_dict(self) -> dict[str, Any]:
        return {"objectives": self.objectives.as_dict(),
                "reference_point": None if self.reference is None else list(self.reference),
                "reference_derived": self.derived}


def stored_objectives(config: Mapping[str, Any]) -> Objectives | None:
    """The objectives of a stored run config, or None for a single-objective run (or a
    declaration no engine wrote: fewer than two, or a direction other than max/min)."""
    raw = config.get("objectives") if isinstance(config, Mapping) else None
    if not isinstance(raw, Mapping) or len(raw) < 2:
        return None
    names = tuple(str(k) for k in raw)
    directions = tuple(str(v) for v in raw.values())
    if any(d not in DIRECTIONS for d in directions):
        return None
    return Objectives(names, directions)


def _reference(config: Mapping[str, Any], objs: Objectives) -> Vector | None:
    point = config.get("reference_point")
    if not isinstance(point, Sequence) or isinstance(point, str) or len(point) != len(objs.names):
        return None
    try:
        out = tuple(float(v) for v in point)
    except (TypeError, ValueError):
        return None
    return out if all(math.isfinite(v) for v in out) else None


def metrics_of(text: str | None) -> dict[str, Any]:
    """A program's stored metrics (``metrics_json``); {} when absent or not a JSON object."""
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def run_config(query: Query, run_id: str) -> dict[str, Any] | None:
    rows = query("SELECT config_json FROM runs WHERE run_id = ?", (run_id,))
    if not rows:
        return None
    try:
        config = json.loads(rows[0][0] or "{}")
    except ValueError:
        return {}
    return config if isinstance(config, dict) else {}


def run_objectives(query: Query, run_id: str,
                   config: Mapping[str, Any] | None = None) -> RunObjectives | None:
    """The run's objectives and reference point, or None for a single-objective run."""
    config = run_config(query, run_id) if config is None else config
    objs = None if config is None else stored_objectives(config)
    if objs is None or config is None:
        return None
    ref = _reference(config, objs)
    if ref is not None:
        return RunObjectives(objs, ref, derived=False)
    rows = query("SELECT metrics_json FROM programs WHERE run_id = ? AND is_initial = 1",
                 (run_id,))
    initial = objs.vector(metrics_of(rows[0][0])) if rows else None
    if initial is None:
        return RunObjectives(objs, None, derived=False)
    return RunObjectives(objs, derive_reference_point(initial, objs), derived=True)


@dataclass(frozen=True)
class Point:
    """One program of a multi-objective run with its objective vector."""

    program_id: int
    is_initial: bool
    trajectory: int | None
    generation: int
    call_index: int | None
    score: float
    valid: bool
    vector: Vector | None
    on_front: bool = False


def points(query: Query, run_id: str, objs: Objectives) -> list[Point]:
    """Every program of the run (event order), ``on_front`` set for the run's front:
    the valid programs with a vector that no other such program dominates."""
    rows = query(
        "SELECT p.program_id, p.is_initial, p.trajectory, p.generation, c.call_index, "
        "p.score, p.valid, p.metrics_json FROM programs p "
        "LEFT JOIN calls c ON c.call_id = p.call_id WHERE p.run_id = ? "
        "ORDER BY p.is_initial DESC, p.seq, p.program_id", (run_id,))
    out = [Point(int(r[0]), bool(r[1]), None if r[2] is None else int(r[2]), int(r[3]),
                 None if r[4] is None else int(r[4]), float(r[5]), bool(r[6]),
                 objs.vector(metrics_of(r[7])) if r[6] else None)
           for r in rows]
    scored = [i for i, p in enumerate(out) if p.vector is not None]
    mask = nondominated_mask([out[i].vector for i in scored], objs)  # type: ignore[misc]
    for i, on in zip(scored, mask, strict=True):
        if on:
            p = out[i]
            out[i] = Point(p.program_id, p.is_initial, p.trajectory, p.generation,
                           p.call_index, p.score, p.valid, p.vector, True)
    return out


def step_programs(query: Query, run_id: str, objs: Objectives
                  ) -> list[tuple[int | None, Vector | None]]:
    """``(program_id, vector)`` of the initial program (first) and then of each charged
    call's child in the order the engine told the results (the order of
    :func:`basevolve.store.export.trajectories_table`'s steps); the vector is None for a
    call without a child, an invalid child or one with no vector."""
    init = query("SELECT program_id, metrics_json, valid FROM programs "
                 "WHERE run_id = ? AND is_initial = 1", (run_id,))
    rows = query(
        "SELECT p.program_id, p.metrics_json, p.valid FROM calls c LEFT JOIN programs p "
        "ON p.call_id = c.call_id WHERE c.run_id = ? AND c.counted = 1 "
        "ORDER BY coalesce(p.seq, c.seq)", (run_id,))
    first = [(int(init[0][0]), init[0][1], init[0][2])] if init else [(None, None, 0)]
    return [(pid, objs.vector(metrics_of(m)) if valid else None)
            for pid, m, valid in [*first, *((r[0], r[1], r[2]) for r in rows)]]


def step_vectors(query: Query, run_id: str, objs: Objectives) -> tuple[Vector | None,
                                                                      list[Vector | None]]:
    """The initial program's vector and each charged call's child's (:func:`step_programs`)."""
    steps = [v for _, v in step_programs(query, run_id, objs)]
    return steps[0], steps[1:]


def hypervolume_curve(start: Vector | None, steps: Sequence[Vector | None],
                      objs: Objectives, reference: Vector) -> list[float]:
    """The hypervolume of the run's front before the first call and after each step
    (length ``len(steps) + 1``), kept incrementally with :class:`~basevolve.fronts.Front`."""
    front = Front(objs, reference)
    front.add(-1, start)
    curve = [front.hypervolume]
    for i, vector in enumerate(steps):
        front.add(i, vector)
        curve.append(front.hypervolume)
    return curve


def front_hypervolume(pts: Sequence[Point], objs: Objectives, reference: Vector) -> float:
    """The hypervolume of the front members among ``pts``."""
    return hypervolume([p.vector for p in pts if p.on_front and p.vector is not None],
                       reference, objs)


__all__ = ["Point", "RunObjectives", "front_hypervolume", "hypervolume_curve", "metrics_of",
           "points", "run_config", "run_objectives", "step_programs", "step_vectors", "stored_objectives"]
