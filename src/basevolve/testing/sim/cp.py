"""Circle-packing families (paper, Appendix "Case Studies", "Circle Packing").

* ``ring_feasible`` -- the initial program's kind: rings of centres around the middle,
  radii as large as the walls and nearest neighbours allow (greedy, no optimiser).
* ``hex_rows`` -- "hand-coded ring constructors": 26 *equal* circles in rows such as
  6+5+6+5+4; the paper's ceiling for this family is ~0.89 (uniform radii waste the
  corners), and 6+5+6+5+4 gives exactly the 0.822 (sum 2.167) of its stuck run 6.
* ``slsqp`` -- ``scipy.optimize.minimize(method="SLSQP")`` on centres and radii from a
  row layout; reaches ~0.99-1.0 ("acquiring scipy is the gating event").

Degradation within a family (to hit the sampled fitness) is a safety factor on the radii
(``ring_feasible``, ``hex_rows``) or an early-stopped solve (``slsqp``: the bank's
optimum with radii scaled down), both of which keep every circle disjoint and inside.
An invalid output (the family's ``valid`` rate) enlarges radii past their limit.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from basevolve.tasks.circle_packing import BENCHMARK_SUM_RADII
from basevolve.testing.sim.bank import entries
from basevolve.testing.sim.builders import hex_rows, ring_layout, safe_radii
from basevolve.testing.sim.families import Family, TaskModel, literal, program, source

ENTRY = "construct_packing"
IMPORTS = "import math\n\nimport numpy as np"
_HEX_PATTERNS = ((6, 5, 6, 5, 4), (5, 6, 5, 6, 4), (5, 5, 6, 5, 5), (5, 5, 5, 5, 6),
                 (4, 5, 4, 5, 4, 4), (5, 4, 5, 4, 5, 3), (6, 6, 5, 5, 4))
_STRETCH = (1.0, 1.05, 1.1, 1.155, 1.2)


def _fit(radii: np.ndarray) -> float:
    return float(radii.sum()) / BENCHMARK_SUM_RADII


@lru_cache(maxsize=1)
def _ring_variants() -> tuple[tuple[tuple[int, float, float, float], float], ...]:
    out = []
    for n in (6, 7, 8, 9, 10):
        for ri in np.linspace(0.16, 0.34, 7):
            for ro in np.linspace(0.36, 0.5, 5):
                for ph in (0.0, float(np.pi / n)):
                    p = (n, round(float(ri), 4), round(float(ro), 4), round(ph, 6))
                    out.append((p, _fit(safe_radii(ring_layout(*p)))))
    return tuple(out)


@lru_cache(maxsize=1)
def _hex_variants() -> tuple[tuple[tuple[tuple[int, ...], float], float], ...]:
    return tuple(((rows, s), _fit(np.full(26, hex_rows(rows, s)[1])))
                 for rows in _HEX_PATTERNS for s in _STRETCH)


def _pick(rng: np.random.Generator, variants: tuple, fitness: float) -> tuple:
    ok = [v for v in variants if v[1] >= fitness]
    if not ok:
        return max(variants, key=lambda v: v[1])
    return ok[int(rng.integers(len(ok)))]


def _margin(fitness: float, base: float, valid: bool) -> float:
    return 1.1 if not valid else min(1.0, fitness / base)


def render_ring(rng: np.random.Generator, fitness: float, valid: bool) -> tuple[str, object]:
    params, base = _pick(rng, _ring_variants(), fitness)
    m = _margin(fitness, base, valid)
    centers = ring_layout(*params)
    radii = safe_radii(centers) * m
    n, ri, ro, ph = params
    body = (f"    # one circle in the middle, {n} on an inner ring, {25 - n} on an outer ring\n"
            f"    centers = ring_layout(n_inner={n!r}, r_inner={ri!r}, r_outer={ro!r}, phase={ph!r})\n"
            f"    radii = safe_radii(centers) * {m!r}\n"
            "    return centers, radii, float(np.sum(radii))\n")
    code = program("Rings of circles around the centre; radii limited by walls and neighbours.",
                   IMPORTS, source(ring_layout, safe_radii), ENTRY, body)
    return code, (centers, radii, float(np.sum(radii)))


def render_hex(rng: np.random.Generator, fitness: float, valid: bool) -> tuple[str, object]:
    (rows, s), base = _pick(rng, _hex_variants(), fitness)
    m = _margin(fitness, base, valid)
    centers, r = hex_rows(rows, s)
    radii = np.full(26, r * m)
    body = (f"    # {'+'.join(map(str, rows))} rows of equal circles, vertical stretch {s}\n"
            f"    centers, r = hex_rows(rows={rows!r}, stretch={s!r})\n"
            f"    radii = np.full(26, r * {m!r})\n"
            "    return centers, radii, float(np.sum(radii))\n")
    code = program("Equal circles in hexagonal rows, scaled to the unit square.",
                   IMPORTS, source(hex_rows), ENTRY, body)
    return code, (centers, radii, float(np.sum(radii)))


SLSQP_SOURCE = '''def slsqp_pack(centers, radii, maxiter=400):
    """Maximise sum(r) over centres and radii with SLSQP: disjoint and inside the square."""
    from scipy.optimize import minimize

    n = len(radii)
    ii, jj = np.triu_indices(n, 1)

    def constraints(x):
        c, r = x[: 2 * n].reshape(n, 2), x[2 * n :]
        d = np.sqrt(((c[ii] - c[jj]) ** 2).sum(axis=1))
        walls = np.concatenate([c[:, 0] - r, c[:, 1] - r, 1 - c[:, 0] - r, 1 - c[:, 1] - r])
        return np.concatenate([d - r[ii] - r[jj], walls])

    x0 = np.concatenate([np.ravel(centers), radii])
    res = minimize(lambda x: -np.sum(x[2 * n :]), x0, method="SLSQP",
                   constraints=[{"type": "ineq", "fun": constraints}],
                   bounds=[(0.0, 1.0)] * (2 * n) + [(0.0, 0.5)] * n,
                   options={"maxiter": maxiter, "ftol": 1e-9})
    return res.x[: 2 * n].reshape(n, 2), res.x[2 * n :]'''


def symmetry(rng: np.random.Generator, pts: np.ndarray) -> np.ndarray:
    """One of the 8 symmetries of the unit square applied to points in it."""
    p = pts.copy()
    if rng.random() < 0.5:
        p = p[:, ::-1]
    if rng.random() < 0.5:
        p[:, 0] = 1.0 - p[:, 0]
    if rng.random() < 0.5:
        p[:, 1] = 1.0 - p[:, 1]
    return p


def render_slsqp(rng: np.random.Generator, fitness: float, valid: bool) -> tuple[str, object]:
    bank = entries("circle_packing")
    e = bank[int(rng.integers(len(bank)))]
    order = rng.permutation(26)
    centers = symmetry(rng, np.asarray(e["centers"]))[order]
    radii = np.asarray(e["radii"])[order] * min(1.0, fitness / float(e["fitness"]))
    radii = radii * (1 - 1e-12)  # the symmetry's 1 - x may round by an ulp
    if not valid:
        k = int(np.argmax(radii))
        radii[k] += 0.05
    maxiter = int(rng.choice([50, 100, 200, 400]))
    start = str(rng.choice(["6+5+6+5+4 rows", "5x5 grid plus one", "ring"]))
    body = (f"    # slsqp_pack() from a {start} start (maxiter={maxiter}) converged to the\n"
            "    # configuration below; kept as data so that evaluating the program is fast.\n"
            f"    centers = np.array({literal(centers)})\n"
            f"    radii = np.array({literal(radii)})\n"
            "    return centers, radii, float(np.sum(radii))\n")
    code = program("Circle packing by SLSQP on centres and radii (scipy.optimize.minimize).",
                   IMPORTS, SLSQP_SOURCE, ENTRY, body)
    return code, (centers, radii, float(np.sum(radii)))


MODEL = TaskModel(
    task="circle_packing",
    entry=ENTRY,
    initial="ring_feasible",
    families=(
        Family("ring_feasible", 0.25, 0.75, weight=0.6, good=False, leave=0.15,
               p_improve=0.3, gamma=2.0, entry=(2.0, 3.0), valid=1.0,
               marker="def ring_layout(", render=render_ring),
        Family("hex_rows", 0.45, 0.89, weight=1.0, good=False, leave=0.05,
               p_improve=0.25, gamma=2.0, entry=(2.0, 2.0), valid=1.0,
               marker="def hex_rows(", render=render_hex),
        Family("slsqp", 0.80, 1.0, weight=0.35, good=True, leave=0.02,
               p_improve=0.5, gamma=1.0, entry=(1.5, 3.0), valid=0.9,
               marker="def slsqp_pack(", render=render_slsqp),
    ),
)
