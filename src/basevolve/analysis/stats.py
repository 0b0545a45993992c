"""Point estimates and the stratified bootstrap (rliable protocol).

The paper (Section "Experiment Setup", Appendix "Distribution") reports the mean with
a stratified-bootstrap standard error and a 95% CI over 1000 resamples, following
rliable (Agarwal et al., 2021), and summarises run-to-run spread by the interquartile
mean.  Definitions used here, matching rliable's ``metrics``/``library`` modules:

* ``scores`` has shape ``(n_runs, n_tasks)``; a single configuration is
  ``(n_runs,)`` (one task).
* IQM = ``scipy.stats.trim_mean(scores, 0.25, axis=None)``: the mean of the middle
  50% of all runs x tasks after dropping ``int(0.25 * n)`` values from each end.
* aggregate mean = mean over runs for each task, then mean over tasks; aggregate
  median = median of the per-task means (rliable ``aggregate_median``).
* stratified bootstrap = resample runs with replacement *independently within each
  task* (stratum), recompute the aggregate; the SE is the standard deviation (ddof=1)
  of the bootstrap replicates and the CI is the percentile interval.

All functions are pure: explicit ``np.random.Generator``, ValueError on bad shapes.
Resamples are vectorised ``(reps, n_runs, n_tasks)`` gathers, processed in chunks.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

Aggregate = Callable[[np.ndarray], np.ndarray]
_CHUNK_ELEMENTS = 4_000_000  # bound memory of one gathered chunk (~32 MB of float64)


def _as_matrix(scores: np.ndarray) -> np.ndarray:
    a = np.asarray(scores, dtype=float)
    if a.ndim == 1:
        a = a[:, None]
    if a.ndim != 2 or a.shape[0] == 0 or a.shape[1] == 0:
        raise ValueError(
            f"scores must have shape (n_runs,) or (n_runs, n_tasks) with n_runs >= 1, got {a.shape}"
        )
    if not np.isfinite(a).all():
        raise ValueError("scores must be finite (drop or zero-score failed runs first)")
    return a


def iqm(scores: np.ndarray) -> float:
    """Interquartile mean over all runs x tasks (rliable ``aggregate_iqm``)."""
    return float(_batched_iqm(_as_matrix(scores)[None])[0])


def aggregate_mean(scores: np.ndarray) -> float:
    """Mean over runs per task, then over tasks (rliable ``aggregate_mean``)."""
    return float(_batched_mean(_as_matrix(scores)[None])[0])


def aggregate_median(scores: np.ndarray) -> float:
    """Median of the per-task means (rliable ``aggregate_median``)."""
    return float(_batched_median(_as_matrix(scores)[None])[0])


def _batched_mean(x: np.ndarray) -> np.ndarray:
    return x.mean(axis=1).mean(axis=1)


def _batched_median(x: np.ndarray) -> np.ndarray:
    return np.median(x.mean(axis=1), axis=1)


def _batched_iqm(x: np.ndarray) -> np.ndarray:
    """IQM of each ``x[r]`` (shape ``(reps, n_runs, n_tasks)``), as ``trim_mean(.., 0.25)``."""
    flat = np.sort(x.reshape(x.shape[0], -1), axis=1)
    n = flat.shape[1]
    cut = int(0.25 * n)
    return flat[:, cut : n - cut].mean(axis=1)


def _batched_run_median(x: np.ndarray) -> np.ndarray:
    return np.median(x.reshape(x.shape[0], -1), axis=1)


#: Named batched aggregates: each maps ``(reps, n_runs, n_tasks) -> (reps,)``.
AGGREGATES: dict[str, Aggregate] = {
    "mean": _batched_mean,
    "median": _batched_run_median,
    "aggregate_median": _batched_median,
    "iqm": _batched_iqm,
}


def stratified_bootstrap(
    scores: np.ndarray, aggregate: str | Aggregate, rng: np.random.Generator, reps: int = 1000
) -> np.ndarray:
    """Bootstrap replicates of ``aggregate`` with runs resampled within each task.

    Returns shape ``(reps,)``.  ``aggregate`` is a name from :data:`AGGREGATES` or a
    callable on ``(reps, n_runs, n_tasks)`` arrays.
    """
    a = _as_matrix(scores)
    if reps < 1:
        raise ValueError(f"reps must be >= 1, got {reps}")
    fn = AGGREGATES[aggregate] if isinstance(aggregate, str) else aggregate
    n_runs, n_tasks = a.shape
    out = np.empty(reps)
    chunk = max(1, _CHUNK_ELEMENTS // a.size)
    cols = np.arange(n_tasks)
    for start in range(0, reps, chunk):
        m = min(chunk, reps - start)
        idx = rng.integers(0, n_runs, size=(m, n_runs, n_tasks))
        out[start : start + m] = fn(a[idx, cols])
    return out


def _boot_se(replicates: np.ndarray) -> float:
    """Bootstrap SE (ddof=1); exactly 0 when every replicate is the same number.

    Why the special case: means of identical values differ in the last bit, so a
    constant sample (one run, or all runs equal) would otherwise report an SE of ~1e-18.
    """
    if replicates.size < 2:
        return float("nan")
    if np.ptp(replicates) <= 4 * np.finfo(float).eps * max(1.0, float(np.abs(replicates).max())):
        return 0.0
    return float(replicates.std(ddof=1))


@dataclass(frozen=True)
class Estimate:
    """A point estimate with its bootstrap SE and percentile CI."""

    value: float
    se: float
    ci_low: float
    ci_high: float


def bootstrap_estimate(
    scores: np.ndarray,
    aggregate: str | Aggregate,
    rng: np.random.Generator,
    reps: int = 1000,
    confidence: float = 0.95,
) -> Estimate:
    """Point value, bootstrap SE (ddof=1) and percentile CI of ``aggregate``."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    a = _as_matrix(scores)
    fn = AGGREGATES[aggregate] if isinstance(aggregate, str) else aggregate
    value = float(fn(a[None])[0])
    boot = stratified_bootstrap(a, fn, rng, reps)
    alpha = (1.0 - confidence) / 2.0
    lo, hi = np.percentile(boot, [100 * alpha, 100 * (1 - alpha)])
    return Estimate(value, _boot_se(boot), float(lo), float(hi))


def describe(
    scores: np.ndarray, rng: np.random.Generator, reps: int = 1000, confidence: float = 0.95
) -> dict[str, float]:
    """Summary row of one configuration: mean (+SE, CI), median, IQM, n.

    One resample set serves mean and IQM (``(reps, n_runs)`` indices drawn once), so
    the SE of the mean and the IQM come from the same bootstrap world.
    """
    a = _as_matrix(scores)
    if a.shape[1] != 1:
        raise ValueError(f"describe expects one configuration, shape (n_runs,), got {a.shape}")
    x = a[:, 0]
    n = x.size
    idx = rng.integers(0, n, size=(reps, n))
    boot = x[idx]
    means = boot.mean(axis=1)
    alpha = (1.0 - confidence) / 2.0
    lo, hi = np.percentile(means, [100 * alpha, 100 * (1 - alpha)])
    iqm_boot = _batched_iqm(boot[:, :, None])
    return {
        "mean": float(x.mean()),
        "se": _boot_se(means),
        "ci_low": float(lo),
        "ci_high": float(hi),
        "median": float(np.median(x)),
        "iqm": iqm(x),
        "iqm_se": _boot_se(iqm_boot),
        "n": int(n),
    }


def cell_generator(scores: np.ndarray, seed: int = 0) -> np.random.Generator:
    """The bootstrap generator of one configuration ("cell"): seeded by ``seed`` and
    the cell's own scores, as a multiset.

    Why not one generator shared across cells: then a cell's interval depends on which
    cells were resampled before it, so ``analyze``, the sweep summary and the dashboard,
    which list different cells in different orders, gave one cell different CIs from
    the same "1000 resamples, seeded" (issue 24, item 4).  Seeded by its scores (sorted:
    the order runs are read in does not matter), a cell gets one interval wherever it is
    shown; labels differ between those views, the runs in a cell do not.
    """
    x = np.sort(np.asarray(scores, dtype=float).ravel()) + 0.0  # -0.0 and 0.0 alike
    digest = hashlib.blake2b(x.tobytes(), digest_size=16).digest()
    words = [int(seed), *np.frombuffer(digest, dtype=np.uint32).tolist()]
    return np.random.default_rng(np.random.SeedSequence(words))


def cell_stats(scores: np.ndarray, seed: int = 0, reps: int = 1000,
               confidence: float = 0.95) -> dict[str, float]:
    """:func:`describe` of one cell with :func:`cell_generator`: the one function every
    view of a cell's mean, CI and IQM uses (``analyze``, the sweep summary, ``sweep
    --status``, the dashboard)."""
    x = np.sort(np.asarray(scores, dtype=float).ravel())
    return describe(x, cell_generator(x, seed), reps, confidence)


__all__ = [
    "AGGREGATES",
    "Estimate",
    "aggregate_mean",
    "aggregate_median",
    "bootstrap_estimate",
    "cell_generator",
    "cell_stats",
    "describe",
    "iqm",
    "stratified_bootstrap",
]
