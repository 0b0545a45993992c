"""AdaEvolve's island archives (issue 26; split from :mod:`.adaevolve` in issue 33: the
archive vs. the protocol).

What the islands *hold* and how a program is drawn from them: each island an archive of
at most ``population_size`` programs admitted by the elite-score rule
(:func:`.adaevolve_signals.admission`, code distance = 1 - cosine of hashed character
3-grams, :mod:`.novelty`), its parent drawn by the island's intensity, its context
programs (local and unlike the parent, then the global top), new islands spawned from
the best programs, and the ring migration.  The rules are those of the
:mod:`.adaevolve` module docstring (steps 2, 3 and 5).  The protocol
(:class:`.adaevolve.AdaEvolveProtocol`) decides the calls -- which island, code or
paradigm call, retries -- and keeps this state as its own (a mixin, so the state a
resume replays and the tests read stays on the protocol object).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from basevolve.allocators.adaptive_ucb import DecayedUCB, normalised_gain
from basevolve.protocols.adaevolve_signals import (
    ISLAND_PRESETS,
    IslandSignal,
    ParadigmTracker,
    admission,
    knn_novelty,
)
from basevolve.protocols.islands import IslandPopulation, Member
from basevolve.protocols.novelty import VectorTable, ngram_vector

EXPLOIT_SHARE = 0.7  # of the non-exploration draws (AdaEvolve's constant)


class AdaEvolveArchive:
    """The islands' archives, their signals and the island-choice rule's sums."""

    params: dict[str, Any]
    rng: np.random.Generator
    pop: IslandPopulation
    vecs: VectorTable
    signals: list[IslandSignal]
    weights: list[tuple[float, float, float]]
    island_names: list[str]
    ucb: DecayedUCB
    inflight: list[int]
    paradigms: ParadigmTracker
    last_spawn: int

    def _new_island(self, name: str, weights: tuple[float, float, float]) -> int:
        self.signals.append(IslandSignal(self.params["decay"], self.params["intensity_min"],
                                         self.params["intensity_max"]))
        self.weights.append(weights)
        self.island_names.append(name)
        self.inflight.append(0)
        return self.ucb.add_arm()

    @property
    def n_islands(self) -> int:
        return len(self.signals)

    def _distances(self, uids: list[int], vec: np.ndarray) -> np.ndarray:
        return 1.0 - np.einsum("ij,j->i", self.vecs.rows[uids], vec)

    def novelty(self, members: list[Member]) -> np.ndarray:
        """Mean distance of each member to its ``k_neighbors`` nearest on the island."""
        return knn_novelty(self.vecs.rows[[m.uid for m in members]], self.params["k_neighbors"])

    def _admission(self, island: int, vec: np.ndarray, fitness: float) -> tuple[bool, int | None]:
        """(admitted, uid to evict) under AdaEvolve's archive rule (module docstring)."""
        members = self.pop.on_island(island)
        if len(members) < self.params["population_size"]:
            return True, None
        ok, j = admission(self.vecs.rows[[m.uid for m in members]],
                          np.array([m.fitness for m in members]), vec, fitness,
                          weights=self.weights[island], k=self.params["k_neighbors"],
                          protect={j for j, m in enumerate(members) if m.uid == self.pop.best_uid})
        return ok, None if j is None else members[j].uid

    def offer(self, program_id: int | None, code: str, score: float, valid: bool, island: int,
             *, own: bool, parent_uid: int | None = None, error: str | None = None,
             source: Member | None = None) -> Member | None:
        """Offer a program to ``island``'s archive; update the signals if it is kept."""
        fitness = score if valid and np.isfinite(score) else 0.0
        vec = ngram_vector(code)
        ok, evict = self._admission(island, vec, fitness)
        if not ok:
            return None
        if evict is not None:
            self.pop.remove(evict)
        if source is not None:
            m = self.pop.copy(source, island)
        else:
            m = self.pop.add(program_id=program_id, code=code, score=score, valid=valid,
                             island=island, parent_uid=parent_uid, error=error)
        self.vecs.put(m.uid, code)
        improved = fitness > self.ucb.global_best
        if own:
            before = self.signals[island].best
            self.signals[island].record(fitness)
            self.ucb.record(island, normalised_gain(fitness, before, self.ucb.global_best))
        else:
            self.signals[island].receive(fitness)
        self.ucb.observe(fitness)
        if own:
            self.paradigms.record(improved, self.ucb.global_best)
        return m

    @staticmethod
    def _ranked(members: list[Member]) -> list[Member]:
        """Best fitness first; ties keep island order (older first), as AdaEvolve sorts."""
        return sorted(members, key=lambda m: -m.fitness)

    def _top(self, members: list[Member], n: int) -> list[Member]:
        return self._ranked(members)[: max(1, n)]

    def _by_novelty(self, members: list[Member]) -> Member:
        return self.pop.choice(members, np.maximum(self.novelty(members), 0.001))

    def sample_parent(self, island: int) -> tuple[Member, str]:
        """(parent, mode) drawn by the island's intensity (module docstring, step 2)."""
        members = self.pop.on_island(island)
        if (front := self.front_parent(members)) is not None:  # issue 36
            return front, "front"
        intensity = self.signals[island].intensity
        u = float(self.rng.random())
        if u < intensity:
            return self._by_novelty(members), "exploration"
        if u < intensity + EXPLOIT_SHARE * (1 - intensity):
            return self.pop.choice(self._top(members, len(members) // 4)), "exploitation"
        if float(self.rng.random()) < 0.5:
            return self.pop.choice(self._top(members, min(10, len(members) // 5))), "balanced"
        return self._by_novelty(members), "balanced"

    def context(self, parent: Member, island: int) -> list[tuple[Member, str]]:
        """Local diverse programs, then the global top ones (each shown once)."""
        num = self.params["num_context_programs"]
        if num <= 0:
            return []
        n_local = max(1, int(num * self.params["local_context_ratio"]))
        members = self._ranked(self.pop.on_island(island))
        pool = [m for m in members[: max(2 * n_local, len(members) // 2)] if m.uid != parent.uid]
        dist = self._distances([m.uid for m in pool], self.vecs.rows[parent.uid]) if pool else []
        far = sorted(range(len(pool)), key=lambda j: -dist[j])  # most unlike the parent first
        chosen = [pool[j] for j in far[:n_local]]
        shown = {m.code for m in chosen} | {parent.code}
        out = [(m, "from this island") for m in chosen]
        everyone = self._ranked([m for i in range(self.n_islands) for m in self.pop.on_island(i)])
        for m in everyone:
            if len(out) >= num:
                break
            if m.code not in shown:
                shown.add(m.code)
                out.append((m, f"global top, island {m.island}"))
        return out

    def productivity(self) -> float:
        evals = sum(s.evaluations for s in self.signals)
        return sum(s.improvements for s in self.signals) / evals if evals else 1.0

    def _should_spawn(self, index: int) -> bool:
        p = self.params
        return (p["dynamic_islands"] and self.n_islands < p["max_islands"]
                and index - self.last_spawn >= p["spawn_cooldown"]
                and self.productivity() < p["spawn_threshold"])

    def _spawn(self, index: int) -> None:
        used = {name: self.island_names.count(name) for name in ISLAND_PRESETS}
        low = [name for name, c in used.items() if c == min(used.values())]
        name = low[int(self.rng.integers(len(low)))]
        island = self._new_island(name, ISLAND_PRESETS[name])
        best = self._top([m for i in range(island) for m in self.pop.on_island(i)], 5)
        for m in best:  # seeded directly: the new island's signals start empty
            copy = self.pop.copy(m, island)
            self.vecs.put(copy.uid, copy.code)
        self.last_spawn = index

    def migrate(self) -> None:
        """Ring copies i -> i+1 of each island's ``migration_count`` best, in island order."""
        n = self.n_islands
        if n < 2:
            return
        for src in range(n):
            dest = (src + 1) % n
            for m in self._top(self.pop.on_island(src), self.params["migration_count"]):
                if self.params["migration_count"] and not self.pop.has_code(dest, m.code):
                    self.offer(m.program_id, m.code, m.score, m.valid, dest, own=False, source=m)
        self.migrations += 1
