"""Shared machinery for vectorised permutation tests.

Both permutation tests of the paper (the capability gate, Appendix "The Capability
Gate of the Collapse", and the test of the interaction ``c``, Table 8) apply a
*linear* map to a permuted vector and then a cheap reduction.  So a chunk of
shuffles is one ``(m, n)`` matrix of permuted copies (``Generator.permuted``) times
an ``(n, k)`` matrix: no Python loop per shuffle.  ``exact=True`` enumerates all
``n!`` orderings instead, which makes tiny cases checkable by hand.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable

import numpy as np

#: enumerate at most this many elements exactly (8! = 40,320 orderings).
MAX_EXACT = 8
_CHUNK_ELEMENTS = 2_000_000
#: a shuffle "meets" the observed value within this relative float tolerance, so ties
#: produced by re-ordering the same numbers are counted as ties (appendix: ">=").
TIE_RTOL = 1e-12


def permutation_stats(
    values: np.ndarray,
    statistic: Callable[[np.ndarray], np.ndarray],
    rng: np.random.Generator | None,
    shuffles: int,
    *,
    exact: bool = False,
) -> np.ndarray:
    """Statistic of permuted copies of ``values``.

    ``statistic`` maps ``(m, n)`` permuted rows to ``(m,)``.  With ``exact`` all
    ``n!`` permutations are evaluated (``n <= MAX_EXACT``) and ``rng``/``shuffles``
    are ignored; otherwise ``shuffles`` uniform random permutations are drawn.
    """
    v = np.asarray(values, dtype=float)
    if v.ndim != 1:
        raise ValueError(f"values must be 1-D, got shape {v.shape}")
    n = v.size
    if exact:
        if n > MAX_EXACT:
            raise ValueError(f"exact enumeration needs n <= {MAX_EXACT}, got n = {n}")
        perms = np.array(list(itertools.permutations(range(n))), dtype=np.intp).reshape(
            math.factorial(n), n
        )
        return statistic(v[perms])
    if rng is None or shuffles < 1:
        raise ValueError("Monte Carlo permutation needs an rng and shuffles >= 1")
    out = np.empty(shuffles)
    chunk = max(1, _CHUNK_ELEMENTS // max(n, 1))
    for start in range(0, shuffles, chunk):
        m = min(chunk, shuffles - start)
        rows = rng.permuted(np.broadcast_to(v, (m, n)), axis=1)
        out[start : start + m] = statistic(rows)
    return out


def p_value_ge(null: np.ndarray, observed: float) -> float:
    """Fraction of ``null`` meeting or exceeding ``observed`` (appendix definition)."""
    if not np.isfinite(observed):
        return float("nan")
    tol = TIE_RTOL * max(1.0, abs(observed))
    return float(np.mean(null >= observed - tol))


__all__ = ["MAX_EXACT", "p_value_ge", "permutation_stats"]
