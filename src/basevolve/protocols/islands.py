"""Island population shared by the island protocols (OpenEvolve / CodeEvolve /
ShinkaEvolve style; paper, Section 3 "Island Protocol" and Table 1).

One :class:`IslandPopulation` is the whole population of *one* trajectory (under BaSE
each of the K arms owns one; paper, Algorithm 2).  It holds:

* members: evaluated programs, each on one island.  A member has its own ``uid``;
  ``program_id`` is the store's id, shared by migration copies (OpenEvolve and CodeEvolve
  copy migrants, ShinkaEvolve moves them);
* an archive (a bounded set of good members, with the fitness rule "replace the worst
  if strictly better" that OpenEvolve and ShinkaEvolve both use);
* migration: ring copies (:meth:`migrate_ring`) and random moves
  (:meth:`migrate_random`).

Determinism: every random choice goes through the ``rng`` handed in (the protocol's
seeded generator) and every iteration order is insertion order, so the same sequence of
calls gives the same population (resume replays it; paper, Part "Resume").

Cost: the engine budget is a few ms CPU per call at 1,000 programs, so per-call work is
O(island size) at most (rankings are cached per island until the island changes).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from basevolve.errors import ConfigError


@dataclass(slots=True)
class Member:
    """One program on one island (a migration copy is a member of its own)."""

    uid: int
    program_id: int | None
    code: str
    score: float
    valid: bool
    island: int
    parent_uid: int | None = None
    generation: int = 0
    born: int = 0  # insertion counter: ties between equal scores go to the newer member
    error: str | None = None
    children: int = 0
    migrant: bool = False  # arrived by a migration copy
    migrated: bool = False  # has already been sent away (never re-sent)
    origin: int = 0  # island the program was found on
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def fitness(self) -> float:
        """Score used for ranking: invalid or non-finite programs count as 0."""
        return self.score if self.valid and math.isfinite(self.score) else 0.0

    @property
    def rank_key(self) -> tuple[bool, float, int]:
        """Larger is better: valid first, then fitness, then newer."""
        return (self.valid, self.fitness, self.born)


class IslandPopulation:
    """Members on ``n_islands`` islands plus a global archive of at most ``archive_size``."""

    def __init__(self, n_islands: int, archive_size: int, rng: np.random.Generator) -> None:
        if n_islands < 1 or archive_size < 1:
            raise ConfigError(f"need >= 1 island and archive size >= 1, got {n_islands}, "
                              f"{archive_size}")
        self.n_islands = n_islands
        self.archive_size = archive_size
        self.rng = rng
        self.members: dict[int, Member] = {}
        self.islands: list[dict[int, None]] = [{} for _ in range(n_islands)]  # ordered sets
        self.archive: dict[int, None] = {}
        self._next_uid = 0
        self._ranked: dict[int, list[Member]] = {}
        self.best_uid: int | None = None

    # ------------------------------------------------------------------ membership
    def add(self, *, program_id: int | None, code: str, score: float, valid: bool, island: int,
            parent_uid: int | None = None, error: str | None = None, migrant: bool = False,
            origin: int | None = None, meta: dict[str, Any] | None = None) -> Member:
        """Insert a new member on ``island`` (no archive decision; see :meth:`offer_archive`)."""
        parent = self.members.get(parent_uid) if parent_uid is not None else None
        m = Member(
            uid=self._next_uid, program_id=program_id, code=code, score=score, valid=valid,
            island=island, parent_uid=parent_uid,
            generation=(parent.generation + 1) if parent is not None and not migrant else 0,
            born=self._next_uid, error=error, migrant=migrant,
            origin=island if origin is None else origin, meta=dict(meta or {}),
        )
        self._next_uid += 1
        self.members[m.uid] = m
        self.islands[island][m.uid] = None
        self._ranked.pop(island, None)
        if parent is not None and not migrant:
            parent.children += 1
        if m.valid and (self.best_uid is None or m.rank_key > self.members[self.best_uid].rank_key):
            self.best_uid = m.uid
        return m

    def remove(self, uid: int) -> None:
        """Take a member off its island and out of the archive (it stays addressable as
        an ancestor; the global best is never removed)."""
        if uid == self.best_uid:
            return
        m = self.members[uid]
        if self.islands[m.island].pop(uid, "absent") is None:
            self._ranked.pop(m.island, None)
        self.archive.pop(uid, None)

    def move(self, uid: int, island: int) -> None:
        m = self.members[uid]
        del self.islands[m.island][uid]
        self._ranked.pop(m.island, None)
        m.island = island
        self.islands[island][uid] = None
        self._ranked.pop(island, None)

    def on_island(self, island: int) -> list[Member]:
        return [self.members[u] for u in self.islands[island]]

    def ranked(self, island: int | None = None) -> list[Member]:
        """Members of ``island`` (or of all islands), best first (cached per island)."""
        if island is None:
            pool = [self.members[u] for isl in self.islands for u in isl]
            return sorted(pool, key=lambda m: m.rank_key, reverse=True)
        cached = self._ranked.get(island)
        if cached is None:
            cached = sorted(self.on_island(island), key=lambda m: m.rank_key, reverse=True)
            self._ranked[island] = cached
        return cached

    def best(self, island: int | None = None) -> Member | None:
        if island is None:
            return self.members[self.best_uid] if self.best_uid is not None else None
        ranked = self.ranked(island)
        return ranked[0] if ranked else None

    def size(self, island: int | None = None) -> int:
        if island is None:
            return sum(len(i) for i in self.islands)
        return len(self.islands[island])

    def has_code(self, island: int, code: str) -> bool:
        return any(self.members[u].code == code for u in self.islands[island])

    def lineage(self, uid: int, depth: int) -> list[Member]:
        """Up to ``depth`` ancestors of ``uid``, oldest first (CodeEvolve's chat replay)."""
        chain: list[Member] = []
        m = self.members[uid]
        while m.parent_uid is not None and len(chain) < depth:
            m = self.members[m.parent_uid]
            chain.append(m)
        return chain[::-1]

    # ---------------------------------------------------------------------- archive
    def offer_archive(self, uid: int, *, require_valid: bool = False) -> int | None:
        """Fitness archive rule: enter while not full; else replace the worst member
        (invalid < valid, then lower fitness, then older) if strictly better.  Returns the
        uid that left the archive, if any."""
        m = self.members[uid]
        if require_valid and not m.valid:
            return None
        if len(self.archive) < self.archive_size:
            self.archive[uid] = None
            return None
        worst = min((self.members[u] for u in self.archive), key=lambda a: a.rank_key)
        if (m.valid, m.fitness) > (worst.valid, worst.fitness):
            del self.archive[worst.uid]
            self.archive[uid] = None
            return worst.uid
        return None

    def swap_archive(self, old: int, new: int) -> None:
        """Replace ``old`` by ``new`` in the archive, keeping its position (OpenEvolve:
        a displaced cell owner's archive place goes to the new owner)."""
        if old in self.archive:
            self.archive = {(new if u == old else u): None for u in self.archive}

    def archive_members(self, island: int | None = None) -> list[Member]:
        out = [self.members[u] for u in self.archive]
        return out if island is None else [m for m in out if m.island == island]

    # -------------------------------------------------------------------- migration
    def migrate_ring(self, count: Callable[[int], int], *, accept: Callable[[Member], bool]
                     = lambda m: True, both_ways: bool = True,
                     place: Callable[[Member, int], Member] | None = None,
                     sources: Iterable[int] | None = None,
                     ) -> list[tuple[int, int, int]]:
        """Copy each island's best ``count(size)`` eligible members to its ring
        neighbours (i+1 and, with ``both_ways``, i-1 mod K); OpenEvolve and CodeEvolve.

        Eligible: not migrated before, not itself a migrant copy, ``accept(member)``.
        A target island that already holds identical code is skipped.  Migrants are
        chosen from the islands as they were before any copy (all islands, or only
        ``sources``).  Returns ``(source uid, copy uid, target island)`` per copy;
        ``place(source, island)`` lets the protocol insert the copy its own way (grid
        cell, archive, alive set) and must return the new member.
        """
        k = self.n_islands
        if k < 2:
            return []
        plan: list[tuple[Member, list[int]]] = []
        for i in range(k) if sources is None else sources:
            ranked = self.ranked(i)
            if not ranked:
                continue
            eligible = [m for m in ranked if not m.migrated and not m.migrant and accept(m)]
            targets = sorted({(i + 1) % k, (i - 1) % k} - {i}) if both_ways else [(i + 1) % k]
            plan += [(m, targets) for m in eligible[: count(len(ranked))]]
        moves: list[tuple[int, int, int]] = []
        for src, targets in plan:
            src.migrated = True
            for t in targets:
                if self.has_code(t, src.code):
                    continue
                copy = self.copy(src, t) if place is None else place(src, t)
                moves.append((src.uid, copy.uid, t))
        return moves

    def copy(self, src: Member, island: int) -> Member:
        """A migrant copy of ``src`` on ``island`` (parent = the original)."""
        m = self.add(program_id=src.program_id, code=src.code, score=src.score,
                     valid=src.valid, island=island, parent_uid=src.uid, error=src.error,
                     migrant=True, origin=src.origin, meta=dict(src.meta))
        m.generation = src.generation
        return m

    def migrate_random(self, rate: float, *, elitism: bool = True) -> list[tuple[int, int, int]]:
        """ShinkaEvolve's random moves: from each island with > 1 member, move
        max(1, floor(size·rate)) members drawn uniformly among its valid, non-initial
        (generation > 0) members (excluding the island best with ``elitism``) to a
        uniformly random *other* island.  Returns ``(uid, from, to)`` per move."""
        k = self.n_islands
        if k < 2 or rate <= 0:
            return []
        planned: list[tuple[int, int, int]] = []
        for i in range(k):
            members = self.on_island(i)
            if len(members) <= 1:
                continue
            best = self.best(i)
            pool = [m for m in members if m.valid and m.generation > 0
                    and not (elitism and best is not None and m.uid == best.uid)]
            if not pool:
                continue
            n = min(len(pool), max(1, int(len(members) * rate)))
            picks = self.rng.choice(len(pool), size=n, replace=False)
            for p in sorted(int(x) for x in picks):
                other = [j for j in range(k) if j != i]
                planned.append((pool[p].uid, i, other[int(self.rng.integers(len(other)))]))
        for uid, _src, dst in planned:
            self.move(uid, dst)
            self.members[uid].migrated = True
        return planned

    # -------------------------------------------------------------------- sampling
    def choice(self, items: list[Member], weights: Iterable[float] | None = None) -> Member:
        """One member, uniformly or with probability ∝ ``weights`` (uniform if all 0)."""
        if not items:
            raise ValueError("choice from an empty list")
        if weights is None:
            return items[int(self.rng.integers(len(items)))]
        w = np.fromiter(weights, float, count=len(items))
        w = np.where(np.isfinite(w) & (w > 0), w, 0.0)
        total = w.sum()
        if total <= 0:
            return items[int(self.rng.integers(len(items)))]
        return items[int(self.rng.choice(len(items), p=w / total))]

    def summary(self) -> dict[str, Any]:
        best = self.best()
        return {
            "island_sizes": [len(i) for i in self.islands],
            "archive_size": len(self.archive),
            "members": len(self.members),
            "best_uid": best.uid if best else None,
        }
