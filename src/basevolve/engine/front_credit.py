"""BaSE's reward on Pareto fronts: hypervolume gains credited once (issue 36, item 4).

A run that declares two or more objectives (:mod:`basevolve.objectives`) keeps, besides
its single scores, one Pareto front per trajectory and one for the whole run
(:class:`basevolve.fronts.Front`, moocore's dominance and hypervolume), kept
incrementally: every *valid* child is offered to its trajectory's front and to the run's
front when it is told to its protocol, in the order the engine tells children (so the
``--deterministic`` order and a resume's replay, which tells the same children in the
same order, rebuild the same fronts; :mod:`basevolve.engine.replay`).

The allocator's reward becomes:

* ``--reward improvement``: the hypervolume *gain* the pull's own children made.  A
  front grows only when a child joins it, and :meth:`Front.add` returns exactly that
  child's gain, so the gain is credited once, to the pull whose child grew the front --
  the rule :mod:`basevolve.engine.credit` applies to single scores.  A naive
  "hypervolume when told minus hypervolume when opened" would count one gain again for
  every pull of the arm that was in flight while it happened (issue 9, issue 23).
* ``--reward best`` (Algorithm 2): the trajectory front's hypervolume after the pull.

With ``--reward-front run`` both read the run's front instead of the trajectory's
(a pull is rewarded for pushing out the run's front, not only its own).

Units.  Allocators that clip rewards onto [0, ``reward_max``] (EXP3.P, Thompson, D-UCB,
...) assume fitness-like rewards near 1, while a raw hypervolume is in the product of
the objectives' units.  So every reward is measured in the box between the initial
program's vector and the reference point (each side ``|initial - reference|``, or
``max(|reference|, 1)`` where they tie): the initial program's own hypervolume is 1 unit
with a derived reference point, and ``best`` is the hypervolume gained over the initial
program, 0 at the start, so the sum of a trajectory's ``improvement`` rewards is its
``best``.  The scale depends only on the stored initial program and the stored
reference point, so a resume uses the same one.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from basevolve.config import REWARD_FRONTS
from basevolve.fronts import Front, Vector
from basevolve.objectives import Objectives, derive_reference_point, objectives_from_stored


def reward_scale(initial: Vector | None, reference: Vector) -> float:
    """The hypervolume of one reward unit (see the module docstring)."""
    sides = []
    for i, r in enumerate(reference):
        side = abs(initial[i] - r) if initial is not None else 0.0
        sides.append(side if side > 0 else max(abs(r), 1.0))
    return math.prod(sides)


class FrontCredit:
    """The fronts of one run and the hypervolume rewards they give."""

    def __init__(self, objectives: Objectives, reference: Sequence[float], arms: int,
                 scope: str = "trajectory") -> None:
        if scope not in REWARD_FRONTS:
            raise ValueError(f"unknown front scope {scope!r}")
        self.objectives = objectives
        self.reference: Vector = tuple(float(r) for r in reference)
        self.arms = arms
        self.scope = scope
        self.fronts: list[Front] = []
        self.run_front: Front | None = None
        self.scale = 1.0
        self.base = 0.0  # the initial program's hypervolume, in reward units

    def vector(self, valid: bool, metrics: Mapping[str, Any] | None) -> Vector | None:
        """A child's objective vector, or None (invalid or an objective unusable)."""
        if not valid or not metrics:
            return None
        return self.objectives.vector(metrics)

    def set_initial(self, key: Any, valid: bool, metrics: Mapping[str, Any] | None) -> None:
        """Start every front from the initial program (a reference point not yet known --
        an engine built without the start check -- is derived from it here)."""
        raw = self.objectives.vector(metrics) if metrics else None
        if not self.reference:
            if raw is None:
                raise ValueError("the initial program reports no usable objective vector")
            self.reference = derive_reference_point(raw, self.objectives)
        self.scale = reward_scale(raw, self.reference)
        self.fronts = [Front(self.objectives, self.reference) for _ in range(self.arms)]
        self.run_front = Front(self.objectives, self.reference)
        vec = self.vector(valid, metrics)
        for front in (*self.fronts, self.run_front):
            front.add(key, vec)
        self.base = self.run_front.hypervolume / self.scale

    def tell(self, trajectory: int, key: Any, valid: bool,
             metrics: Mapping[str, Any] | None) -> float:
        """Offer one told child to its trajectory's front and the run's; the gain of the
        front the reward reads, in reward units (0.0 when it joins neither)."""
        assert self.run_front is not None, "set_initial first"
        vec = self.vector(valid, metrics)
        gain_traj = self.fronts[trajectory].add(key, vec)
        gain_run = self.run_front.add(key, vec)
        return (gain_run if self.scope == "run" else gain_traj) / self.scale

    def level(self, trajectory: int) -> float:
        """``--reward best``: the front's hypervolume gained over the initial program."""
        assert self.run_front is not None, "set_initial first"
        front = self.run_front if self.scope == "run" else self.fronts[trajectory]
        return max(0.0, front.hypervolume / self.scale - self.base)

    def front(self, trajectory: int | None = None) -> Front:
        """The front of ``trajectory`` (None: the run's)."""
        assert self.run_front is not None, "set_initial first"
        return self.run_front if trajectory is None else self.fronts[trajectory]


def front_summary(cfg: Any, programs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The run summary's ``front`` (several objectives only; ``{}`` otherwise): the run's
    Pareto front rebuilt from its stored ``programs`` rows (initial first, then in the
    order they were told), its hypervolume in the objectives' own units, and its members'
    program ids and vectors."""
    credit = front_credit_for(cfg, 1)
    if credit is None or not programs:
        return {}
    rows = sorted(programs, key=lambda r: (not r["is_initial"], r["seq"] or 0))

    def metrics(r: Mapping[str, Any]) -> Any:
        return json.loads(r["metrics_json"]) if r["metrics_json"] else None

    credit.set_initial(rows[0]["program_id"], bool(rows[0]["valid"]), metrics(rows[0]))
    for r in rows[1:]:
        credit.tell(0, r["program_id"], bool(r["valid"]), metrics(r))
    front = credit.front(None)
    return {"front": {
        "objectives": credit.objectives.as_dict(), "reference_point": list(credit.reference),
        "hypervolume": front.hypervolume, "size": len(front),
        "members": [{"program_id": k, "vector": list(v)} for k, v in front.members()]}}


def front_credit_for(cfg: Any, arms: int) -> FrontCredit | None:
    """The run's :class:`FrontCredit`, or None for a single-objective run."""
    objectives = objectives_from_stored(getattr(cfg, "objectives", None))
    if objectives is None:
        return None
    return FrontCredit(objectives, tuple(getattr(cfg, "reference_point", ()) or ()), arms,
                       getattr(cfg, "reward_front", "trajectory"))


__all__ = ["FrontCredit", "front_credit_for", "front_summary", "reward_scale"]
