"""``thompson`` (discounted) and ``thompson_plain`` (the paper's) Beta-Bernoulli Thompson sampling.

Posterior model.  Each arm i has a Beta(1 + S_i, 1 + F_i) posterior over its success
probability.  A told reward is mapped onto [0, 1] (x = clip(r, 0, reward_max) /
reward_max, :func:`~basevolve.allocators.unit_reward`) and turned into a Bernoulli trial
b ~ Bernoulli(x) (Agrawal & Goyal 2012, "Analysis of Thompson sampling for the
multi-armed bandit problem", COLT, Algorithm 2 for rewards in [0, 1]); then

    S_j <- discount * S_j,  F_j <- discount * F_j   for every arm j
    S_i += b,  F_i += 1 - b                        for the pulled arm i

(discounted Thompson sampling, Raj & Kalyani 2017, "Taming non-stationary bandits: a
Bayesian approach").  ``bernoulli=False`` adds the fractional reward (S += x,
F += 1 - x) instead of a trial.

``thompson_plain`` is the paper's Thompson sampling (Section 5 cites Thompson 1933 and
Agrawal & Goyal 2012; no discount is mentioned): the same posterior with discount = 1,
i.e. stationary Beta-Bernoulli TS.  Use it to reproduce the paper.

Why ``thompson`` defaults to discount = 0.95 instead.  The reward is a best-so-far
fitness: bounded in [0, ~1] and *non-stationary* (an arm's running best only rises, at
a rate that changes as the trajectory converges).  Under plain TS the evidence of an
arm's early, low rewards never fades, so a trajectory that starts slowly and then
climbs is judged by its whole history; with discount < 1 the posterior's effective
memory is about 1 / (1 - discount) = 20 observations (of the whole run, since every
arm's counts decay on each tell), and arms left alone drift back towards the prior,
which re-opens exploration.  20 is a judgement call (a few pulls per arm for K = 10 at
the paper's C = 512), not tuned on any task; ``benchmarks/allocators_synthetic.py``
compares both on stationary and drifting bandits.

Pending pulls (asked, not yet told) count as provisional observations at the arm's
posterior mean m_i while sampling (S_i += pending_i * m_i, F_i += pending_i * (1 - m_i)):
the "hallucinated observation" of batched bandits (Desautels, Krause & Burdick 2014,
"Parallelizing exploration-exploitation tradeoffs in Gaussian process bandit
optimization", JMLR 15, GP-BUCB), which leaves the posterior mean unchanged and narrows
its spread, so concurrent asks do not all land on the arm with the luckiest draw.  Why
the mean and not a pessimistic value (e.g. a failure): with many calls in flight the
best arm is the one with the most pending pulls, and a pessimistic value would pull its
mean down exactly because it is being exploited; the narrowing alone already spreads
the batch.  Provisional observations are not decayed and vanish at the tell.

Ask: draw theta_i ~ Beta(...) for every arm (always K draws, so the random stream
does not depend on the mask) and return the eligible arm with the largest theta.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from basevolve.allocators.base import ALLOCATORS, Allocator, unit_reward
from basevolve.errors import ConfigError

#: ``thompson``'s default discount (effective memory ~20 observations; module docstring)
DEFAULT_DISCOUNT = 0.95


@ALLOCATORS.decorator("thompson")
class Thompson(Allocator):
    name = "thompson"

    def __init__(self, n_arms: int, rng: Any = None, horizon: int | None = None,
                 reward_mode: str = "best", discount: float = DEFAULT_DISCOUNT,
                 bernoulli: bool = True, reward_max: float = 1.05) -> None:
        super().__init__(n_arms, rng, horizon, reward_mode)
        if not 0 < discount <= 1:
            raise ConfigError(f"{self.name}: discount must be in (0, 1], got {discount!r}")
        if not (math.isfinite(reward_max) and reward_max > 0):
            raise ConfigError(f"{self.name}: reward_max must be > 0, got {reward_max!r}")
        self.discount = float(discount)
        self.bernoulli = bool(bernoulli)
        self.reward_cap = float(reward_max)
        self.S = np.zeros(n_arms)
        self.F = np.zeros(n_arms)

    def posterior_mean(self) -> np.ndarray:
        return (1.0 + self.S) / (2.0 + self.S + self.F)

    def _ask(self, eligible: np.ndarray) -> tuple[int, float | None]:
        m = self.posterior_mean()
        a = 1.0 + self.S + self.pending * m
        b = 1.0 + self.F + self.pending * (1.0 - m)
        theta = self.rng.beta(a, b)
        return int(np.argmax(np.where(eligible, theta, -np.inf))), None

    def _tell(self, arm: int, reward: float, prob: float | None, sampled: bool) -> None:
        x = unit_reward(reward, self.reward_cap)
        if self.bernoulli:
            x = float(self.rng.random() < x)
        if self.discount != 1.0:
            self.S *= self.discount
            self.F *= self.discount
        self.S[arm] += x
        self.F[arm] += 1.0 - x

    def _summary(self) -> dict[str, Any]:
        return {"discount": self.discount, "posterior_mean": self.posterior_mean().tolist()}


@ALLOCATORS.decorator("thompson_plain")
class PlainThompson(Thompson):
    """The paper's Thompson sampling: :class:`Thompson` with discount = 1 (no forgetting)."""

    name = "thompson_plain"

    def __init__(self, n_arms: int, rng: Any = None, horizon: int | None = None,
                 reward_mode: str = "best", bernoulli: bool = True,
                 reward_max: float = 1.05) -> None:
        super().__init__(n_arms, rng, horizon, reward_mode, discount=1.0,
                         bernoulli=bernoulli, reward_max=reward_max)
