"""``exp3p``: EXP3.P of Auer, Cesa-Bianchi, Freund & Schapire (2002), "The nonstochastic
multiarmed bandit problem", SIAM J. Comput. 32(1), Section 6 (Fig. "Algorithm Exp3.P",
Theorem 6.3 for the parameters).

With K arms, horizon T (the bandit-allocated pulls, C - K), rewards x in [0, 1]:

* init:      w_i = exp(alpha * gamma / 3 * sqrt(T / K))
* sample:    p_i = (1 - gamma) * w_i / sum_j w_j + gamma / K
* estimate:  xhat_j = x / p_j for the pulled arm j, 0 for the others
* update:    w_j <- w_j * exp(gamma / (3K) * (xhat_j + alpha / (p_j * sqrt(K T))))  for all j

Defaults (Theorem 6.3, regret bound holding with probability >= 1 - delta):
``alpha = 2 sqrt(ln(K T / delta))``, ``gamma = min(3/5, 2 sqrt(3/5 * K ln K / T))``;
the learning rate is eta = gamma / (3K).  Weights are kept as log-weights and
probabilities computed with a max-shifted softmax, so large T never overflows.

Rewards: EXP3.P needs x in [0, 1] but fitness may exceed 1.0 (a record beats the
normaliser), so x = clip(reward, 0, reward_max) / reward_max
(:func:`~basevolve.allocators.unit_reward`, default reward_max = 1.05).

Eligibility and concurrency: when only some arms are eligible, the arm is drawn from p
renormalised over the eligible arms, and *that* probability (the one the draw really
used, recorded at ask time in the event's ``prob``) is the importance weight of the
pulled arm when its reward is told, so xhat stays an unbiased estimate of the reward
given the draw.  The confidence bonus alpha / (p_j sqrt(KT)) uses the full distribution
at tell time.  Pending pulls do not change p: concurrent asks are independent draws
from it.  Algorithm 2's initial pulls (``assign``) were not drawn by EXP3.P and have no
importance weight, so their tells update the statistics but not the weights.
Using the probability of the draw that was actually made, applied whenever the reward
arrives, is the standard treatment of delayed feedback for exponential weights
(Joulani, Gyorgy & Szepesvari 2013, "Online learning under delayed feedback", ICML):
xhat stays conditionally unbiased, and the delay only lags the weights by the number of
pulls in flight.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from basevolve.allocators.base import ALLOCATORS, Allocator, unit_reward
from basevolve.errors import ConfigError


def exp3p_defaults(n_arms: int, horizon: int, delta: float = 0.05) -> tuple[float, float]:
    """(alpha, gamma) of Auer et al. (2002), Theorem 6.3, for K arms and horizon T."""
    k, t = float(n_arms), float(max(horizon, 1))
    alpha = 2.0 * math.sqrt(math.log(k * t / delta))
    gamma = min(0.6, 2.0 * math.sqrt(0.6 * k * math.log(k) / t))
    return alpha, gamma


@ALLOCATORS.decorator("exp3p")
class Exp3P(Allocator):
    name = "exp3p"

    def __init__(self, n_arms: int, rng: Any = None, horizon: int | None = None,
                 reward_mode: str = "best", alpha: float | None = None,
                 gamma: float | None = None, delta: float = 0.05,
                 reward_max: float = 1.05) -> None:
        super().__init__(n_arms, rng, horizon, reward_mode)
        if self.horizon is None:
            raise ConfigError("exp3p needs horizon (the bandit-allocated calls, C - K)")
        if not 0 < delta < 1:
            raise ConfigError(f"exp3p: delta must be in (0, 1), got {delta!r}")
        a0, g0 = exp3p_defaults(n_arms, self.horizon, delta)
        self.alpha = a0 if alpha is None else float(alpha)
        self.gamma = g0 if gamma is None else float(gamma)
        if not (math.isfinite(self.alpha) and self.alpha >= 0):
            raise ConfigError(f"exp3p: alpha must be >= 0, got {alpha!r}")
        if not 0 <= self.gamma <= 1:
            raise ConfigError(f"exp3p: gamma must be in [0, 1], got {gamma!r}")
        if not (math.isfinite(reward_max) and reward_max > 0):
            raise ConfigError(f"exp3p: reward_max must be > 0, got {reward_max!r}")
        self.reward_cap = float(reward_max)
        self.T = max(self.horizon, 1)
        self.eta = self.gamma / (3.0 * n_arms)
        init = self.alpha * self.gamma / 3.0 * math.sqrt(self.T / n_arms)
        self.log_w = np.full(n_arms, init)

    def probabilities(self) -> np.ndarray:
        """p_i = (1 - gamma) w_i / sum w + gamma / K over all arms (sums to 1)."""
        z = np.exp(self.log_w - self.log_w.max())
        return (1.0 - self.gamma) * z / z.sum() + self.gamma / self.n_arms

    def _ask(self, eligible: np.ndarray) -> tuple[int, float | None]:
        p = np.where(eligible, self.probabilities(), 0.0)
        p = p / p.sum()
        cdf = np.cumsum(p)
        arm = int(np.searchsorted(cdf, self.rng.random() * cdf[-1], side="right"))
        arm = min(arm, self.n_arms - 1)
        while not eligible[arm]:  # float edge: land on the last eligible arm
            arm -= 1
        return arm, float(p[arm])

    def _tell(self, arm: int, reward: float, prob: float | None, sampled: bool) -> None:
        if not sampled or prob is None:
            return
        p = self.probabilities()
        xhat = np.zeros(self.n_arms)
        xhat[arm] = unit_reward(reward, self.reward_cap) / prob
        bonus = self.alpha / (p * math.sqrt(self.n_arms * self.T))
        self.log_w += self.eta * (xhat + bonus)

    def _summary(self) -> dict[str, Any]:
        return {"alpha": self.alpha, "gamma": self.gamma,
                "probabilities": self.probabilities().tolist()}
