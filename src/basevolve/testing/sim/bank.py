"""The simulator's solution bank: optimiser outputs computed once, offline.

``bank.json`` is written by :mod:`basevolve.testing.sim.make_bank` (SLSQP multistart,
every entry checked by the real scorer).  The optimiser families emit these solutions,
transformed and degraded, as literal data (issue 13 allows this so an evaluation costs
milliseconds, not the optimiser's seconds).
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any

import numpy as np


@lru_cache(maxsize=1)
def _bank() -> dict[str, list[dict[str, Any]]]:
    text = resources.files("basevolve.testing.sim").joinpath("bank.json").read_text("utf-8")
    return json.loads(text)


@lru_cache(maxsize=8)
def entries(task: str) -> tuple[dict[str, Any], ...]:
    """The bank's solutions for ``task`` (best first), arrays as read-only numpy arrays."""
    out = []
    for e in _bank()[task]:
        item = {k: (np.asarray(v, dtype=float) if isinstance(v, list) else v)
                for k, v in e.items()}
        for v in item.values():
            if isinstance(v, np.ndarray):
                v.flags.writeable = False
        out.append(item)
    return tuple(out)
