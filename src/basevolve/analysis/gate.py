"""The capability gate (Appendix "The Capability Gate of the Collapse", Table 4).

Per (model, task, C): ``V_{T=1}`` (best-of-N, the mean fitness at depth 1),
``V_max`` (the best mean fitness over all tested depths), the depth gain
``penBoN = V_max - V_{T=1}``, and a permutation p-value for that gain.

The test, exactly as the appendix describes it: under the null that depth has no
effect, the per-seed fitness values of all depths at this (model, task, C) are
exchangeable across T.  Each shuffle reassigns the pooled per-seed values to the
depth cells (keeping every cell's number of seeds), recomputes every cell mean,
re-takes the max over T and subtracts the shuffled T = 1 mean; ``p`` is the fraction
of shuffles whose penBoN meets or exceeds the observed one.  Because the null
re-maxes too it absorbs the selection inflation of ``V_max`` (a bootstrap CI cannot:
penBoN >= 0 on every resample).  When T = 1 is itself the best cell, penBoN = 0 and
every shuffle meets it, so ``p = 1`` (Table 4, Llama/CP).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from basevolve.analysis.permutation import p_value_ge, permutation_stats


@dataclass(frozen=True)
class GateResult:
    """One row of Table 4 (``t_star`` = the depth attaining ``v_max``)."""

    v_t1: float
    v_max: float
    t_star: int
    pen_bon: float
    p: float
    n_depths: int
    n_runs: int


def _indicator(depths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    levels, inverse = np.unique(depths, return_inverse=True)
    counts = np.bincount(inverse, minlength=levels.size)
    g = np.zeros((depths.size, levels.size))
    g[np.arange(depths.size), inverse] = 1.0 / counts[inverse]
    return levels, g


def capability_gate(
    fitness: np.ndarray,
    depths: np.ndarray,
    rng: np.random.Generator | None,
    shuffles: int = 20_000,
    *,
    exact: bool = False,
) -> GateResult:
    """Table 4 statistics for one (model, task, C).

    ``fitness`` and ``depths`` have shape ``(n_runs,)`` (one entry per seed x depth
    run).  Without a T = 1 cell, ``v_t1``, ``pen_bon`` and ``p`` are NaN.
    """
    f = np.asarray(fitness, dtype=float)
    d = np.asarray(depths)
    if f.ndim != 1 or f.shape != d.shape or f.size == 0:
        raise ValueError(
            f"fitness and depths must be equal-length 1-D arrays, got {f.shape} and {d.shape}"
        )
    if not np.isfinite(f).all():
        raise ValueError("fitness must be finite")
    levels, g = _indicator(d)
    means = f @ g
    best = int(np.argmax(means))
    v_max = float(means[best])
    t1 = np.flatnonzero(levels == 1)
    if t1.size == 0:
        nan = float("nan")
        return GateResult(nan, v_max, int(levels[best]), nan, nan, levels.size, f.size)
    j = int(t1[0])
    observed = v_max - float(means[j])

    def pen(rows: np.ndarray) -> np.ndarray:
        m = rows @ g
        return m.max(axis=1) - m[:, j]

    if levels.size == 1:
        p = 1.0
    else:
        p = p_value_ge(permutation_stats(f, pen, rng, shuffles, exact=exact), observed)
    return GateResult(float(means[j]), v_max, int(levels[best]), observed, p, levels.size, f.size)


__all__ = ["GateResult", "capability_gate"]
