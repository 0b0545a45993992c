"""``random``: uniform over the eligible trajectories (paper, "Bandits Algorithms":
the non-adaptive random baseline).

P(arm = i) = 1 / |eligible| for every eligible i, drawn with ``rng.integers``.  Pending
pulls are ignored (the choice does not depend on observations at all).  The module is
named ``random_policy`` so it does not shadow the standard library's ``random``.
"""

from __future__ import annotations

import numpy as np

from basevolve.allocators.base import ALLOCATORS, Allocator


@ALLOCATORS.decorator("random")
class RandomAllocator(Allocator):
    name = "random"

    def _ask(self, eligible: np.ndarray) -> tuple[int, float | None]:
        idx = np.flatnonzero(eligible)
        return int(idx[self.rng.integers(idx.size)]), 1.0 / idx.size
