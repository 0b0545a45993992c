"""Across-trajectory allocation for BaSE (paper, Section 5, Algorithm 2).

``ALLOCATORS`` maps a policy name to its :class:`Allocator` subclass:

======================  ===================================================================
``single``              K = 1: the plain self-evolving loop (every call to one trajectory)
``round_robin``         cycle over the trajectories in order (non-adaptive baseline)
``random``              uniform over the eligible trajectories (non-adaptive baseline)
``ucb``                 UCB1 (Auer, Cesa-Bianchi & Fischer 2002)
``exp3p``               EXP3.P (Auer, Cesa-Bianchi, Freund & Schapire 2002)
``thompson``            discounted Beta-Bernoulli Thompson sampling (discount 0.95)
``thompson_plain``      the paper's plain Thompson sampling (no discount)
``successive_halving``  fixed-budget best-arm identification (Karnin et al. 2013), exact budget
``successive_rejects``  fixed-budget best-arm identification (Audibert & Bubeck 2010)
``sw_ucb``              sliding-window UCB (Garivier & Moulines 2011), non-stationary rewards
``d_ucb``               discounted UCB (Garivier & Moulines 2011), non-stationary rewards
``adaptive_ucb``        AdaEvolve's island choice: UCB over decayed, normalised improvements
======================  ===================================================================

Usage (the engine's contract)::

    alloc = ALLOCATORS.get(name)(n_arms=K, rng=np.random.default_rng(seed),
                                 horizon=C - K, reward_mode="best", **params)
    arm = alloc.ask(eligible)       # or alloc.assign(i) for Algorithm 2's K initial calls
    alloc.tell(arm, reward); alloc.cancel(arm); alloc.summary(); alloc.events
"""

from __future__ import annotations

from basevolve.allocators import (
    adaptive_ucb,
    d_ucb,
    exp3p,
    random_policy,
    round_robin,
    single,
    successive_halving,
    successive_rejects,
    sw_ucb,
    thompson,
    ucb,
)
from basevolve.allocators.base import (
    ALLOCATORS,
    REWARD_MODES,
    Allocator,
    AllocEvent,
    EventKind,
    pull_reward,
    unit_reward,
)

# imported for registration
del d_ucb, exp3p, random_policy, round_robin, single, successive_halving, successive_rejects
del adaptive_ucb, sw_ucb, thompson, ucb

__all__ = [
    "ALLOCATORS",
    "REWARD_MODES",
    "AllocEvent",
    "Allocator",
    "EventKind",
    "pull_reward",
    "unit_reward",
]
