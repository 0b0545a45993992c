"""``sw_ucb``: sliding-window UCB of Garivier & Moulines (2011), "On upper-confidence
bound policies for switching bandit problems", ALT, Section 4 (SW-UCB).

Why for BaSE: a pull's reward is the trajectory's best-so-far fitness, which keeps
changing as the trajectory evolves, so old rewards describe an arm that no longer
exists; SW-UCB forgets everything older than the last ``window`` plays.

With rewards mapped onto [0, 1] (:func:`~basevolve.allocators.unit_reward`, bound
B = 1), over the last tau = ``window`` told rewards (of all arms, in tell order):

    N_i = plays of arm i among them,   mean_i = their mean reward for arm i
    index_i = mean_i + B sqrt(xi log(min(t, tau)) / N_i)

with t the number of plays so far; an arm with N_i = 0 has index +inf (it is played
again once it has left the window).  ``xi`` = 0.6 by default (Theorem 2 needs
xi > 1/2).  Default window (Garivier & Moulines' choice for a horizon T with
Upsilon_T breakpoints, ``tau = 2B sqrt(T log T / Upsilon_T)``, taken with B = 1 and
Upsilon_T = 1 since the number of changes is unknown): ``ceil(2 sqrt(T log T))``,
T = horizon + K (every told pull, Algorithm 2's K initial ones included).  Ties go
to the lowest arm index.

Pending pulls (asked, not yet told) count as provisional observations at the arm's
current window mean, as in :mod:`~basevolve.allocators.ucb` (the "hallucinated"
observations of Desautels, Krause & Burdick 2014, GP-BUCB): they enter N_i and t but
leave mean_i unchanged, so concurrent asks spread over the arms; an arm whose only
plays in the window are pending borrows the window's overall mean (0.5 when empty).
"""

from __future__ import annotations

import math
from collections import deque
from typing import Any

import numpy as np

from basevolve.allocators.base import ALLOCATORS, Allocator, unit_reward
from basevolve.errors import ConfigError


def default_window(horizon: int, n_arms: int) -> int:
    """``ceil(2 sqrt(T log T))`` with T = horizon + K (module docstring)."""
    t = max(horizon + n_arms, 2)
    return max(1, math.ceil(2.0 * math.sqrt(t * math.log(t))))


@ALLOCATORS.decorator("sw_ucb")
class SlidingWindowUCB(Allocator):
    name = "sw_ucb"

    def __init__(self, n_arms: int, rng: Any = None, horizon: int | None = None,
                 reward_mode: str = "best", window: int | None = None, xi: float = 0.6,
                 reward_max: float = 1.05) -> None:
        super().__init__(n_arms, rng, horizon, reward_mode)
        if window is None:
            if self.horizon is None:
                raise ConfigError("sw_ucb needs horizon (C - K) for its default window, "
                                  "or an explicit window")
            window = default_window(self.horizon, n_arms)
        if isinstance(window, bool) or int(window) != window or window < 1:
            raise ConfigError(f"sw_ucb: window must be an integer >= 1, got {window!r}")
        if not (math.isfinite(xi) and xi > 0):
            raise ConfigError(f"sw_ucb: xi must be > 0, got {xi!r}")
        if not (math.isfinite(reward_max) and reward_max > 0):
            raise ConfigError(f"sw_ucb: reward_max must be > 0, got {reward_max!r}")
        self.window = int(window)
        self.xi = float(xi)
        self.reward_cap = float(reward_max)
        self.plays = 0
        self._recent: deque[tuple[int, float]] = deque()
        self._n = np.zeros(n_arms)  # plays of each arm in the window
        self._total = np.zeros(n_arms)  # their reward sum

    def indices(self) -> np.ndarray:
        """SW-UCB indices of all arms (+inf for arms with no play in the window)."""
        n, total = self._n, self._total
        prior = total.sum() / n.sum() if n.sum() else 0.5
        mean = np.where(n > 0, total / np.maximum(n, 1), prior)
        n_eff = n + self.pending
        t = max(min(self.plays + int(self.pending.sum()), self.window), 1)
        bonus = np.sqrt(np.divide(self.xi * math.log(t), n_eff, out=np.zeros_like(n_eff),
                                  where=n_eff > 0))
        return np.where(n_eff > 0, mean + bonus, np.inf)

    def _ask(self, eligible: np.ndarray) -> tuple[int, float | None]:
        return int(np.argmax(np.where(eligible, self.indices(), -np.inf))), 1.0

    def _tell(self, arm: int, reward: float, prob: float | None, sampled: bool) -> None:
        self.plays += 1
        x = unit_reward(reward, self.reward_cap)
        self._recent.append((arm, x))
        self._n[arm] += 1
        self._total[arm] += x
        if len(self._recent) > self.window:  # the oldest play leaves the window
            old, x_old = self._recent.popleft()
            self._n[old] -= 1
            self._total[old] -= x_old
            if self._n[old] == 0:
                self._total[old] = 0.0  # no float residue for an arm out of the window

    def _summary(self) -> dict[str, Any]:
        return {"window": self.window, "xi": self.xi,
                "index": [None if math.isinf(v) else float(v) for v in self.indices()]}
