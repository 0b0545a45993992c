"""Time-to-threshold (Table 3, following Taylor & Stone 2007).

For one method, the running-best fitness of its runs forms a matrix
``best: (n_runs, n_steps)`` on a common step grid (forward-filled; NaN before a run's
first recorded step).  Bootstrap samples resample runs with replacement and average
them, giving the mean running-best curve of each sample, ``(reps, n_steps)``.  The
time to threshold ``tau`` is the earliest step at which at least ``level`` (90%) of
the bootstrap samples have mean running-best ``>= tau``; it is reported as the step
(call index in a basevolve store), the mean generation index ("Gen.", as the paper's
Table 3), the mean calls and the mean cumulative FLOPs (every attempt, failed calls
included) of the runs at that step.  ``None`` ("never", "---" in the paper) when no step qualifies.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

_CHUNK_ELEMENTS = 4_000_000


@dataclass(frozen=True)
class ThresholdHit:
    """Where the bootstrap mean running-best first reaches ``tau`` (None = never)."""

    tau: float
    step: int | None
    calls: float | None
    flops: float | None
    generation: float | None = None


def reach_fraction(
    best: np.ndarray, rng: np.random.Generator, taus: Sequence[float], reps: int = 1000
) -> np.ndarray:
    """Fraction of bootstrap samples whose mean running-best reaches each tau.

    Returns shape ``(len(taus), n_steps)``.  A NaN (run not started) counts as not
    reached (it is treated as -inf), so a sample containing it cannot reach tau.
    """
    b = np.asarray(best, dtype=float)
    if b.ndim != 2 or b.shape[0] == 0 or b.shape[1] == 0:
        raise ValueError(f"best must have shape (n_runs, n_steps), got {b.shape}")
    if reps < 1:
        raise ValueError(f"reps must be >= 1, got {reps}")
    n_runs, n_steps = b.shape
    filled = np.where(np.isnan(b), -1e300, b)
    tau_arr = np.asarray(taus, dtype=float)
    hits = np.zeros((tau_arr.size, n_steps))
    chunk = max(1, _CHUNK_ELEMENTS // n_steps)
    for start in range(0, reps, chunk):
        m = min(chunk, reps - start)
        counts = _bootstrap_counts(n_runs, m, rng)
        means = counts @ filled / n_runs  # (m, n_steps)
        hits += (means[None, :, :] >= tau_arr[:, None, None]).sum(axis=1)
    return hits / reps


def _bootstrap_counts(n_runs: int, reps: int, rng: np.random.Generator) -> np.ndarray:
    """``(reps, n_runs)`` multiplicities of each run in each bootstrap sample."""
    idx = rng.integers(0, n_runs, size=(reps, n_runs))
    flat = (np.arange(reps)[:, None] * n_runs + idx).ravel()
    return np.bincount(flat, minlength=reps * n_runs).reshape(reps, n_runs).astype(float)


def level_curve(
    best: np.ndarray, rng: np.random.Generator, reps: int = 1000, level: float = 0.9
) -> np.ndarray:
    """Per step, the value that ``level`` of the bootstrap mean curves reach.

    It is the ``k``-th largest bootstrap mean, ``k = ceil(level * reps)``: at least
    ``k`` samples are ``>= tau`` exactly when this order statistic is ``>= tau``, so one
    ``np.partition`` per step answers every threshold at once.  Shape ``(n_steps,)``.
    """
    b = np.asarray(best, dtype=float)
    if b.ndim != 2 or b.shape[0] == 0 or b.shape[1] == 0:
        raise ValueError(f"best must have shape (n_runs, n_steps), got {b.shape}")
    if reps < 1 or not 0.0 < level <= 1.0:
        raise ValueError(f"need reps >= 1 and level in (0, 1], got {reps}, {level}")
    n_runs, n_steps = b.shape
    filled = np.where(np.isnan(b), -np.inf, b)
    counts_t = np.ascontiguousarray(_bootstrap_counts(n_runs, reps, rng).T)  # (n_runs, reps)
    k = int(np.ceil(level * reps - 1e-9))
    out = np.empty(n_steps)
    block = max(1, _CHUNK_ELEMENTS // reps)
    for start in range(0, n_steps, block):
        cols = filled[:, start : start + block].T  # (block, n_runs)
        missing = np.isinf(cols)
        # (block, reps): rows contiguous, so the per-step partition below is cache-friendly
        means = np.where(missing, 0.0, cols) @ counts_t / n_runs
        if missing.any():  # a sample containing a not-yet-started run cannot reach any tau
            means[(missing.astype(float) @ counts_t) > 0] = -np.inf
        out[start : start + block] = np.partition(means, reps - k, axis=1)[:, reps - k]
    return out


def time_to_threshold(
    best: np.ndarray,
    steps: np.ndarray,
    taus: Sequence[float],
    rng: np.random.Generator,
    reps: int = 1000,
    level: float = 0.9,
    calls: np.ndarray | None = None,
    flops: np.ndarray | None = None,
    generations: np.ndarray | None = None,
) -> list[ThresholdHit]:
    """Earliest step where >= ``level`` of bootstrap mean curves reach each tau.

    ``steps``: ``(n_steps,)`` increasing step indices of ``best``'s columns;
    ``calls``/``flops``/``generations``: optional ``(n_runs, n_steps)`` matrices averaged
    over runs (ignoring NaN) at the hitting step.
    """
    s = np.asarray(steps)
    if s.ndim != 1 or s.size != np.shape(best)[1]:
        raise ValueError(
            f"steps must have shape (n_steps,) = ({np.shape(best)[1]},), got {s.shape}"
        )
    curve = level_curve(best, rng, reps, level)
    out = []
    for tau in taus:
        ok = np.flatnonzero(curve >= tau)
        if ok.size == 0:
            out.append(ThresholdHit(float(tau), None, None, None, None))
            continue
        j = int(ok[0])

        def at(m: np.ndarray | None, j: int = j) -> float | None:
            if m is None:
                return None
            col = np.asarray(m, dtype=float)[:, j]
            return float(np.nanmean(col)) if np.isfinite(col).any() else None

        out.append(ThresholdHit(float(tau), int(s[j]), at(calls), at(flops), at(generations)))
    return out


__all__ = ["ThresholdHit", "level_curve", "reach_fraction", "time_to_threshold"]
