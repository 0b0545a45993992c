"""AdaEvolve's adaptive signals (issue 26; the island-protocols spec, Section 5), kept
apart from :mod:`basevolve.protocols.adaevolve` so the protocol module stays small.

* :class:`IslandSignal` -- per island, the accumulated-improvement signal G and the
  search intensity it sets.  On a new island best f (previous best b):

      delta = min((f - b) / (|b| + eps), 1)   (1 for the island's first program)
      G <- decay * G + (1 - decay) * delta^2
      intensity = I_min + (I_max - I_min) / (1 + sqrt(G + eps))

  A productive island (large G) gets a low intensity (exploit), a stalled one drifts back
  to I_max (explore).  Its own evaluations also count improvements and evaluations (the
  productivity that decides when an island is spawned); a program received by migration
  moves the best and G but not the counts (the island did not earn it).
* :class:`ParadigmTracker` -- the global improvement history over a window (1 when an
  added program raised the global best, else 0), the active breakthrough ideas with
  their uses, and the ideas tried before with their outcome.  Stagnating = the window
  is full, no idea is left to use, and the improvement rate is below the threshold.
* :data:`ISLAND_PRESETS` -- the archive weights a spawned island draws from (the first
  islands use the run's own weights, named ``balanced``): (fitness weight, novelty
  weight, elite ratio), AdaEvolve's Pareto weight folded into the fitness weight as it
  does when no Pareto objectives are set.
* :func:`admission` -- the rule of a full island archive: the newcomer competes with the
  most similar unprotected member and enters only with a higher elite score
  (:func:`knn_novelty` gives the novelty part).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from basevolve.allocators.adaptive_ucb import EPS, normalised_gain

#: name -> (fitness weight, novelty weight, elite ratio) of a spawned island's archive
ISLAND_PRESETS: dict[str, tuple[float, float, float]] = {
    "balanced": (0.7, 0.3, 0.2),
    "quality": (0.8, 0.2, 0.3),
    "diversity": (0.5, 0.5, 0.1),
    "pareto": (0.8, 0.2, 0.2),
    "exploration": (0.5, 0.5, 0.05),
}


@dataclass(slots=True)
class IslandSignal:
    """G, the island's best and its productivity counts (module docstring)."""

    decay: float
    i_min: float
    i_max: float
    g: float = 0.0
    best: float = -math.inf
    improvements: int = 0
    evaluations: int = 0

    def _raise(self, fitness: float) -> float:
        delta = normalised_gain(fitness, self.best, self.best)
        self.best = fitness
        self.g = self.decay * self.g + (1.0 - self.decay) * delta * delta
        return delta

    def record(self, fitness: float) -> float:
        """One of the island's own evaluations; returns the local delta (0: no gain)."""
        self.evaluations += 1
        if fitness > self.best:
            self.improvements += 1
            return self._raise(fitness)
        return 0.0

    def receive(self, fitness: float) -> None:
        """A program that arrived by migration: best and G move, the counts do not."""
        if fitness > self.best:
            self._raise(fitness)

    @property
    def intensity(self) -> float:
        return self.i_min + (self.i_max - self.i_min) / (1.0 + math.sqrt(self.g + EPS))

    def summary(self) -> dict[str, Any]:
        return {"G": self.g, "intensity": self.intensity,
                "best": None if math.isinf(self.best) else self.best,
                "improvements": self.improvements, "evaluations": self.evaluations}


@dataclass(slots=True)
class ParadigmTracker:
    """Global stagnation and the breakthrough ideas (module docstring)."""

    window: int
    threshold: float
    max_uses: int
    max_tried: int
    history: deque[float] = field(default_factory=deque)
    active: list[dict[str, str]] = field(default_factory=list)
    uses: list[int] = field(default_factory=list)
    current: int = 0
    tried: list[dict[str, Any]] = field(default_factory=list)
    score_at_set: float = 0.0
    score_during: float = 0.0
    generated: int = 0

    def record(self, improved: bool, global_best: float) -> None:
        self.history.append(1.0 if improved else 0.0)
        while len(self.history) > self.window:
            self.history.popleft()
        if self.active and global_best > self.score_during:
            self.score_during = global_best

    @property
    def rate(self) -> float:
        return sum(self.history) / len(self.history) if self.history else 0.0

    def _rotate(self) -> bool:
        """Move to the next idea with uses left; False when all are spent."""
        n = len(self.active)
        for k in range(n):
            nxt = (self.current + 1 + k) % n
            if self.uses[nxt] < self.max_uses:
                self.current = nxt
                return True
        return False

    def has_active(self) -> bool:
        if not self.active:
            return False
        return self.uses[self.current] < self.max_uses or self._rotate()

    def stagnating(self) -> bool:
        return (len(self.history) >= self.window and not self.has_active()
                and self.rate < self.threshold)

    def current_idea(self) -> dict[str, str] | None:
        return self.active[self.current] if self.has_active() else None

    def use(self) -> None:
        """One code call built on the current idea; the next call takes the next idea."""
        if self.active:
            self.uses[self.current] += 1
            self._rotate()

    def set_ideas(self, ideas: list[dict[str, str]], global_best: float) -> None:
        """New ideas replace the old ones, which are kept (if used) with their outcome."""
        self._archive()
        self.active, self.uses, self.current = list(ideas), [0] * len(ideas), 0
        self.score_at_set = self.score_during = global_best
        self.generated += 1

    def _archive(self) -> None:
        gain = self.score_during - self.score_at_set
        for idea, uses in zip(self.active, self.uses, strict=True):
            if uses:
                self.tried.append({**idea, "uses": uses, "gain": gain,
                                   "outcome": "SUCCESS" if gain > 0.001 else "FAILED"})
        del self.tried[: max(0, len(self.tried) - self.max_tried)]

    def tried_lines(self) -> list[str]:
        """The ideas tried before, one line each, for the next paradigm prompt."""
        return [f"{t['outcome']}: {t.get('approach_type') or 'approach'} - {t['idea']} "
                f"(gain {t['gain']:+.4f})" for t in self.tried]

    def summary(self) -> dict[str, Any]:
        return {"rate": self.rate, "window_filled": len(self.history),
                "active_ideas": len(self.active), "uses": list(self.uses),
                "tried": len(self.tried), "generated": self.generated}


def knn_novelty(rows: np.ndarray, k: int) -> np.ndarray:
    """Mean code distance (1 - cosine of the unit ``rows``) of each row to its ``k``
    nearest other rows; 1 for a row alone."""
    if len(rows) < 2:
        return np.ones(len(rows))
    d = 1.0 - np.einsum("ik,jk->ij", rows, rows)
    np.fill_diagonal(d, np.inf)
    return np.sort(d, axis=1)[:, : min(k, len(rows) - 1)].mean(axis=1)


def admission(rows: np.ndarray, fitness: np.ndarray, vec: np.ndarray, new_fitness: float, *,
              weights: tuple[float, float, float], k: int, protect: set[int]
              ) -> tuple[bool, int | None]:
    """(admitted, index of the member to evict) for a newcomer (vector ``vec``, fitness
    ``new_fitness``) to a full archive of ``rows`` / ``fitness`` (island order, oldest
    first).

    Elite score = fitness weight * fitness percentile + novelty weight * novelty
    percentile.  Protected: the top ``elite ratio`` by elite score, the best by fitness
    and ``protect``.  The candidate is the unprotected member nearest to the newcomer;
    the newcomer replaces it only with a strictly higher elite score.
    """
    n = len(rows)
    fw, nw, ratio = weights
    order = sorted(range(n), key=lambda j: -fitness[j])  # stable: older first on ties
    rank = np.empty(n)
    rank[order] = np.arange(n)
    nov = knn_novelty(rows, k)
    elite = fw * (1 - rank / max(n - 1, 1)) + nw * np.array([(nov < x).sum() / n for x in nov])
    protected = set(sorted(range(n), key=lambda j: -elite[j])[: max(1, int(n * ratio))])
    protected |= {int(np.argmax(fitness)), *protect}
    free = [j for j in range(n) if j not in protected]
    if not free:
        return False, None
    dist = 1.0 - np.einsum("ij,j->i", rows, vec)
    cand = min(free, key=lambda j: dist[j])
    new_nov = float(np.sort(dist)[: min(k, n)].mean())
    new_fit = 1.0 if n == 1 else 1 - (fitness > new_fitness).sum() / (n - 1)
    new_elite = fw * new_fit + nw * (nov < new_nov).sum() / n
    return (True, cand) if new_elite > elite[cand] else (False, None)
