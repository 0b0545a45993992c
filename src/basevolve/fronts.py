"""Pareto fronts and their hypervolume, kept incrementally (issue 36).

Dominance, non-dominated sorting and hypervolume are computed by **moocore** (from the
hypervolume literature's own authors); only NSGA-II's crowding distance, a few lines of
arithmetic with no library home in moocore, is written here.  Vectors are in the
objectives' natural units; directions come from :class:`basevolve.objectives.Objectives`.

A :class:`Front` is what a trajectory (or a whole run) keeps: its non-dominated members
and their hypervolume against the run's fixed reference point.  :meth:`Front.add` returns
the hypervolume gain of one new vector, which is what BaSE's reward on fronts credits
(once, to the pull whose child made it; engine/credit.py).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from basevolve.objectives import Objectives

Vector = tuple[float, ...]


def _moocore() -> Any:
    """moocore, imported on first use: the CLI imports the protocols (and so this module)
    to list its choices, and loading moocore there would slow every start-up by ~50 ms
    (issue 33: the CLI's start-up time does not grow)."""
    import moocore

    return moocore


def nondominated_mask(vectors: Sequence[Vector], objectives: Objectives) -> list[bool]:
    """Per vector: is it on the front of ``vectors`` (duplicates all kept)."""
    if not vectors:
        return []
    arr = np.asarray(vectors, dtype=float)
    return [bool(b) for b in _moocore().is_nondominated(arr, maximise=list(objectives.maximise),
                                                      keep_weakly=True)]


def pareto_ranks(vectors: Sequence[Vector], objectives: Objectives) -> list[int]:
    """Non-dominated sorting: 1 for the front, 2 for the front of the rest, ..."""
    if not vectors:
        return []
    arr = np.asarray(vectors, dtype=float)
    return [int(r) + 1 for r in _moocore().pareto_rank(arr, maximise=list(objectives.maximise))]


def hypervolume(vectors: Sequence[Vector], reference: Vector, objectives: Objectives) -> float:
    """The hypervolume the vectors dominate up to ``reference`` (points that do not
    dominate the reference add nothing)."""
    if not vectors:
        return 0.0
    arr = np.asarray(vectors, dtype=float)
    return float(_moocore().hypervolume(arr, ref=np.asarray(reference, dtype=float),
                                     maximise=list(objectives.maximise)))


def crowding_distances(vectors: Sequence[Vector]) -> list[float]:
    """NSGA-II's crowding distance of each vector within its set (Deb et al. 2002): the
    normalised side lengths of the box its neighbours span, summed over objectives; the
    extremes of each objective get infinity.  Larger = lonelier = preferred."""
    n = len(vectors)
    if n <= 2:
        return [math.inf] * n
    dist = [0.0] * n
    for k in range(len(vectors[0])):
        order = sorted(range(n), key=lambda i: (vectors[i][k], i))
        lo, hi = vectors[order[0]][k], vectors[order[-1]][k]
        dist[order[0]] = dist[order[-1]] = math.inf
        span = hi - lo
        if span <= 0:
            continue
        for j in range(1, n - 1):
            dist[order[j]] += (vectors[order[j + 1]][k] - vectors[order[j - 1]][k]) / span
    return dist


class Front:
    """The non-dominated members of everything added so far, with their hypervolume."""

    def __init__(self, objectives: Objectives, reference: Vector) -> None:
        if len(reference) != len(objectives.names):
            raise ValueError("reference point and objectives differ in length")
        self.objectives = objectives
        self.reference = tuple(float(r) for r in reference)
        self._members: dict[Hashable, Vector] = {}
        self._hv = 0.0

    @property
    def hypervolume(self) -> float:
        return self._hv

    def members(self) -> list[tuple[Hashable, Vector]]:
        """(key, vector) of each member, in the order they joined."""
        return list(self._members.items())

    def __len__(self) -> int:
        return len(self._members)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._members

    def dominated(self, vector: Vector) -> bool:
        """Is ``vector`` weakly dominated by a member (equal counts: it adds nothing)?"""
        mv = self.objectives.minimised(vector)
        for other in self._members.values():
            mo = self.objectives.minimised(other)
            if all(a <= b for a, b in zip(mo, mv, strict=True)):
                return True
        return False

    def add(self, key: Hashable, vector: Vector | None) -> float:
        """Offer one program's vector; return the hypervolume gain (0.0 when it is
        dominated, duplicates a member, or is None).  Members it dominates leave."""
        if vector is None or key in self._members or self.dominated(vector):
            return 0.0
        vector = tuple(float(v) for v in vector)
        mv = self.objectives.minimised(vector)
        keep = {k: v for k, v in self._members.items()
                if not all(a <= b for a, b in zip(mv, self.objectives.minimised(v), strict=True))}
        keep[key] = vector
        self._members = keep
        before = self._hv
        self._hv = hypervolume(list(keep.values()), self.reference, self.objectives)
        return max(0.0, self._hv - before)

    def crowding(self) -> dict[Hashable, float]:
        """Each member's crowding distance within the front (in minimised units)."""
        keys = list(self._members)
        vecs = [self.objectives.minimised(self._members[k]) for k in keys]
        return dict(zip(keys, crowding_distances(vecs), strict=True))
