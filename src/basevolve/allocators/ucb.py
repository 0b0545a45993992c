"""``ucb``: UCB1 (Auer, Cesa-Bianchi & Fischer 2002, "Finite-time analysis of the
multiarmed bandit problem", Machine Learning 47, Fig. 1).

Index of arm i (rewards mapped onto [0, 1] by :func:`~basevolve.allocators.unit_reward`,
as UCB1's analysis assumes)::

    index_i = mean_i + c * sqrt(2 * ln(n) / n_i)

with n_i the pulls of arm i, n = sum_i n_i and ``c`` the exploration coefficient
(c = 1 is the paper's UCB1).  UCB1 first plays each arm once: every eligible arm with
n_i = 0 is chosen before any index is compared, lowest index first.  Ties go to the
lowest arm index.

Pending pulls (asked, not yet told) count as provisional observations at the arm's
current mean: they enter n_i and n but leave mean_i unchanged -- the "hallucinated
observation" of batched bandits (Desautels, Krause & Burdick 2014, "Parallelizing
exploration-exploitation tradeoffs in Gaussian process bandit optimization", JMLR 15,
GP-BUCB: pending points are added at the posterior mean, which shrinks the confidence
width and keeps the mean).  So the exploration bonus of an arm that already has calls in
flight shrinks and concurrent asks spread over the arms.  Why the current mean and not
a pessimistic value: under concurrency the best arm holds the most pending pulls, and a
pessimistic value would lower its index because it is being exploited, while the
shrinking bonus alone already spreads a batch.  An arm whose only pulls are still
pending has no mean yet; it borrows the mean over all told pulls (0.5 before any).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from basevolve.allocators.base import ALLOCATORS, Allocator, unit_reward
from basevolve.errors import ConfigError


@ALLOCATORS.decorator("ucb")
class UCB1(Allocator):
    name = "ucb"

    def __init__(self, n_arms: int, rng: Any = None, horizon: int | None = None,
                 reward_mode: str = "best", c: float = 1.0, reward_max: float = 1.05) -> None:
        super().__init__(n_arms, rng, horizon, reward_mode)
        if not (math.isfinite(c) and c >= 0):
            raise ConfigError(f"ucb: exploration coefficient c must be >= 0, got {c!r}")
        if not (math.isfinite(reward_max) and reward_max > 0):
            raise ConfigError(f"ucb: reward_max must be > 0, got {reward_max!r}")
        self.c = float(c)
        self.reward_cap = float(reward_max)
        self._unit_sum = np.zeros(n_arms)

    def indices(self) -> np.ndarray:
        """UCB1 indices of all arms (inf for arms with no told or pending pull)."""
        n_eff = (self.pulls + self.pending).astype(float)
        told = self.pulls > 0
        prior = self._unit_sum.sum() / self.pulls.sum() if told.any() else 0.5
        mean = np.where(told, self._unit_sum / np.maximum(self.pulls, 1), prior)
        n = max(n_eff.sum(), 1.0)
        bonus = self.c * np.sqrt(np.divide(2.0 * math.log(n), n_eff, out=np.zeros_like(n_eff),
                                           where=n_eff > 0))
        return np.where(n_eff > 0, mean + bonus, np.inf)

    def _ask(self, eligible: np.ndarray) -> tuple[int, float | None]:
        idx = np.where(eligible, self.indices(), -np.inf)
        return int(np.argmax(idx)), 1.0

    def _tell(self, arm: int, reward: float, prob: float | None, sampled: bool) -> None:
        self._unit_sum[arm] += unit_reward(reward, self.reward_cap)

    def _summary(self) -> dict[str, Any]:
        return {"c": self.c, "index": [None if math.isinf(v) else float(v) for v in self.indices()]}
