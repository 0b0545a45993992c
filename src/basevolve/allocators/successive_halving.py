"""``successive_halving``: fixed-budget best-arm identification (Karnin, Koren & Somekh
2013, "Almost optimal exploration in multi-armed bandits", ICML, Algorithm 1), adapted
so that its rounds spend the budget exactly.

Karnin et al.: with budget T and n arms, run ceil(log2 n) rounds; in round r sample
each surviving arm ``t_r = floor(T / (|S_r| ceil(log2 n)))`` times and keep the better
half (``ceil(|S_r| / 2)`` arms) by the round's empirical mean.  The floors leave up to
``|S_r| ceil(log2 n)`` calls per round unspent, and a fixed-budget run must spend all C
(paper, Section 3), so here each round is sized from what is *left*:

    B_r = horizon - (policy pulls asked so far),  R_r = ceil(log2 |S_r|) rounds to go
    round budget = floor(B_r / R_r)   (the last round, R_r = 1, takes all of B_r)

split over the survivors as evenly as possible (the lowest indices get the +1s).  The
rounds therefore sum to the horizon exactly; when one arm survives it receives every
remaining call (also any call the engine asks beyond the horizon).  ``horizon`` is the
bandit-allocated pulls, C - K (Algorithm 2's K initial pulls are ``assign``: their
rewards count towards round 0's means but not against the budget).  Rewards are mapped
onto [0, 1] by :func:`~basevolve.allocators.unit_reward`; a round's mean is over the
rewards told during it (Karnin et al. rank by the round's samples, which also suits the
non-stationary best-so-far reward); an arm with no reward in the round is ranked by its
all-time mean, and one never told at all ranks first.  Ties keep the lower index.

Concurrency (pending pulls): a round closes when its quota has been *asked*, not when
every pull has been told, because ``ask`` must answer at once; the elimination then
ranks by the rewards told so far, and rewards that arrive later count for the arm's
next round.  With ``--max-in-flight 1`` every pull is told before the next ask and this
is exactly the algorithm above.  Within a round the eligible arm owed the most calls is
asked first, so concurrent asks interleave the survivors.  If no eligible survivor is
owed a call, the best eligible survivor by mean takes one call of the quota of the
ineligible arm owed the most (the round still closes on budget); if no survivor is
eligible, the best eligible arm by mean is asked (:mod:`.elimination`).  A cancelled
pull (lost in a crash) gives its call back to the current round.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from basevolve.allocators.base import ALLOCATORS, Allocator, unit_reward
from basevolve.allocators.elimination import best_eligible, mean_or_inf, most_owed
from basevolve.errors import ConfigError


def round_quota(remaining: int, survivors: np.ndarray) -> np.ndarray:
    """Per-arm calls of the next round (module docstring): floor(B_r / R_r) split evenly."""
    idx = np.flatnonzero(survivors)
    quota = np.zeros(survivors.size, dtype=np.int64)
    rounds_left = math.ceil(math.log2(idx.size)) if idx.size > 1 else 1
    budget = remaining if rounds_left == 1 else remaining // rounds_left
    base, extra = divmod(max(budget, 0), idx.size)
    quota[idx] = base
    quota[idx[:extra]] += 1
    return quota


@ALLOCATORS.decorator("successive_halving")
class SuccessiveHalving(Allocator):
    name = "successive_halving"

    def __init__(self, n_arms: int, rng: Any = None, horizon: int | None = None,
                 reward_mode: str = "best", reward_max: float = 1.05) -> None:
        super().__init__(n_arms, rng, horizon, reward_mode)
        if self.horizon is None:
            raise ConfigError("successive_halving needs horizon (the bandit-allocated calls, "
                              "C - K): its rounds are sized from the budget")
        if not (math.isfinite(reward_max) and reward_max > 0):
            raise ConfigError(f"successive_halving: reward_max must be > 0, got {reward_max!r}")
        self.reward_cap = float(reward_max)
        self.survivors = np.ones(n_arms, dtype=bool)
        self.round = 0
        self.asked = 0  # policy pulls asked and not cancelled
        self.quota = round_quota(self.horizon, self.survivors)
        self._round_sum = np.zeros(n_arms)
        self._round_n = np.zeros(n_arms, dtype=np.int64)
        self._unit_sum = np.zeros(n_arms)

    def means(self) -> np.ndarray:
        """This round's mean unit reward, else the all-time mean, else +inf."""
        overall = mean_or_inf(self._unit_sum, self.pulls)
        return np.where(self._round_n > 0, self._round_sum / np.maximum(self._round_n, 1), overall)

    def _close_round(self) -> None:
        idx = np.flatnonzero(self.survivors)
        means = self.means()
        keep = sorted(idx, key=lambda i: (-means[i], i))[: math.ceil(idx.size / 2)]
        self.survivors[:] = False
        self.survivors[keep] = True
        self.round += 1
        self._round_sum[:] = 0.0
        self._round_n[:] = 0
        self.quota = round_quota(max(self.horizon - self.asked, 0), self.survivors)  # type: ignore[operator]

    def _ask(self, eligible: np.ndarray) -> tuple[int, float | None]:
        while True:
            arm = most_owed(np.where(self.survivors, self.quota, 0), eligible)
            if arm is not None:
                self.quota[arm] -= 1
                break
            if self.quota[self.survivors].sum() > 0 or self.survivors.sum() == 1:
                # quota left only on ineligible survivors, or one survivor and the
                # budget spent: fall back, charging the arm owed the most
                arm = best_eligible(self.means(), eligible, self.survivors)
                owed = np.where(self.survivors & ~eligible, self.quota, 0)
                if owed.max() > 0:
                    self.quota[int(np.argmax(owed))] -= 1
                break
            self._close_round()
        self.asked += 1
        return arm, 1.0

    def _tell(self, arm: int, reward: float, prob: float | None, sampled: bool) -> None:
        x = unit_reward(reward, self.reward_cap)
        self._unit_sum[arm] += x
        if self.survivors[arm]:
            self._round_sum[arm] += x
            self._round_n[arm] += 1

    def _cancel(self, arm: int, prob: float | None, sampled: bool) -> None:
        if sampled:
            self.asked -= 1
            if self.survivors[arm]:
                self.quota[arm] += 1

    def _summary(self) -> dict[str, Any]:
        means = self.means()
        return {"round": self.round, "survivors": np.flatnonzero(self.survivors).tolist(),
                "quota": self.quota.tolist(),
                "round_mean": [None if math.isinf(m) else float(m) for m in means]}
