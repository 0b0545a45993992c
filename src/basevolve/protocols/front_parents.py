"""Parents chosen with the Pareto front in mind (issue 36, item 3).

In a run with several objectives there is no single "current best": greedy's parent
becomes *a member of the trajectory's front*, and the island protocols may draw their
parents from the island's front (``--protocol-param parent_selection=front``).

Which member: the one chosen as a parent the fewest times so far; ties broken by the
largest NSGA-II crowding distance (Deb et al. 2002: the loneliest point of the front), as
the issue asks ("ties broken by crowding distance, as NSGA-II does"); then by the order
of joining the front.  Why uses first and not crowding first: the two extremes of every
objective have infinite crowding distance, so a crowding-first rule would mutate only the
extremes and never an interior member.  Uses first gives every member its turn; within a
turn the loneliest goes first, so the search spreads along the front.  Deterministic:
a protocol replayed from the store on resume makes the same choices.

Dominance is moocore's (:func:`basevolve.fronts.nondominated_mask`), the crowding
distance :func:`basevolve.fronts.crowding_distances`; nothing here is random, so a
protocol replayed from the store on resume makes the same choices.

Uses are counted at ask time.  Greedy gives a cancelled asynchronous ask's use back
(:meth:`ParentFront.release`), so the re-ask is the same proposal; the island protocols
do not (their random draws are not given back on cancel either), and a resume does not
cancel: it re-sends the stored proposals of calls that were in flight.

A single-objective run never builds any of this (the protocols keep their own rules).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from basevolve.errors import ConfigError
from basevolve.fronts import Vector, crowding_distances, nondominated_mask
from basevolve.objectives import Objectives
from basevolve.params import Param

T = TypeVar("T")

#: ``--protocol-param parent_selection`` value that draws parents from the front.
FRONT = "front"
#: The island protocols' declared option (ShinkaEvolve adds ``front`` to its own
#: ``parent_selection`` strategies instead).
PARENT_SELECTION = Param("parent_selection", str, "protocol", "the protocol's own parent "
                         "rule, or 'front': members of the island's Pareto front in turn, the "
                         "loneliest (crowding distance) first (needs --objectives; issue 36)",
                         choices=("protocol", FRONT))


def check_parent_selection(protocol: str, params: Mapping[str, object],
                           objectives: Mapping[str, str] | object | None) -> None:
    """``parent_selection=front`` needs a run with several objectives: one line, before
    anything is stored (the run's start checks call this once the task's own objectives
    are known; the protocol's constructor checks again)."""
    if params.get("parent_selection") == FRONT and not objectives:
        raise ConfigError(f"--protocol-param parent_selection=front for protocol {protocol!r} "
                          f"needs two or more objectives; add --objectives NAME:max,NAME:min "
                          f"or leave parent_selection out")


def pick_index(vectors: Sequence[Vector], uses: Sequence[int], objectives: Objectives) -> int:
    """Index of the parent among front ``vectors``: fewest ``uses`` (times already chosen),
    then the largest crowding distance, then the lowest index (joined first)."""
    if not vectors:
        raise ValueError("no front member to choose from")
    dist = crowding_distances([objectives.minimised(v) for v in vectors])
    return min(range(len(vectors)), key=lambda i: (uses[i], -dist[i], i))


@dataclass(slots=True)
class _Entry(Generic[T]):
    vector: Vector
    item: T
    uses: int = 0


class ParentFront(Generic[T]):
    """A trajectory's non-dominated programs, kept as they are offered, with how often
    each was chosen as a parent (greedy's parent pool in a run with several objectives)."""

    def __init__(self, objectives: Objectives) -> None:
        self.objectives = objectives
        self._entries: dict[Hashable, _Entry[T]] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._entries

    def members(self) -> list[tuple[Hashable, Vector, T]]:
        """(key, vector, item) of each member, in the order they joined."""
        return [(k, e.vector, e.item) for k, e in self._entries.items()]

    def offer(self, key: Hashable, vector: Vector | None, item: T) -> bool:
        """Offer one program; True when it joined the front (members it dominates leave).
        A vector equal to a member's, a weakly dominated one, None, or a key already on
        the front adds nothing."""
        if vector is None or key in self._entries:
            return False
        vector = tuple(float(v) for v in vector)
        olds = [e.vector for e in self._entries.values()]
        if vector in olds:
            return False
        mask = nondominated_mask([*olds, vector], self.objectives)
        if not mask[-1]:
            return False
        self._entries = {k: e for (k, e), keep in zip(self._entries.items(), mask, strict=False)
                         if keep}
        self._entries[key] = _Entry(vector, item)
        return True

    def choose(self) -> tuple[Hashable, T] | None:
        """(key, item) of the next parent (module docstring), counted as one use; None
        when the front is empty."""
        if not self._entries:
            return None
        keys = list(self._entries)
        entries = [self._entries[k] for k in keys]
        i = pick_index([x.vector for x in entries], [x.uses for x in entries], self.objectives)
        entries[i].uses += 1
        return keys[i], entries[i].item

    def release(self, key: Hashable) -> None:
        """Undo one use of ``key`` (its proposal was cancelled), so the re-ask that
        follows chooses the same parent again."""
        e = self._entries.get(key)
        if e is not None and e.uses > 0:
            e.uses -= 1


def front_choice(items: Sequence[T], vector_of: Callable[[T], Vector | None],
                 uses_of: Callable[[T], int], objectives: Objectives) -> T | None:
    """The parent among ``items`` (e.g. an island's members, in their own order): the
    non-dominated ones with a vector, then :func:`pick_index`.  None when no item has a
    vector (the caller keeps its own rule)."""
    pool = [(it, v) for it in items if (v := vector_of(it)) is not None]
    if not pool:
        return None
    mask = nondominated_mask([v for _, v in pool], objectives)
    front: list[tuple[T, Vector]] = []
    seen: set[Vector] = set()
    for (it, v), keep in zip(pool, mask, strict=True):
        if keep and v not in seen:  # a copy (migrant) of a member counts once
            seen.add(v)
            front.append((it, v))
    i = pick_index([v for _, v in front], [uses_of(it) for it, _ in front], objectives)
    return front[i][0]
