"""``single``: K = 1, the plain self-evolving loop (paper, Section 3/4: one trajectory).

Every call goes to the only trajectory; the class exists so that the non-BaSE baseline
runs through exactly the same engine path as BaSE.  It refuses K != 1.
"""

from __future__ import annotations

import numpy as np

from basevolve.allocators.base import ALLOCATORS, Allocator


@ALLOCATORS.decorator("single")
class Single(Allocator):
    name = "single"
    min_arms = 1
    max_arms = 1

    def _ask(self, eligible: np.ndarray) -> tuple[int, float | None]:
        return 0, 1.0
