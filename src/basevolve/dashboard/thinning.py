"""Thinning a chart's points to what a screen can show (issue 22, item 11).

A running best is a step function: keeping the points where some line changes and the
point before each change draws exactly the same lines (:func:`thin_steps`); counts over
time are sampled evenly (:func:`even`).  Used by the run page (:mod:`.run_data`) and its
per-model section (:mod:`.run_models`), which is why it is a module of its own: the run
page imports the section, so the section cannot import the run page (issue 33).
"""

from __future__ import annotations

import numpy as np

MAX_POINTS = 2000  # points per chart series sent; a chart is ~1,400 pixels wide


def _unique(a: np.ndarray) -> np.ndarray:
    """``np.unique`` of an integer array, without its first-call import of ``numpy.ma``
    (7 ms of a long run's first page view)."""
    a = np.sort(a)
    return a[np.r_[True, a[1:] != a[:-1]]] if a.size else a


def thin_steps(series: np.ndarray, limit: int | None = None) -> np.ndarray:
    """Column indices of ``series`` (lines x points) that draw the same step lines.

    Keeps the first and last point and, around every change of any line, the point
    before and the point of the change; if that is still more than ``limit``, an even
    sample of those (a running best is never drawn above its true value then).
    """
    n, limit = series.shape[1], limit or MAX_POINTS
    if n <= limit:
        return np.arange(n)
    change = np.flatnonzero(np.any(series[:, 1:] != series[:, :-1], axis=0))
    keep = _unique(np.concatenate([[0, n - 1], change, change + 1]))
    if keep.size > limit:
        keep = _unique(keep[np.linspace(0, keep.size - 1, limit).round().astype(int)])
    return keep


def even(n: int, limit: int | None = None) -> np.ndarray:
    """``limit`` evenly spaced indices of ``range(n)``, first and last included."""
    limit = limit or MAX_POINTS
    return np.arange(n) if n <= limit else _unique(np.linspace(0, n - 1, limit).round()
                                                     .astype(int))


__all__ = ["MAX_POINTS", "even", "thin_steps"]
