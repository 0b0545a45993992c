"""Heilbronn-triangle families (paper, Appendix "Case Studies", "Heilbronn Triangle").

* ``invalid`` -- the initial program's kind: outputs that score 0 (all points at the
  origin, uniform points in the unit square that leave the triangle, points on one
  edge).  "Every run begins with a long stretch of invalid output."
* ``hand`` -- hand-placed points on circles around the incentre (no optimiser); up to
  ~0.45 for 11 points on the inscribed circle.
* ``de_soft_penalty`` -- ``differential_evolution`` over the unit square with a +1000
  penalty per point outside: "stuck near 0.26", and most children fail the
  containment check ("465 children evaluate to fitness 0.0"), so ``valid`` is low.
* ``slsqp_softmin`` -- SLSQP multistart with hard edge constraints and a log-sum-exp
  soft-min of the 165 areas: climbs slowly up to ~0.95 (healthy run 6).

Degradation: circles shrunk towards the incentre (areas scale with the square of the
factor), or (optimiser families) one point pulled towards the midpoint of the two
others of the smallest triangle -- the paper's near-collinear bottleneck triplet.  An
invalid output moves a point just outside the triangle.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from basevolve.geometry import TRIANGLE_AREA, triple_indices
from basevolve.tasks.heilbronn_triangle import BENCHMARK_MIN_AREA_NORMALIZED, smallest_triangle
from basevolve.testing.sim.bank import entries
from basevolve.testing.sim.builders import circle_rings, edge_points, square_points
from basevolve.testing.sim.families import Family, TaskModel, bisect, literal, program, source

ENTRY = "heilbronn_triangle11"
IMPORTS = "import math\n\nimport numpy as np"
SQ3 = math.sqrt(3.0)
_TRI = triple_indices(11)
_CIRCLES = (((11,), (0.999,), (0.0,)), ((3, 8), (0.6, 0.999), (0.0, 0.65)),
            ((5, 6), (0.8, 0.999), (0.0, 1.15)), ((1, 10), (0.0, 0.999), (0.0, 0.3)))


def _f(points: np.ndarray) -> float:
    """Fitness as the real scorer computes it (smallest of the 165 areas), without its
    input checks; containment is guaranteed by construction where this is used."""
    a, b, c = points[_TRI[:, 0]], points[_TRI[:, 1]], points[_TRI[:, 2]]
    area = 0.5 * np.abs((b[:, 0] - a[:, 0]) * (c[:, 1] - a[:, 1])
                        - (c[:, 0] - a[:, 0]) * (b[:, 1] - a[:, 1]))
    return float(area.min() / TRIANGLE_AREA / BENCHMARK_MIN_AREA_NORMALIZED)


def _outside(rng: np.random.Generator, pts: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """Move one point across the bottom edge by a distance in [lo, hi] (invalid output)."""
    p = pts.copy()
    k = int(rng.integers(len(p)))
    p[k, 1] = -rng.uniform(lo, hi)
    return p


def render_invalid(rng: np.random.Generator, fitness: float, valid: bool) -> tuple[str, object]:
    kind = int(rng.integers(3))
    if kind == 0:
        return program("Eleven points (placeholder).", IMPORTS, "", ENTRY,
                       "    points = np.zeros((11, 2))\n    return points\n"), np.zeros((11, 2))
    if kind == 1:
        seed = int(rng.integers(10_000))
        body = f"    points = square_points(seed={seed!r})\n    return points\n"
        return (program("Eleven random points.", IMPORTS, source(square_points), ENTRY, body),
                square_points(seed))
    body = "    points = edge_points(11)\n    return points\n"
    return (program("Eleven points along the base.", IMPORTS, source(edge_points), ENTRY, body),
            edge_points(11))


@lru_cache(maxsize=1)
def _circle_bases() -> tuple[float, ...]:
    return tuple(_f(circle_rings(*v)) for v in _CIRCLES)


def render_hand(rng: np.random.Generator, fitness: float, valid: bool) -> tuple[str, object]:
    bases = _circle_bases()
    ok = [i for i, b in enumerate(bases) if b >= fitness] or [int(np.argmax(bases))]
    i = ok[int(rng.integers(len(ok)))]
    counts, radii, phases = _CIRCLES[i]
    s = 1.15 if not valid else math.sqrt(min(1.0, fitness / bases[i]))
    radii = tuple(round(r * s, 15) for r in radii)
    pts = circle_rings(counts, radii, phases)
    body = (f"    # points on {len(counts)} circle(s) around the incentre\n"
            f"    points = circle_rings(counts={counts!r}, radii={radii!r}, phases={phases!r})\n"
            "    return points\n")
    code = program("Eleven points placed by hand on circles inside the triangle.", IMPORTS,
                   source(circle_rings), ENTRY, body)
    return code, pts


def _degrade(rng: np.random.Generator, fitness: float) -> np.ndarray:
    bank = entries("heilbronn_triangle")
    base = np.asarray(bank[int(rng.integers(len(bank)))]["points"])
    if rng.random() < 0.5:  # the triangle's mirror symmetry x -> 1 - x
        base = base * np.array([-1.0, 1.0]) + np.array([1.0, 0.0])
    base = base[rng.permutation(11)]
    _, (i, j, k) = smallest_triangle(base)

    def pulled(t: float) -> np.ndarray:
        p = base.copy()
        p[k] = p[k] + t * ((p[i] + p[j]) / 2 - p[k])
        return p

    pts = pulled(bisect(lambda t: _f(pulled(t)), fitness, 0.0, 1.0))
    return pts if _f(pts) > 0 else base  # a bracket miss keeps the valid base


DE_SOURCE = '''def de_soft_penalty(seed=0, maxiter=200):
    """differential_evolution over [0, 1]^22 with +1000 per point outside the triangle."""
    from scipy.optimize import differential_evolution

    def objective(x):
        p = x.reshape(11, 2)
        outside = (p[:, 1] < 0) | (p[:, 1] > math.sqrt(3) * p[:, 0])
        outside |= p[:, 1] > math.sqrt(3) * (1 - p[:, 0])
        a = [abs((p[j, 0] - p[i, 0]) * (p[k, 1] - p[i, 1])
                 - (p[k, 0] - p[i, 0]) * (p[j, 1] - p[i, 1])) / 2
             for i in range(11) for j in range(i + 1, 11) for k in range(j + 1, 11)]
        return -min(a) + 1000.0 * outside.sum()

    res = differential_evolution(objective, [(0.0, 1.0)] * 22, seed=seed, maxiter=maxiter)
    return res.x.reshape(11, 2)'''

SOFTMIN_SOURCE = '''def softmin_multistart(starts=100, k=1000.0, seed=0):
    """SLSQP from many random starts: hard edge constraints, log-sum-exp soft-min area."""
    from itertools import combinations

    from scipy.optimize import minimize

    tri = np.array(list(combinations(range(11), 3)))
    rng = np.random.default_rng(seed)

    def areas(x):
        p = x.reshape(11, 2)
        a, b, c = p[tri[:, 0]], p[tri[:, 1]], p[tri[:, 2]]
        return 0.5 * np.abs((b[:, 0] - a[:, 0]) * (c[:, 1] - a[:, 1])
                            - (c[:, 0] - a[:, 0]) * (b[:, 1] - a[:, 1]))

    def softmin(x):
        a = areas(x)
        return np.log(np.sum(np.exp(-k * (a - a.min())))) / k - a.min()

    def edges(x):
        p = x.reshape(11, 2)
        s = math.sqrt(3)
        return np.concatenate([p[:, 1], s * p[:, 0] - p[:, 1], s * (1 - p[:, 0]) - p[:, 1]])

    best = None
    for _ in range(starts):
        u = rng.uniform(size=(11, 2))
        u[u.sum(1) > 1] = 1 - u[u.sum(1) > 1]
        x0 = (u[:, :1] * [1.0, 0.0] + u[:, 1:] * [0.5, math.sqrt(3) / 2]).ravel()
        res = minimize(softmin, x0, method="SLSQP",
                       constraints=[{"type": "ineq", "fun": edges}])
        if best is None or areas(res.x).min() > areas(best).min():
            best = res.x
    return best.reshape(11, 2)'''


def _data_program(doc: str, helper: str, note: str, pts: np.ndarray) -> str:
    body = (f"    # {note}\n"
            "    # kept as data so that evaluating the program is fast.\n"
            f"    points = np.array({literal(pts)})\n"
            "    return points\n")
    return program(doc, IMPORTS, helper, ENTRY, body)


def render_de(rng: np.random.Generator, fitness: float, valid: bool) -> tuple[str, object]:
    pts = _degrade(rng, fitness)
    if not valid:
        pts = _outside(rng, pts, 1e-3, 3e-2)
    seed = int(rng.integers(1000))
    note = f"de_soft_penalty(seed={seed}) returned the points below;"
    return _data_program("Heilbronn by differential evolution with a soft penalty.",
                         DE_SOURCE, note, pts), pts


def render_softmin(rng: np.random.Generator, fitness: float, valid: bool) -> tuple[str, object]:
    pts = _degrade(rng, fitness)
    if not valid:
        pts = _outside(rng, pts, 1e-4, 1e-3)
    starts = int(rng.choice([20, 50, 100, 200]))
    note = f"softmin_multistart(starts={starts}) returned the points below;"
    return _data_program("Heilbronn by SLSQP multistart with a soft-min objective.",
                         SOFTMIN_SOURCE, note, pts), pts


MODEL = TaskModel(
    task="heilbronn_triangle",
    entry=ENTRY,
    initial="invalid",
    families=(
        Family("invalid", 0.0, 0.0, weight=1.0, good=False, leave=0.06,
               p_improve=0.0, gamma=1.0, entry=(1.0, 1.0), valid=0.0,
               marker="", render=render_invalid),
        Family("hand", 0.05, 0.45, weight=0.5, good=False, leave=0.1,
               p_improve=0.3, gamma=2.0, entry=(2.0, 3.0), valid=0.8,
               marker="def circle_rings(", render=render_hand),
        Family("de_soft_penalty", 0.18, 0.30, weight=0.8, good=False, leave=0.01,
               p_improve=0.05, gamma=1.0, entry=(3.0, 2.0), valid=0.05,
               marker="def de_soft_penalty(", render=render_de),
        Family("slsqp_softmin", 0.30, 0.95, weight=0.3, good=True, leave=0.02,
               p_improve=0.35, gamma=1.5, entry=(1.5, 4.0), valid=0.85,
               marker="def softmin_multistart(", render=render_softmin),
    ),
)
