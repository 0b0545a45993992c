"""``adaptive_ucb``: AdaEvolve's island-choice rule as an allocator over K trajectories
(issue 26; the island-protocols spec, Section 5: AdaEvolve, skydiscover).

AdaEvolve chooses which island receives the next LLM call with a UCB rule over
*decayed, normalised improvements*.  Here the arms are BaSE's K trajectories, so the rule
competes with UCB1, Thompson and the rest on the same trajectories and protocols.  The
same state (:class:`DecayedUCB`) is what :mod:`basevolve.protocols.adaevolve` uses to
choose among its islands.

Per told pull of arm i with fitness f (the trajectory's best after the pull):

    delta_i = min((f - best_i) / (|G| + eps), 1)  if f > best_i, else 0
    R_i <- decay * R_i + delta_i          (decayed reward; only the pulled arm decays)
    V_i <- decay * V_i + 1                (decayed visits)
    n_i <- n_i + 1                        (raw visits)

with ``best_i`` the arm's best told so far and ``G`` the best told over all arms *before*
this tell (AdaEvolve normalises by the global best so that a trajectory stuck low cannot
win on large relative gains; ``eps`` = 1e-8).  An arm's first tell has no previous best:
it counts as delta = 1, AdaEvolve's rule for a first observation (the same for every arm,
so it biases none).  Ask: an eligible arm with fewer than ``min_visits`` (3) visits is
chosen uniformly at random among such arms; otherwise the eligible arm with the largest

    R_i / V_i + c * sqrt(ln(t + 1) / n_i),   c = 1.41,  t + 1 = sum_j n_j

(ties: the lowest index).  AdaEvolve's ``t`` is the index of the iteration just finished,
so ``ln(t + 1)`` is the log of the visits so far.

How this differs from BaSE's allocators: the reward is the *improvement* a pull made,
normalised by the global best and capped at 1, not the trajectory's best fitness (UCB1,
Thompson); both sums decay per visit of the arm itself (D-UCB decays every arm on every
play), and the mean is R/V, a recency-weighted gain per visit, so an arm that stopped
improving loses its standing after a few pulls whatever its level.

``reward_mode``: with ``"best"`` (the default) the engine tells the trajectory's best and
the rule above derives each gain from it, so a gain is credited once, to the first tell
that shows it.  With ``"improvement"`` the engine tells the gain itself; the allocator
then does not see the fitness level, so the gain is normalised by 1 (basevolve's fitness
scale, 1.0 = the best known construction) instead of ``|G|``.

Pending pulls (asked or assigned, not yet told) count as provisional visits: they enter
``n_i`` (the bonus and the min-visits rule) and ``t``, but not ``R_i`` or ``V_i``, so the
arm's mean is unchanged -- the "hallucinated observation at the current mean" of UCB1
here (:mod:`~basevolve.allocators.ucb`).  With 16 calls in flight the first asks thus
spread over the arms (each takes at most ``min_visits`` before the index is compared)
and an arm's bonus shrinks while it holds calls.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from basevolve.allocators.base import ALLOCATORS, Allocator
from basevolve.errors import ConfigError

EPS = 1e-8


def normalised_gain(fitness: float, best_before: float, global_best: float) -> float:
    """AdaEvolve's delta: the gain over ``best_before`` divided by ``|global_best| + eps``,
    capped at 1; 0 without a gain; 1 when there was no previous best (``-inf``)."""
    if not fitness > best_before:
        return 0.0
    if math.isinf(best_before) or math.isinf(global_best):
        return 1.0
    return min((fitness - best_before) / (abs(global_best) + EPS), 1.0)


class DecayedUCB:
    """Decayed rewards, decayed and raw visits per arm, and the choice rule (module
    docstring); arms can be added (AdaEvolve spawns islands)."""

    def __init__(self, n_arms: int, *, decay: float = 0.9, c: float = 1.41,
                 min_visits: int = 3) -> None:
        if not 0 <= decay <= 1:
            raise ConfigError(f"adaptive_ucb: decay must be in [0, 1], got {decay!r}")
        if not (math.isfinite(c) and c >= 0):
            raise ConfigError(f"adaptive_ucb: c must be >= 0, got {c!r}")
        if isinstance(min_visits, bool) or not isinstance(min_visits, int) or min_visits < 0:
            raise ConfigError(f"adaptive_ucb: min_visits must be an integer >= 0, "
                              f"got {min_visits!r}")
        self.decay, self.c, self.min_visits = float(decay), float(c), min_visits
        self.visits: list[int] = []
        self.rewards: list[float] = []
        self.decayed_visits: list[float] = []
        self.global_best = -math.inf
        for _ in range(n_arms):
            self.add_arm()

    @property
    def n_arms(self) -> int:
        return len(self.visits)

    def add_arm(self) -> int:
        self.visits.append(0)
        self.rewards.append(0.0)
        self.decayed_visits.append(0.0)
        return len(self.visits) - 1

    def record(self, arm: int, delta: float) -> None:
        """One visit of ``arm`` that earned the normalised gain ``delta``."""
        self.visits[arm] += 1
        self.decayed_visits[arm] = self.decay * self.decayed_visits[arm] + 1.0
        self.rewards[arm] = self.decay * self.rewards[arm] + float(delta)

    def observe(self, fitness: float) -> None:
        """A fitness seen anywhere raises the global best (the normaliser)."""
        if fitness > self.global_best:
            self.global_best = float(fitness)

    def indices(self, pending: np.ndarray | None = None,
                total: float | None = None) -> np.ndarray:
        """R/V + c sqrt(ln(t+1)/n) per arm, pending pulls counted in n (+inf for an arm
        with no visit at all); ``t + 1`` = ``total``, by default every visit and pending
        pull (the protocol passes its iterations, which AdaEvolve counts instead)."""
        n = np.asarray(self.visits, dtype=float)
        if pending is not None:
            n = n + np.asarray(pending, dtype=float)
        v = np.asarray(self.decayed_visits, dtype=float)
        mean = np.divide(np.asarray(self.rewards), v, out=np.zeros_like(v), where=v > 0)
        log_t = math.log(max(float(n.sum()) if total is None else float(total), 1.0))
        bonus = self.c * np.sqrt(np.divide(log_t, n, out=np.zeros_like(n), where=n > 0))
        return np.where(n > 0, mean + bonus, np.inf)

    def choose(self, eligible: np.ndarray, rng: np.random.Generator,
               pending: np.ndarray | None = None,
               total: float | None = None) -> tuple[int, float]:
        """(arm, probability of the choice) among the ``eligible`` arms."""
        n = np.asarray(self.visits) + (0 if pending is None else np.asarray(pending))
        under = [i for i in range(self.n_arms) if eligible[i] and n[i] < self.min_visits]
        if under:
            return under[int(rng.integers(len(under)))], 1.0 / len(under)
        idx = np.where(eligible, self.indices(pending, total), -np.inf)
        return int(np.argmax(idx)), 1.0

    def summary(self, pending: np.ndarray | None = None) -> dict[str, Any]:
        return {"visits": list(self.visits), "decayed_reward": [float(r) for r in self.rewards],
                "decayed_visits": [float(v) for v in self.decayed_visits],
                "global_best": None if math.isinf(self.global_best) else self.global_best,
                "index": [None if math.isinf(x) else float(x) for x in self.indices(pending)]}


@ALLOCATORS.decorator("adaptive_ucb")
class AdaptiveUCB(Allocator):
    """AdaEvolve's decayed-improvement UCB over trajectories (module docstring)."""

    name = "adaptive_ucb"

    def __init__(self, n_arms: int, rng: Any = None, horizon: int | None = None,
                 reward_mode: str = "best", c: float = 1.41, decay: float = 0.9,
                 min_visits: int = 3) -> None:
        super().__init__(n_arms, rng, horizon, reward_mode)
        self.state = DecayedUCB(n_arms, decay=decay, c=c, min_visits=min_visits)
        self.arm_best = np.full(n_arms, -np.inf)

    def _ask(self, eligible: np.ndarray) -> tuple[int, float | None]:
        return self.state.choose(eligible, self.rng, self.pending)

    def _tell(self, arm: int, reward: float, prob: float | None, sampled: bool) -> None:
        if self.reward_mode == "improvement":  # the gain itself; the level is not seen
            delta = min(max(reward, 0.0), 1.0)
        else:
            delta = normalised_gain(reward, float(self.arm_best[arm]), self.state.global_best)
            self.arm_best[arm] = max(self.arm_best[arm], reward)
            self.state.observe(reward)
        self.state.record(arm, delta)

    def _summary(self) -> dict[str, Any]:
        return {"c": self.state.c, "decay": self.state.decay, **self.state.summary(self.pending)}
