"""``round_robin``: cycle over the trajectories in index order (paper, "Bandits
Algorithms": the non-adaptive equal-split baseline).

The next arm is the first eligible one at or after the pointer (cyclically); the pointer
then moves past it.  Ineligible arms are skipped, not queued, so with every arm always
eligible the sequence is 0, 1, ..., K-1, 0, 1, ...  Pending pulls need no special
treatment: the pointer already moved on.  Initial pulls given via ``assign`` do not move
the pointer (the policy did not choose them).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from basevolve.allocators.base import ALLOCATORS, Allocator


@ALLOCATORS.decorator("round_robin")
class RoundRobin(Allocator):
    name = "round_robin"

    def __init__(self, n_arms: int, rng: Any = None, horizon: int | None = None,
                 reward_mode: str = "best") -> None:
        super().__init__(n_arms, rng, horizon, reward_mode)
        self._next = 0

    def _ask(self, eligible: np.ndarray) -> tuple[int, float | None]:
        order = (self._next + np.arange(self.n_arms)) % self.n_arms
        arm = int(order[np.argmax(eligible[order])])
        self._next = (arm + 1) % self.n_arms
        return arm, 1.0

    def _summary(self) -> dict[str, Any]:
        return {"next": self._next}
