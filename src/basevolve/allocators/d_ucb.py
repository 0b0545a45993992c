"""``d_ucb``: discounted UCB of Garivier & Moulines (2011), "On upper-confidence bound
policies for switching bandit problems", ALT, Section 3 (D-UCB; Kocsis & Szepesvari
2006).

Why for BaSE: a pull's reward is the trajectory's best-so-far fitness, which keeps
changing as the trajectory evolves; D-UCB weighs a reward told s plays ago by gamma^s,
so the index tracks what an arm is worth now.

With rewards mapped onto [0, 1] (:func:`~basevolve.allocators.unit_reward`, bound
B = 1), after every told reward (a "play", of any arm) all discounted sums decay:

    N_i <- gamma N_i,  S_i <- gamma S_i   for every arm;   N_a += 1, S_a += x  (played arm a)
    index_i = S_i / N_i + 2B sqrt(xi log(n) / N_i),   n = sum_j N_j

An arm never played has index +inf.  ``xi`` = 0.6 by default (Theorem 1 needs
xi > 1/2).  Default discount (Garivier & Moulines' choice for a horizon T with
Upsilon_T breakpoints, ``gamma = 1 - (1/(4B)) sqrt(Upsilon_T / T)``, taken with B = 1
and Upsilon_T = 1 since the number of changes is unknown): ``1 - 1/(4 sqrt(T))``,
T = horizon + K (every told pull, Algorithm 2's K initial ones included).  Ties go to
the lowest arm index.

Pending pulls (asked, not yet told) count as provisional observations at the arm's
current discounted mean, as in :mod:`~basevolve.allocators.ucb` (the "hallucinated"
observations of Desautels, Krause & Burdick 2014, GP-BUCB): they add 1 each to N_i and n
(undiscounted: they are current) but leave the mean unchanged, so concurrent asks spread
over the arms; an arm whose only plays are pending borrows the overall discounted mean
(0.5 before any reward).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from basevolve.allocators.base import ALLOCATORS, Allocator, unit_reward
from basevolve.errors import ConfigError


def default_discount(horizon: int, n_arms: int) -> float:
    """``1 - 1/(4 sqrt(T))`` with T = horizon + K (module docstring)."""
    return 1.0 - 0.25 / math.sqrt(max(horizon + n_arms, 1))


@ALLOCATORS.decorator("d_ucb")
class DiscountedUCB(Allocator):
    name = "d_ucb"

    def __init__(self, n_arms: int, rng: Any = None, horizon: int | None = None,
                 reward_mode: str = "best", gamma: float | None = None, xi: float = 0.6,
                 reward_max: float = 1.05) -> None:
        super().__init__(n_arms, rng, horizon, reward_mode)
        if gamma is None:
            if self.horizon is None:
                raise ConfigError("d_ucb needs horizon (C - K) for its default discount, "
                                  "or an explicit gamma")
            gamma = default_discount(self.horizon, n_arms)
        if not 0 < gamma <= 1:
            raise ConfigError(f"d_ucb: gamma must be in (0, 1], got {gamma!r}")
        if not (math.isfinite(xi) and xi > 0):
            raise ConfigError(f"d_ucb: xi must be > 0, got {xi!r}")
        if not (math.isfinite(reward_max) and reward_max > 0):
            raise ConfigError(f"d_ucb: reward_max must be > 0, got {reward_max!r}")
        self.gamma = float(gamma)
        self.xi = float(xi)
        self.reward_cap = float(reward_max)
        self.N = np.zeros(n_arms)
        self.S = np.zeros(n_arms)

    def indices(self) -> np.ndarray:
        """D-UCB indices of all arms (+inf for arms never played or pending)."""
        told = self.N > 0
        prior = self.S.sum() / self.N.sum() if told.any() else 0.5
        mean = np.where(told, self.S / np.maximum(self.N, 1e-300), prior)
        n_eff = self.N + self.pending
        n = max(float(n_eff.sum()), 1.0)
        bonus = 2.0 * np.sqrt(np.divide(self.xi * math.log(n), n_eff,
                                        out=np.zeros_like(n_eff), where=n_eff > 0))
        return np.where(n_eff > 0, mean + bonus, np.inf)

    def _ask(self, eligible: np.ndarray) -> tuple[int, float | None]:
        return int(np.argmax(np.where(eligible, self.indices(), -np.inf))), 1.0

    def _tell(self, arm: int, reward: float, prob: float | None, sampled: bool) -> None:
        self.N *= self.gamma
        self.S *= self.gamma
        self.N[arm] += 1.0
        self.S[arm] += unit_reward(reward, self.reward_cap)

    def _summary(self) -> dict[str, Any]:
        return {"gamma": self.gamma, "xi": self.xi,
                "index": [None if math.isinf(v) else float(v) for v in self.indices()]}
