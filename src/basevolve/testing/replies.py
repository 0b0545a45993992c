"""Scripted replies for the LLM test server that vary by call but repeat exactly.

:func:`seeded_packing_reply` answers every request with a complete, valid circle-packing
program (26 equal circles on a grid) whose radius scale F in [0.3, 1] is a hash of the
request's ``seed``.  The engine derives each call's seed from the run seed and the call
index, so rewards differ between calls (bandits have something to learn) yet a repeated
sequential run with the same seed sees the same rewards (reproducibility tests).
Shared by the BaSE end-to-end tests, the replay tests and the BaSE benchmark.
"""

from __future__ import annotations

import hashlib
from typing import Any

PACKING_PROGRAM = '''import numpy as np


def construct_packing():
    g = np.linspace(0.1, 0.9, 6)
    centers = np.array([(x, y) for x in g for y in g])[:26]
    radii = np.full(26, 0.08 * {scale!r})
    return centers, radii, float(radii.sum())
'''


def seed_scale(seed: Any) -> float:
    """The radius scale F in [0.3, 1] that a request with this ``seed`` gets."""
    h = int.from_bytes(hashlib.sha256(str(seed).encode()).digest()[:4], "big")
    return round(0.3 + 0.7 * h / 2**32, 6)


def seeded_packing_reply(body: dict[str, Any], index: int) -> str:
    """A fenced, valid packing program whose score is determined by ``body["seed"]``."""
    return "```python\n" + PACKING_PROGRAM.format(scale=seed_scale(body.get("seed"))) + "```\n"
