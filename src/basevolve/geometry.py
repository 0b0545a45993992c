"""Trusted geometry helpers shared by the built-in scorers and their pictures.

At the bottom of the layers (issue 33): the scorers in tasks/ and the drawings in viz/
both read it, so the tasks can draw through viz without reaching up.

Everything here is a pure function of plain data (what the sandbox hands back) and
**never raises** on bad input: conversion problems come back as a reason string so a
scorer can turn them into "score 0 with a stated reason" (issue 2, part 2; docs/design.md,
"Reference facts").

Conversion policy (decided here, once, for all tasks):

* ``numpy.ndarray`` **and nested lists/tuples of numbers** are accepted; both are
  converted with ``np.asarray(..., dtype=float)``.  Programs written for the paper's
  evaluators sometimes return lists, and the sandbox may rebuild arrays as lists.
* Ragged sequences, strings, booleans, ``None``, objects, complex numbers are rejected:
  a number must be a real integer or float, never text that happens to parse.
* Any NaN or infinity is rejected.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from itertools import combinations
from typing import Any, ParamSpec, TypeVar

import numpy as np

P = ParamSpec("P")
R = TypeVar("R")

_NUMERIC_KINDS = frozenset("iuf")  # signed, unsigned, float; not bool, complex, object, str

SQRT3 = math.sqrt(3.0)
TRIANGLE_AREA = SQRT3 / 4.0  # area of the HT container (0,0), (1,0), (1/2, sqrt(3)/2)


def as_float_array(
    value: Any, shape: tuple[int, ...], what: str
) -> tuple[np.ndarray | None, str | None]:
    """Convert ``value`` to a finite float array of exactly ``shape``.

    Returns ``(array, None)`` or ``(None, reason)``; ``what`` names the value in the
    reason ("centers", "points", ...).
    """
    if value is None:
        return None, f"{what} is None; expected an array of shape {shape}"
    if isinstance(value, str | bytes):
        return None, f"{what} is a {type(value).__name__}; expected an array of shape {shape}"
    try:
        raw = np.asarray(value)
    except (ValueError, TypeError) as exc:  # ragged nesting etc.
        return None, f"{what} is not a rectangular array of numbers ({_short(exc)})"
    if raw.dtype.kind not in _NUMERIC_KINDS:
        return None, (
            f"{what} has non-numeric entries (dtype {raw.dtype}); expected real numbers"
            " in an array of shape " + str(shape)
        )
    if raw.shape != shape:
        return None, f"{what} has shape {raw.shape}; expected {shape}"
    arr = raw.astype(float)
    bad = ~np.isfinite(arr)
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        return None, f"{what} has a non-finite value {float(arr[idx])!r} at index {idx}"
    return arr, None


def as_float_scalar(value: Any) -> float | None:
    """A finite real number, or None (used only for recorded, untrusted extras)."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        arr = np.asarray(value)
    except (ValueError, TypeError):
        return None
    if arr.shape != () or arr.dtype.kind not in _NUMERIC_KINDS:
        return None
    out = float(arr)
    return out if math.isfinite(out) else None


def quiet_numpy(fn: Callable[P, R]) -> Callable[P, R]:
    """Run a scorer with numpy's overflow/invalid warnings off: a hostile value (e.g.
    coordinates of 1e308) must give a reason, not warnings or exceptions."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        with np.errstate(all="ignore"):
            return fn(*args, **kwargs)

    return wrapper


def finite_metrics(metrics: dict[str, float]) -> dict[str, float]:
    """Drop non-finite metrics (huge coordinates can overflow); stores and JSON need finite numbers."""
    return {k: float(v) for k, v in metrics.items() if math.isfinite(v)}


@functools.lru_cache(maxsize=64)
def _pair_indices(n: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.triu_indices(n, k=1)``, computed once per ``n`` and read-only.

    Why cached: it is ~20 us, a third of a MinMaxDist score, and the engine scores every
    child twice (reference and strict tolerance) on its event loop.
    """
    i, j = np.triu_indices(n, k=1)
    i.flags.writeable = False
    j.flags.writeable = False
    return i, j


def pairwise_distances(points: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distances over all unordered pairs ``i < j``: ``(d, i, j)`` as flat arrays
    (``i`` and ``j`` are shared read-only index arrays)."""
    i, j = _pair_indices(len(points))
    diff = points[i] - points[j]
    return np.hypot(diff[:, 0], diff[:, 1]), i, j


def triple_indices(n: int) -> np.ndarray:
    """All ``C(n, 3)`` index triples as an ``(m, 3)`` int array (165 for n = 11)."""
    return np.array(list(combinations(range(n), 3)), dtype=int)


def triangle_areas(points: np.ndarray, triples: np.ndarray) -> np.ndarray:
    """Unsigned areas of the triangles ``points[triples]`` (half the |cross product|)."""
    a, b, c = (points[triples[:, k]] for k in range(3))
    cross = (b[:, 0] - a[:, 0]) * (c[:, 1] - a[:, 1]) - (b[:, 1] - a[:, 1]) * (c[:, 0] - a[:, 0])
    return 0.5 * np.abs(cross)


def triangle_edge_slack(points: np.ndarray) -> np.ndarray:
    """Signed distance of each point to each edge of the HT container, ``(n, 3)``.

    Non-negative means on the inner side.  Edges: bottom ``y = 0``, left
    ``sqrt(3) x - y = 0``, right ``sqrt(3) (1 - x) - y = 0`` (unit normals, so the
    tolerance is a Euclidean distance, like the 1e-6 of the reference evaluators).
    """
    x, y = points[:, 0], points[:, 1]
    return np.stack([y, (SQRT3 * x - y) / 2.0, (SQRT3 * (1.0 - x) - y) / 2.0], axis=1)


def _short(exc: BaseException, limit: int = 120) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."
