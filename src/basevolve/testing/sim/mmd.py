"""MinMaxDist families (paper, Appendix "Case Studies", "MinMaxDist").

* ``jitter`` -- the initial program's kind: random points, here a 4x4 grid with Gaussian
  jitter (pure Gaussian points score ~0.02, the paper's initial 0.02).
* ``grid`` -- square and triangular lattices (the exact 4x4 grid scores 0.716, the
  paper's best-of-N value 0.7172 at T = 1; a 3+4+5+4 triangular patch 0.806).
* ``rings`` -- concentric regular polygons; 5 inner + 11 outer points with
  R = r (1 + 2 sin(pi/5)) is the analytic attractor at 0.9603 ("about fifteen lines of
  np.linspace and np.cos/np.sin").  Other splits and radius ratios score lower.
* ``scipy`` -- ``minimize`` / ``differential_evolution`` on -(d_min/d_max)^2 from a
  generic start: local optima "where one pair of points is much closer than the rest",
  stalling between 0.58 and 0.95.  On MMD this is the *bad* family that anchors a run.

Degradation: a larger jitter amplitude, a stretched lattice, a detuned ring ratio, or
(scipy) one point pulled towards its nearest neighbour -- the paper's "single tight
pair".  An invalid output makes two points coincide (d_min = 0).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from basevolve.tasks.min_max_distance import BENCHMARK_INV_RATIO_SQUARED, score_points
from basevolve.testing.sim.bank import entries
from basevolve.testing.sim.builders import jittered_grid, lattice_rows, polygon_rings
from basevolve.testing.sim.families import Family, TaskModel, bisect, literal, program, source

ENTRY = "min_max_dist_dim2_16"
IMPORTS = "import math\n\nimport numpy as np"
ATTRACTOR_RATIO = 1 + 2 * math.sin(math.pi / 5)
_RING_VARIANTS = ((5, 0.0), (4, 0.65), (6, 0.1), (3, 0.45))  # (inner count, outer phase)
_RING_BASE_RATIO = {5: ATTRACTOR_RATIO, 4: 2.7, 6: 1.98, 3: 2.6}
_LATTICES = ((4, 4, 4, 4), (3, 4, 5, 4), (4, 5, 4, 3))
_I, _J = np.triu_indices(16, 1)


def _f(points: np.ndarray) -> float:
    """Fitness as the real scorer computes it, without its input checks (fast, for bisection)."""
    diff = points[_I] - points[_J]
    d2 = (diff * diff).sum(axis=1)
    return float(d2.min() / d2.max() * BENCHMARK_INV_RATIO_SQUARED)


def _break(points: np.ndarray) -> np.ndarray:
    p = points.copy()
    p[1] = p[0]
    return p


@lru_cache(maxsize=1)
def _ring_bases() -> dict[int, float]:
    return {n: _f(polygon_rings(n, _RING_BASE_RATIO[n], ph)) for n, ph in _RING_VARIANTS}


@lru_cache(maxsize=1)
def attractor_fitness() -> float:
    """Fitness of the exact 5+11 construction under the real scorer (0.9603 in the paper)."""
    return score_points(polygon_rings(5, ATTRACTOR_RATIO, 0.0)).score


@lru_cache(maxsize=1)
def _lattice_bases() -> tuple[tuple[tuple[int, ...], float], ...]:
    return tuple((rows, _f(lattice_rows(rows, 1.0))) for rows in _LATTICES)


def render_jitter(rng: np.random.Generator, fitness: float, valid: bool) -> tuple[str, object]:
    seed = int(rng.integers(10_000))
    grid, noise = jittered_grid(seed, 0.0), np.random.default_rng(seed).normal(size=(16, 2))
    amp = bisect(lambda a: _f(grid + a * noise), fitness, 0.0, 20.0)
    pts = jittered_grid(seed, amp)
    tail = ""
    if not valid:
        pts, tail = _break(pts), "    points[1] = points[0]  # keep the corner fixed\n"
    body = (f"    points = jittered_grid(seed={seed!r}, amplitude={amp!r})\n{tail}"
            "    return points\n")
    code = program("Sixteen points: a 4x4 grid with random jitter.", IMPORTS,
                   source(jittered_grid), ENTRY, body)
    return code, pts


def render_grid(rng: np.random.Generator, fitness: float, valid: bool) -> tuple[str, object]:
    bases = _lattice_bases()
    ok = [r for r, b in bases if b >= fitness] or [max(bases, key=lambda x: x[1])[0]]
    rows = ok[int(rng.integers(len(ok)))]
    flat = lattice_rows(rows, 1.0)
    aspect = bisect(lambda a: _f(flat * np.array([1.0, a])), fitness, 1.0, 6.0)
    pts = lattice_rows(rows, aspect)
    tail = ""
    if not valid:
        pts, tail = _break(pts), "    points[1] = points[0]\n"
    body = (f"    points = lattice_rows(rows={rows!r}, aspect={aspect!r})\n{tail}"
            "    return points\n")
    code = program("Sixteen points on a lattice patch.", IMPORTS, source(lattice_rows),
                   ENTRY, body)
    return code, pts


def render_rings(rng: np.random.Generator, fitness: float, valid: bool) -> tuple[str, object]:
    bases = _ring_bases()
    if fitness >= attractor_fitness() - 1e-12:
        n, ph, ratio_src = 5, 0.0, "1 + 2 * math.sin(math.pi / 5)"
        ratio = ATTRACTOR_RATIO
    else:
        ok = [(n, ph) for n, ph in _RING_VARIANTS if bases[n] >= fitness] or [(5, 0.0)]
        n, ph = ok[int(rng.integers(len(ok)))]
        base = _RING_BASE_RATIO[n]
        unit = polygon_rings(n, 1.0, ph)
        inner = np.arange(16) < n

        def fit(x: float) -> float:
            return _f(np.where(inner[:, None], unit, unit * (base * (1 + x))))

        d = bisect(fit, fitness, 0.0, 1.5)
        ratio = base * (1 + d)
        ratio_src = repr(ratio)
    pts = polygon_rings(n, ratio, ph)
    tail = ""
    if not valid:
        pts, tail = _break(pts), "    points[1] = points[0]\n"
    body = (f"    # {n} points on an inner circle, {16 - n} on an outer one\n"
            f"    points = polygon_rings(n_inner={n!r}, ratio={ratio_src}, phase={ph!r})\n{tail}"
            "    return points\n")
    code = program("Concentric regular polygons.", IMPORTS, source(polygon_rings), ENTRY, body)
    return code, pts


SCIPY_SOURCE = '''def optimize_points(x0, method="SLSQP", seed=0):
    """Maximise (d_min/d_max)^2 with scipy from the start x0 (16 x 2)."""
    from scipy.optimize import differential_evolution, minimize

    def objective(x):
        p = x.reshape(16, 2)
        d = np.sqrt(((p[:, None, :] - p[None, :, :]) ** 2).sum(-1))
        off = d[~np.eye(16, dtype=bool)]
        return -(off.min() / off.max()) ** 2

    if method == "differential_evolution":
        res = differential_evolution(objective, [(-2.0, 2.0)] * 32, seed=seed,
                                     strategy="rand1bin", maxiter=300, x0=np.ravel(x0))
    else:
        res = minimize(objective, np.ravel(x0), method=method, options={"maxiter": 500})
    return res.x.reshape(16, 2)'''


def render_scipy(rng: np.random.Generator, fitness: float, valid: bool) -> tuple[str, object]:
    bank = entries("min_max_distance")
    base = np.asarray(bank[int(rng.integers(len(bank)))]["points"])
    th = rng.uniform(0, 2 * np.pi)
    rot = np.array([[np.cos(th), -np.sin(th)], [np.sin(th), np.cos(th)]])
    base = (base - base.mean(axis=0)) @ rot.T * rng.uniform(0.5, 2.0)
    base = base[rng.permutation(16)]
    d = np.sqrt(((base[:, None] - base[None]) ** 2).sum(-1))
    np.fill_diagonal(d, np.inf)
    k = int(rng.integers(16))
    j = int(np.argmin(d[k]))

    def pulled(t: float) -> np.ndarray:
        p = base.copy()
        p[k] = p[k] + t * (p[j] - p[k])
        return p

    pts = pulled(bisect(lambda t: _f(pulled(t)), fitness, 0.0, 0.99))
    if not valid:
        pts = _break(pts)
    method = str(rng.choice(["SLSQP", "differential_evolution", "Nelder-Mead"]))
    start = str(rng.choice(["a 4x4 grid", "a 16-gon", "concentric squares", "concentric circles"]))
    body = (f"    # optimize_points(method={method!r}) from {start} converged to the points\n"
            "    # below; kept as data so that evaluating the program is fast.\n"
            f"    points = np.array({literal(pts)})\n"
            "    return points\n")
    code = program("MinMaxDist by numerical optimisation (scipy).", IMPORTS, SCIPY_SOURCE,
                   ENTRY, body)
    return code, pts


MODEL = TaskModel(
    task="min_max_distance",
    entry=ENTRY,
    initial="jitter",
    families=(
        Family("jitter", 0.02, 0.55, weight=0.3, good=False, leave=0.3,
               p_improve=0.3, gamma=1.0, entry=(1.0, 2.0), valid=1.0,
               marker="def jittered_grid(", render=render_jitter),
        Family("grid", 0.40, 0.8055, weight=0.8, good=False, leave=0.1,
               p_improve=0.2, gamma=2.0, entry=(3.0, 2.0), valid=1.0,
               marker="def lattice_rows(", render=render_grid),
        Family("rings", 0.56, 0.9603, weight=0.5, good=True, leave=0.04,
               p_improve=0.3, gamma=1.0, entry=(2.0, 2.0), valid=1.0,
               marker="def polygon_rings(", render=render_rings, snap=0.15),
        Family("scipy", 0.58, 0.95, weight=1.0, good=False, leave=0.015,
               p_improve=0.05, gamma=1.0, entry=(1.5, 3.0), valid=1.0,
               marker="def optimize_points(", render=render_scipy),
    ),
)
