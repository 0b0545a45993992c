"""The bilinear depth-breadth fit (Section 4.2, Eq. 2) and its nested models.

Eq. 2: ``log(1 - V) = beta0 + a log T + b log N + c log T log N`` (natural logs),
fitted by OLS on the **sub-ceiling cells** of a (model, task) sweep.

*Cell* -- one (C, T) configuration; ``V`` is its mean fitness over seeds (the
surface of Fig. 3).  Cells with ``V >= ceiling`` (0.97 by default) are dropped
because ``log(1 - V)`` blows up near the ceiling (and is undefined past 1.0).

Nested specifications (Appendix "Robustness to Richer Specifications", Table 5),
each fitted with ``statsmodels`` OLS on the same cells:

* M0 budget-only (``c = 0``, ``a = b``): ``beta0 + a' log C`` (``log C = log T + log N``)
* M1 bilinear (Eq. 2)
* M2 = M1 + ``log^2 T``; M3 = M1 + ``log^2 N``; M4 = M1 + both

``p_f_m2/m3/m4`` are ``statsmodels`` ``compare_f_test`` p-values of the richer model
against M1 (``p_f_m0``: M1 against M0).

Permutation p-value for ``c`` (Table 8, 10,000 shuffles): Freedman & Lane (1983).
The reduced model (M1 without the interaction) is fitted; its residuals are permuted
and added back to its fitted values, and M1 is refitted.  Because the reduced fitted
values lie in M1's column space with zero interaction, the refitted ``c`` is simply
``w . perm(residuals)`` with ``w`` the interaction row of ``pinv(X_M1)``, so all
shuffles are one matrix product.  ``p`` = fraction of shuffles with ``|c*| >= |c|``
(two-sided).  Permuting the residuals of the reduced model, not the raw response,
keeps the strong budget effect out of the null so the test is calibrated for ``c``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, replace

import numpy as np
import statsmodels.api as sm

from basevolve.analysis.permutation import p_value_ge, permutation_stats

Design = Callable[[np.ndarray, np.ndarray], np.ndarray]

#: Permutation shuffles for the interaction ``c`` (Table 8: 10,000).
PERMUTATION_SHUFFLES = 10_000


def _m1(lt: np.ndarray, ln: np.ndarray) -> np.ndarray:
    return np.column_stack([np.ones_like(lt), lt, ln, lt * ln])


#: Registry of the nested specifications: name -> design-matrix builder.
SPECIFICATIONS: dict[str, Design] = {
    "M0": lambda lt, ln: np.column_stack([np.ones_like(lt), lt + ln]),
    "M1": _m1,
    "M2": lambda lt, ln: np.column_stack([_m1(lt, ln), lt**2]),
    "M3": lambda lt, ln: np.column_stack([_m1(lt, ln), ln**2]),
    "M4": lambda lt, ln: np.column_stack([_m1(lt, ln), lt**2, ln**2]),
}


@dataclass(frozen=True)
class BilinearFit:
    """Eq. 2 coefficients, R^2, the permutation p for ``c`` and Table 5 columns."""

    n_cells: int
    beta0: float
    a: float
    b: float
    c: float
    r2: float
    p_c: float
    m0_r2: float
    m2_r2: float
    m3_r2: float
    m4_r2: float
    p_f_m0: float
    p_f_m2: float
    p_f_m3: float
    p_f_m4: float
    c_m2: float
    c_m3: float
    c_m4: float

    def as_dict(self) -> dict[str, float]:
        return asdict(self)


def _nan_fit(n: int) -> BilinearFit:
    nan = float("nan")
    return BilinearFit(n, *([nan] * 17))


def _flat_fit(n: int, beta0: float) -> BilinearFit:
    """Constant ``log(1 - V)``: the fit is exactly ``beta0`` with a = b = c = 0.

    Why separate: R^2, the F-tests and the permutation p-value are all 0/0 here, and
    running OLS anyway turned float noise into p-values that looked meaningful (and made
    statsmodels warn on stderr); they are reported as NaN (null in JSON) instead.
    """
    return replace(_nan_fit(n), beta0=beta0, a=0.0, b=0.0, c=0.0, c_m2=0.0, c_m3=0.0, c_m4=0.0)


def sub_ceiling_cells(
    depth: np.ndarray, breadth: np.ndarray, v: np.ndarray, ceiling: float = 0.97
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(log T, log N, log(1 - V))`` of the cells with ``V < ceiling``."""
    t, n, val = (np.asarray(x, dtype=float) for x in (depth, breadth, v))
    if not (t.shape == n.shape == val.shape) or t.ndim != 1:
        raise ValueError(
            f"depth, breadth and v must be equal-length 1-D arrays, got {t.shape}, {n.shape}, {val.shape}"
        )
    if (t < 1).any() or (n < 1).any():
        raise ValueError("depth and breadth must be >= 1")
    keep = np.isfinite(val) & (val < min(ceiling, 1.0))
    return np.log(t[keep]), np.log(n[keep]), np.log1p(-val[keep])


def fit_ols(y: np.ndarray, x: np.ndarray):  # -> statsmodels RegressionResults
    """OLS through statsmodels (the reference implementation the tests compare to)."""
    return sm.OLS(y, x).fit()


def _full_rank(x: np.ndarray) -> bool:
    return x.shape[0] > x.shape[1] and np.linalg.matrix_rank(x) == x.shape[1]


def c_permutation_p(
    lt: np.ndarray,
    ln: np.ndarray,
    y: np.ndarray,
    rng: np.random.Generator | None,
    shuffles: int = PERMUTATION_SHUFFLES,
    *,
    exact: bool = False,
) -> float:
    """Freedman-Lane permutation p-value for the interaction ``c`` (module docstring)."""
    x1 = _m1(lt, ln)
    reduced = x1[:, :3]
    beta_r, *_ = np.linalg.lstsq(reduced, y, rcond=None)
    resid = y - reduced @ beta_r
    w = np.linalg.pinv(x1)[3]
    observed = abs(float(w @ resid))
    null = permutation_stats(resid, lambda rows: np.abs(rows @ w), rng, shuffles, exact=exact)
    return p_value_ge(null, observed)


def _snap(c: float, lt: np.ndarray, ln: np.ndarray, y: np.ndarray) -> float:
    """``c`` as 0 when its whole effect on the fitted ``log(1 - V)`` is float round-off.

    Why (issue 37, item 8): a grid whose fitness depends on C alone (or on nothing that
    varies with the split) is fitted *exactly* by a plane, R^2 = 1, and c comes out as
    ~1e-17 -- noise that Eq. 7 turned into a plateau half-width of 7e+07 log-T units.
    Such a c is no curvature the data support; it is reported as 0, and its plateau
    width as NaN (:func:`optimal_depth`).
    """
    effect = abs(c) * float(np.abs(lt * ln).max(initial=0.0))
    return 0.0 if effect <= 1e-9 * max(1.0, float(np.abs(y).max(initial=0.0))) else c


def fit_bilinear(
    depth: np.ndarray,
    breadth: np.ndarray,
    v: np.ndarray,
    rng: np.random.Generator | None,
    shuffles: int = PERMUTATION_SHUFFLES,
    ceiling: float = 0.97,
    *,
    exact: bool = False,
) -> BilinearFit:
    """Fit Eq. 2 and the nested models on one (model, task) sweep.

    Inputs are per-cell arrays of shape ``(n_cells,)``: depth T, breadth N and the
    cell's mean fitness V.  Returns NaN coefficients when fewer than 5 sub-ceiling
    cells remain or the design is rank-deficient (e.g. a single budget, where
    ``log N = log C - log T``); richer models get NaN when they cannot be fitted.
    """
    lt, ln, y = sub_ceiling_cells(depth, breadth, v, ceiling)
    n = y.size
    if not _full_rank(_m1(lt, ln)):
        return _nan_fit(n)
    if np.ptp(y) <= 1e-12 * max(1.0, float(np.abs(y).max())):
        return _flat_fit(n, float(y.mean()))
    fits = {}
    for name, build in SPECIFICATIONS.items():
        x = build(lt, ln)
        fits[name] = fit_ols(y, x) if _full_rank(x) else None
    m1 = fits["M1"]  # Eq. 2 itself: the registry's M1 is the design checked above
    assert m1 is not None
    beta0, a, b, c = (float(t) for t in m1.params)
    c = _snap(c, lt, ln, y)

    def r2(name: str) -> float:
        f = fits[name]
        return float(f.rsquared) if f is not None else float("nan")

    def pf(big: str, small: str) -> float:
        fb, fs = fits[big], fits[small]
        if fb is None or fs is None or fb.df_resid < 1:
            return float("nan")
        return float(fb.compare_f_test(fs)[1])

    def coef_c(name: str) -> float:
        f = fits[name]
        return _snap(float(f.params[3]), lt, ln, y) if f is not None else float("nan")

    p_c = (
        c_permutation_p(lt, ln, y, rng, shuffles, exact=exact)
        if shuffles > 0 or exact
        else float("nan")
    )
    return BilinearFit(
        n_cells=n,
        beta0=beta0,
        a=a,
        b=b,
        c=c,
        r2=float(m1.rsquared),
        p_c=p_c,
        m0_r2=r2("M0"),
        m2_r2=r2("M2"),
        m3_r2=r2("M3"),
        m4_r2=r2("M4"),
        p_f_m0=pf("M1", "M0"),
        p_f_m2=pf("M2", "M1"),
        p_f_m3=pf("M3", "M1"),
        p_f_m4=pf("M4", "M1"),
        c_m2=coef_c("M2"),
        c_m3=coef_c("M3"),
        c_m4=coef_c("M4"),
    )


#: where the fitted optimum lies on the budget slice (:class:`OptimalDepth` ``location``)
INTERIOR, CORNER_T1, CORNER_TC = "interior", "T=1", "T=C"


@dataclass(frozen=True)
class OptimalDepth:
    """Appendix "Plateau Width": the fitted optimum along the budget slice ``C = T N``.

    On the slice, ``g(x) = log(1 - V) - (beta0 + b log C) = (a - b + c log C) x - c x^2``
    with ``x = log T`` in ``[0, log C]`` (T = 1 .. C).  Its vertex
    ``vertex_log_t = (a - b)/(2c) + log(C)/2`` is a fitness *maximum* (minimum of the
    gap) only when ``c < 0``, and it is the answer only when it lies inside
    ``[0, log C]``: then ``location = "interior"``.  Otherwise the best T on the slice is
    a corner (``"T=1"`` or ``"T=C"``), and since ``g(log C) - g(0) = (a - b) log C`` the
    corner is T = C when ``a < b`` and T = 1 when ``a > b`` (a tie, ``a == b``, reports
    T = C, the all-depth corner of the paper's ``c ~ 0`` limit).  ``t_star`` is always in
    ``[1, C]``; the unclipped vertex stays available as ``vertex_log_t`` (NaN when c = 0).

    ``half_width = sqrt(delta / |c|)`` (Eq. 7) in natural-log units of T; NaN when
    c = 0 (no curvature: the data support no width, issue 37).  ``t_low`` /
    ``t_high`` bound the plateau exactly: the connected set of T in [1, C] around
    ``t_star`` whose gap is within ``delta`` of the optimum's (for an interior optimum this
    is ``t_star * exp(+-half_width)`` clipped to [1, C]; at a corner it is the
    quadratic's own sub-level set, which Eq. 7 does not cover).
    """

    t_star: float
    log_t_star: float
    interior: bool
    half_width: float
    location: str = INTERIOR
    vertex_log_t: float = float("nan")
    t_low: float = float("nan")
    t_high: float = float("nan")


def _nan_depth() -> OptimalDepth:
    nan = float("nan")
    return OptimalDepth(nan, nan, False, nan, "", nan, nan, nan)


def plateau_log_interval(
    slope: float, c: float, log_c: float, x_star: float, delta: float
) -> tuple[float, float]:
    """The connected set of ``x`` in ``[0, log_c]`` around ``x_star`` where
    ``g(x) <= g(x_star) + delta`` for ``g(x) = slope x - c x^2`` (see :class:`OptimalDepth`).

    ``g - g(x_star) - delta`` changes sign only at its (at most two) roots and is
    ``-delta < 0`` at ``x_star``, so the answer is bounded by the nearest root on each
    side (or the ends of the slice).
    """
    target = slope * x_star - c * x_star**2 + delta
    # -c x^2 + slope x - target = 0
    if c == 0:
        roots = [target / slope] if slope != 0 else []
    else:
        disc = slope**2 - 4.0 * c * target
        if disc < 0:
            roots = []
        else:
            sq = float(np.sqrt(disc))
            roots = [(slope - sq) / (2.0 * c), (slope + sq) / (2.0 * c)]
    lo = max([r for r in roots if r < x_star] + [0.0])
    hi = min([r for r in roots if r > x_star] + [log_c])
    return max(lo, 0.0), min(hi, log_c)


def optimal_depth(a: float, b: float, c: float, budget: float, delta: float = 0.1) -> OptimalDepth:
    """Fitted T*(C) on ``[1, C]`` and its plateau (Appendix "Plateau Width", Eq. 7).

    Interior only if ``c < 0`` and ``0 <= (a - b)/(2c) + log(C)/2 <= log C``; otherwise
    the corner with the smaller fitted gap (see :class:`OptimalDepth`).
    """
    if budget < 1 or delta <= 0:
        raise ValueError(f"budget must be >= 1 and delta > 0, got {budget}, {delta}")
    if not all(np.isfinite(v) for v in (a, b, c)):
        return _nan_depth()
    log_c = float(np.log(budget))
    vertex = (a - b) / (2 * c) + 0.5 * log_c if c != 0 else float("nan")
    if c < 0 and 0.0 <= vertex <= log_c:
        location, x_star = INTERIOR, float(vertex)
    elif a < b or a == b:
        location, x_star = CORNER_TC, log_c
    else:
        location, x_star = CORNER_T1, 0.0
    lo, hi = plateau_log_interval(a - b + c * log_c, c, log_c, x_star, delta)

    def t_of(x: float) -> float:  # the slice's ends exactly (no exp(log C) round-off)
        return 1.0 if x == 0.0 else float(budget) if x == log_c else float(np.exp(x))

    return OptimalDepth(
        t_star=t_of(x_star),
        log_t_star=x_star,
        interior=location == INTERIOR,
        # c = 0: no curvature, so Eq. 7 gives no width (NaN, not a number from noise;
        # t_low / t_high still bound the plateau on [1, C])
        half_width=float(np.sqrt(delta / abs(c))) if c != 0 else float("nan"),
        location=location,
        vertex_log_t=float(vertex),
        t_low=t_of(lo),
        t_high=t_of(hi),
    )


__all__ = [
    "CORNER_T1",
    "CORNER_TC",
    "INTERIOR",
    "PERMUTATION_SHUFFLES",
    "SPECIFICATIONS",
    "BilinearFit",
    "OptimalDepth",
    "c_permutation_p",
    "fit_bilinear",
    "fit_ols",
    "optimal_depth",
    "plateau_log_interval",
    "sub_ceiling_cells",
]
