"""Shared pieces of the fixed-budget elimination policies (``successive_halving``,
``successive_rejects``).

Both hand out per-arm quotas within a round/phase and drop arms when it ends.  The
engine, however, decides *when* to ask (a free slot) and *which* arms may take a call
(the eligible mask: the arm's protocol can ask and it is under ``--cap``), so a quota
can sit on an arm that cannot take a call right now.  These helpers make that case
explicit and the same in both policies:

* :func:`most_owed` -- among eligible arms with quota left, the one owed the most calls
  (lowest index on ties), so concurrent asks interleave the arms of a round instead of
  serving one arm's whole quota first;
* :func:`best_eligible` -- the fallback when no eligible arm is owed a call: the eligible
  arm (preferring the still-active ones) with the highest mean told reward, arms
  without a told reward first (optimism), lowest index on ties.
"""

from __future__ import annotations

import numpy as np


def most_owed(owed: np.ndarray, eligible: np.ndarray) -> int | None:
    """Index of the eligible arm with the largest positive ``owed`` count, or None."""
    cand = eligible & (owed > 0)
    if not cand.any():
        return None
    return int(np.argmax(np.where(cand, owed, -1)))


def mean_or_inf(total: np.ndarray, count: np.ndarray) -> np.ndarray:
    """``total / count`` per arm, +inf where nothing was told (unknown arms rank first)."""
    return np.where(count > 0, total / np.maximum(count, 1), np.inf)


def best_eligible(means: np.ndarray, eligible: np.ndarray, active: np.ndarray) -> int:
    """Highest-mean eligible arm, active arms preferred (see the module docstring)."""
    pool = eligible & active if (eligible & active).any() else eligible
    return int(np.argmax(np.where(pool, means, -np.inf)))


__all__ = ["best_eligible", "mean_or_inf", "most_owed"]
