"""Constructions the simulated LLM writes into its programs, as real Python functions.

Why real functions: the algorithmic families of the paper's case studies (Appendix "Case
Studies") that need no optimiser -- CP ring/row constructors with uniform radii, MMD
jittered grids, lattices and the 5+11 concentric-ring polygon, HT points on circles --
are emitted as working code.  The simulator pastes each function's *source*
(``inspect.getsource``) into the program and calls the very same function in-process to
know what the program will return, so the program the sandbox runs and the value the
simulator predicted cannot drift apart.  Every function here therefore uses only
``numpy as np`` and ``math`` (the imports every emitted program starts with) and no
other name from this module.
"""

from __future__ import annotations

import math

import numpy as np


# --------------------------------------------------------------------- circle packing
def ring_layout(n_inner, r_inner, r_outer, phase):
    """26 centres: one in the middle, n_inner on a ring, the rest on an outer ring."""
    n_outer = 25 - n_inner
    a = 2 * np.pi * np.arange(n_inner) / n_inner + phase
    b = 2 * np.pi * np.arange(n_outer) / n_outer
    centers = np.vstack([
        [[0.5, 0.5]],
        np.column_stack([0.5 + r_inner * np.cos(a), 0.5 + r_inner * np.sin(a)]),
        np.column_stack([0.5 + r_outer * np.cos(b), 0.5 + r_outer * np.sin(b)]),
    ])
    return np.clip(centers, 0.02, 0.98)


def safe_radii(centers):
    """Largest radii with r_i <= wall distance and r_i <= half the nearest-neighbour gap."""
    d = np.sqrt(((centers[:, None, :] - centers[None, :, :]) ** 2).sum(-1))
    np.fill_diagonal(d, np.inf)
    walls = np.minimum(centers, 1 - centers).min(axis=1)
    return np.maximum(np.minimum(walls, d.min(axis=1) / 2), 0.0)


def hex_rows(rows, stretch):
    """Equal circles in rows (e.g. 6+5+6+5+4), scaled to fit the unit square.

    Rows of equal length are shifted by half a spacing; ``stretch`` scales the vertical
    spacing relative to the hexagonal sqrt(3)/2.  Returns (centers, radius).
    """
    pts = []
    for i, m in enumerate(rows):
        shift = 0.5 if i % 2 and i > 0 and rows[i] == rows[i - 1] else 0.0
        for k in range(m):
            pts.append((k - (m - 1) / 2 + shift, i * stretch * math.sqrt(3) / 2))
    p = np.array(pts, dtype=float)
    d = np.sqrt(((p[:, None, :] - p[None, :, :]) ** 2).sum(-1))
    np.fill_diagonal(d, np.inf)
    gap = d.min()
    w, h = np.ptp(p[:, 0]), np.ptp(p[:, 1])
    s = 1.0 / (max(w, h) + gap)
    r = s * gap / 2
    offset = np.array([(1 - (w * s + 2 * r)) / 2, (1 - (h * s + 2 * r)) / 2])
    return (p - p.min(axis=0)) * s + r + offset, r


# ------------------------------------------------------------------------ min-max distance
def jittered_grid(seed, amplitude):
    """A 4x4 grid with Gaussian jitter of the given amplitude (spacing 1)."""
    rng = np.random.default_rng(seed)
    g = np.array([(i, j) for i in range(4) for j in range(4)], dtype=float)
    return g + amplitude * rng.normal(size=(16, 2))


def lattice_rows(rows, aspect):
    """Points in rows of a triangular lattice (rows of equal length form a square grid);
    ``aspect`` scales the vertical spacing."""
    pts = []
    hexagonal = len(set(rows)) > 1
    dy = math.sqrt(3) / 2 if hexagonal else 1.0
    for i, m in enumerate(rows):
        for k in range(m):
            pts.append((k - (m - 1) / 2, i * dy * aspect))
    return np.array(pts, dtype=float)


def polygon_rings(n_inner, ratio, phase):
    """n_inner points on the unit circle and 16 - n_inner on a circle of radius ``ratio``."""
    n_outer = 16 - n_inner
    a = 2 * np.pi * np.arange(n_inner) / n_inner
    b = 2 * np.pi * np.arange(n_outer) / n_outer + phase
    inner = np.column_stack([np.cos(a), np.sin(a)])
    outer = ratio * np.column_stack([np.cos(b), np.sin(b)])
    return np.vstack([inner, outer])


# ------------------------------------------------------------------------ heilbronn triangle
def circle_rings(counts, radii, phases):
    """Points on circles around the incentre of the triangle (0,0), (1,0), (1/2, sqrt(3)/2).

    ``radii`` are fractions of the inradius sqrt(3)/6, so 1.0 touches the edges.
    """
    c = np.array([0.5, math.sqrt(3) / 6])
    pts = []
    for n, rho, ph in zip(counts, radii, phases, strict=True):
        a = 2 * np.pi * np.arange(n) / n + ph
        pts.append(c + rho * math.sqrt(3) / 6 * np.column_stack([np.cos(a), np.sin(a)]))
    return np.vstack(pts)


def square_points(seed):
    """11 uniform points in the unit square (most fall outside the triangle)."""
    return np.random.default_rng(seed).uniform(size=(11, 2))


def edge_points(n):
    """n points evenly spread along the bottom edge (all triangles degenerate)."""
    return np.column_stack([np.linspace(0.05, 0.95, n), np.zeros(n)])
