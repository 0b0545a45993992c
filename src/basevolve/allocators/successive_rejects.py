"""``successive_rejects``: fixed-budget best-arm identification of Audibert & Bubeck
(2010), "Best arm identification in multi-armed bandits", COLT, Section 3 (SR).

With K arms and n pulls in all, SR runs K - 1 phases.  With

    logbar(K) = 1/2 + sum_{i=2..K} 1/i,
    n_k = ceil( (n - K) / (logbar(K) (K + 1 - k)) ),   n_0 = 0,   k = 1..K-1,

each arm still active in phase k is pulled until it has n_k pulls in all (n_k - n_{k-1}
more), then the active arm with the lowest empirical mean is rejected.  The phases use
``n_1 + ... + n_{K-1} + n_{K-1} <= n`` pulls; here n = horizon + K (the bandit-allocated
calls C - K plus Algorithm 2's K initial pulls, which are every arm's first pull), and
whatever SR leaves unspent goes to the last active arm (its recommendation), so the run
spends exactly C.  Empirical means are over all told rewards of an arm, mapped onto
[0, 1] by :func:`~basevolve.allocators.unit_reward`; an arm with no told reward is never
the one rejected; ties reject the higher index.

Concurrency (pending pulls): an arm's pulls for the phase target count told *and*
pending pulls (asked or assigned, not yet told), because ``ask`` must answer at once; a
phase closes when its pulls have been asked, and the rejection ranks by the rewards told
so far (later rewards still update the means for the next phases).  With
``--max-in-flight 1`` this is exactly SR.  Within a phase the eligible active arm owed
the most pulls goes first; if no eligible active arm is owed one, the best eligible
active arm by mean is asked (and, if none is eligible, the best eligible arm)
(:mod:`.elimination`).  A cancelled pull is simply owed again.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from basevolve.allocators.base import ALLOCATORS, Allocator, unit_reward
from basevolve.allocators.elimination import best_eligible, mean_or_inf, most_owed
from basevolve.errors import ConfigError


def sr_schedule(n_arms: int, total: int) -> list[int]:
    """``[n_1, ..., n_{K-1}]`` of Audibert & Bubeck (2010) for K arms and n pulls."""
    logbar = 0.5 + sum(1.0 / i for i in range(2, n_arms + 1))
    return [math.ceil((total - n_arms) / (logbar * (n_arms + 1 - k))) for k in range(1, n_arms)]


@ALLOCATORS.decorator("successive_rejects")
class SuccessiveRejects(Allocator):
    name = "successive_rejects"

    def __init__(self, n_arms: int, rng: Any = None, horizon: int | None = None,
                 reward_mode: str = "best", reward_max: float = 1.05) -> None:
        super().__init__(n_arms, rng, horizon, reward_mode)
        if self.horizon is None:
            raise ConfigError("successive_rejects needs horizon (the bandit-allocated calls, "
                              "C - K): its phase lengths n_k come from the budget")
        if not (math.isfinite(reward_max) and reward_max > 0):
            raise ConfigError(f"successive_rejects: reward_max must be > 0, got {reward_max!r}")
        self.reward_cap = float(reward_max)
        self.schedule = sr_schedule(n_arms, self.horizon + n_arms)
        self.active = np.ones(n_arms, dtype=bool)
        self.phase = 1  # phases 1..K-1 reject one arm each; phase K = one arm left
        self._unit_sum = np.zeros(n_arms)

    def means(self) -> np.ndarray:
        return mean_or_inf(self._unit_sum, self.pulls)

    def _owed(self) -> np.ndarray:
        if self.phase >= self.n_arms:
            return np.zeros(self.n_arms, dtype=np.int64)
        target = self.schedule[self.phase - 1]
        return np.where(self.active, np.maximum(target - (self.pulls + self.pending), 0), 0)

    def _reject(self) -> None:
        idx = np.flatnonzero(self.active)
        means = self.means()
        worst = max(idx, key=lambda i: (-means[i], i))  # lowest mean, higher index on ties
        self.active[worst] = False
        self.phase += 1

    def _ask(self, eligible: np.ndarray) -> tuple[int, float | None]:
        while True:
            arm = most_owed(self._owed(), eligible)
            if arm is not None:
                return arm, 1.0
            if self.phase >= self.n_arms or self._owed().sum() > 0:
                return best_eligible(self.means(), eligible, self.active), 1.0
            self._reject()

    def _summary(self) -> dict[str, Any]:
        means = self.means()
        return {"phase": self.phase, "active": np.flatnonzero(self.active).tolist(),
                "schedule": list(self.schedule),
                "mean": [None if math.isinf(m) else float(m) for m in means]}

    def _tell(self, arm: int, reward: float, prob: float | None, sampled: bool) -> None:
        self._unit_sum[arm] += unit_reward(reward, self.reward_cap)
