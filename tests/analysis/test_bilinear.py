"""Eq. 2 fit: agreement with statsmodels, recovery, permutation p for c, T*(C)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import statsmodels.api as sm
from scipy import stats as sps

from basevolve.analysis.bilinear import c_permutation_p, fit_bilinear, optimal_depth

BUDGETS = (8, 16, 32, 64, 128, 256, 512)


def grid(budgets=BUDGETS) -> tuple[np.ndarray, np.ndarray]:
    t, n = [], []
    for c in budgets:
        for k in range(int(math.log2(c)) + 1):
            t.append(2**k)
            n.append(c // 2**k)
    return np.array(t), np.array(n)


def surface(t, n, beta0, a, b, c, noise, rng):
    lt, ln = np.log(t), np.log(n)
    return 1 - np.exp(beta0 + a * lt + b * ln + c * lt * ln + rng.normal(0, noise, t.size))


def test_matches_statsmodels_to_1e9() -> None:
    rng = np.random.default_rng(0)
    t, n = grid()
    v = surface(t, n, -0.3, -0.4, -0.3, -0.05, 0.1, rng)
    fit = fit_bilinear(t, n, v, rng, shuffles=10)
    keep = v < 0.97
    lt, ln, y = np.log(t[keep]), np.log(n[keep]), np.log(1 - v[keep])
    x1 = np.column_stack([np.ones_like(lt), lt, ln, lt * ln])
    ref = sm.OLS(y, x1).fit()
    assert fit.n_cells == keep.sum()
    assert np.allclose([fit.beta0, fit.a, fit.b, fit.c], ref.params, atol=1e-9, rtol=0)
    assert fit.r2 == pytest.approx(ref.rsquared, abs=1e-9)
    # independent R^2 and coefficients from numpy
    beta, *_ = np.linalg.lstsq(x1, y, rcond=None)
    assert np.allclose(beta, ref.params, atol=1e-9)
    # nested models and F-tests against hand-built statsmodels fits
    m0 = sm.OLS(y, np.column_stack([np.ones_like(lt), lt + ln])).fit()
    m2 = sm.OLS(y, np.column_stack([x1, lt**2])).fit()
    m3 = sm.OLS(y, np.column_stack([x1, ln**2])).fit()
    m4 = sm.OLS(y, np.column_stack([x1, lt**2, ln**2])).fit()
    assert fit.m0_r2 == pytest.approx(m0.rsquared, abs=1e-9)
    assert fit.m2_r2 == pytest.approx(m2.rsquared, abs=1e-9)
    assert fit.m3_r2 == pytest.approx(m3.rsquared, abs=1e-9)
    assert fit.m4_r2 == pytest.approx(m4.rsquared, abs=1e-9)
    assert fit.p_f_m2 == pytest.approx(m2.compare_f_test(ref)[1], abs=1e-9)
    assert fit.p_f_m3 == pytest.approx(m3.compare_f_test(ref)[1], abs=1e-9)
    assert fit.p_f_m4 == pytest.approx(m4.compare_f_test(ref)[1], abs=1e-9)
    # the F-test by hand: ((RSS1 - RSS4) / 2) / (RSS4 / df4)
    f = ((ref.ssr - m4.ssr) / 2) / (m4.ssr / m4.df_resid)
    assert fit.p_f_m4 == pytest.approx(sps.f.sf(f, 2, m4.df_resid), abs=1e-9)
    assert fit.c_m4 == pytest.approx(m4.params[3], abs=1e-9)


@pytest.mark.parametrize(
    "truth", [(-0.5, -0.6, -0.5, -0.03), (-0.6, -0.2, -0.3, -0.1), (0.6, -0.36, -0.17, 0.01)]
)
def test_recovers_known_surface(truth) -> None:
    rng = np.random.default_rng(7)
    t, n = grid()
    v = surface(t, n, *truth, noise=0.02, rng=rng)
    fit = fit_bilinear(t, n, v, rng, shuffles=200, ceiling=0.999)
    assert [fit.beta0, fit.a, fit.b, fit.c] == pytest.approx(list(truth), abs=0.05)
    assert fit.r2 > 0.95


def test_ceiling_drops_cells_and_single_budget_is_nan() -> None:
    t, n = grid()
    v = np.where(t * n >= 256, 0.99, 0.5 + 0.01 * np.log(t))
    fit = fit_bilinear(t, n, v, np.random.default_rng(0), shuffles=10)
    assert fit.n_cells == int((t * n < 256).sum())
    one = fit_bilinear(
        *grid((512,)), np.linspace(0.1, 0.9, 10), np.random.default_rng(0), shuffles=10
    )
    assert one.n_cells == 10 and math.isnan(one.c)  # log N = log C - log T: rank deficient


def test_c_permutation_exact_matches_monte_carlo() -> None:
    rng = np.random.default_rng(3)
    t = np.array([1, 2, 4, 1, 2, 8, 4])
    n = np.array([4, 2, 1, 8, 4, 1, 4])
    y = rng.normal(size=7)
    exact = c_permutation_p(np.log(t), np.log(n), y, None, exact=True)
    mc = c_permutation_p(np.log(t), np.log(n), y, np.random.default_rng(4), shuffles=20_000)
    assert 0.0 < exact <= 1.0
    assert mc == pytest.approx(exact, abs=0.015)


def test_c_permutation_detects_a_real_interaction() -> None:
    rng = np.random.default_rng(5)
    t, n = grid()
    v = surface(t, n, -0.6, -0.2, -0.3, -0.1, 0.03, rng)
    assert fit_bilinear(t, n, v, rng, shuffles=2000, ceiling=0.999).p_c < 0.01


def test_c_permutation_null_is_uniform() -> None:
    rng = np.random.default_rng(11)
    t, n = grid((8, 16, 32, 64))
    ps = []
    for _ in range(100):
        v = surface(t, n, -0.5, -0.4, -0.3, 0.0, 0.1, rng)
        ps.append(fit_bilinear(t, n, v, rng, shuffles=200, ceiling=0.999).p_c)
    ps = np.array(ps)
    assert 0.02 <= np.mean(ps < 0.1) <= 0.22
    assert sps.kstest(ps, "uniform").pvalue > 0.01


def test_optimal_depth_by_hand() -> None:
    # log T* = (a - b)/(2c) + log(C)/2 = (0.1)/(-0.2) + 2 = 1.5 in [0, 4]: interior;
    # half-width sqrt(0.1/0.1) = 1, plateau e^(1.5 +- 1) inside [1, e^4]
    opt = optimal_depth(-0.2, -0.3, -0.1, math.exp(4), delta=0.1)
    assert opt.log_t_star == pytest.approx(1.5)
    assert opt.t_star == pytest.approx(math.exp(1.5))
    assert opt.half_width == pytest.approx(1.0)
    assert opt.interior and opt.location == "interior"
    assert (opt.t_low, opt.t_high) == (pytest.approx(math.exp(0.5)), pytest.approx(math.exp(2.5)))
    # c > 0: the vertex is the *worst* T; a = -0.2 > b = -0.3 so T = 1 has the smaller gap
    pos = optimal_depth(-0.2, -0.3, 0.05, 64)
    assert not pos.interior and pos.location == "T=1" and pos.t_star == 1.0


def test_optimal_depth_paper_ht_8b_is_the_t_equals_c_corner() -> None:
    """Paper Table 2, HT / 8B: a = -0.363, b = -0.168, c = -0.012 at C = 512.

    Vertex: (a - b)/(2c) + ln(512)/2 = (-0.195)/(-0.024) + 3.1192 = 8.125 + 3.1192
    = 11.244, i.e. T ~ 7.6e4 > C: outside the slice, so the optimum is the T = C corner
    (a < b: the gap falls by (a - b) ln C = -1.216 from T = 1 to T = C).  The old code
    reported T* ~ 7.6e4 as "interior"."""
    opt = optimal_depth(-0.363, -0.168, -0.012, 512, delta=0.1)
    assert opt.vertex_log_t == pytest.approx(8.125 + math.log(512) / 2)
    assert math.exp(opt.vertex_log_t) == pytest.approx(7.65e4, rel=0.01)
    assert not opt.interior and opt.location == "T=C"
    assert opt.t_star == 512 and opt.log_t_star == pytest.approx(math.log(512))
    assert opt.half_width == pytest.approx(math.sqrt(0.1 / 0.012))
    # plateau at the corner: g(x) = (a - b + c lnC) x - c x^2 with slope -0.2699; the
    # gap is within 0.1 of g(lnC) = -1.2165 down to x = 5.466, T = 236 (solve 0.012 x^2
    # - 0.26986 x + 1.11647 = 0 by hand: x = (0.26986 - sqrt(0.072824 - 0.053591)) / 0.024)
    slope, q = -0.363 + 0.168 - 0.012 * math.log(512), 0.012  # g(x) = slope x + q x^2
    target = slope * math.log(512) + q * math.log(512) ** 2 + 0.1
    root = (-slope - math.sqrt(slope**2 + 4 * q * target)) / (2 * q)
    assert opt.t_low == pytest.approx(math.exp(root))
    assert 235 < opt.t_low < 238 and opt.t_high == 512


@pytest.mark.parametrize(
    "a, b, c, budget, where",
    [
        (-0.363, -0.168, -0.012, 512, "T=C"),  # HT 8B: vertex beyond ln C
        (-0.1, -0.4, -0.01, 512, "T=1"),  # vertex < 0: (0.3)/(-0.02) + 3.12 = -11.9
        (-0.208, -0.290, -0.106, 512, "interior"),  # MMD 8B: 0.387 + 3.12 = 3.51 in [0, 6.24]
        (-0.2, -0.3, 0.0, 64, "T=1"),  # c = 0: linear along the slice, a > b
        (-0.4, -0.2, 0.0, 64, "T=C"),  # c = 0, a < b
        (-0.2, -0.4, 0.02, 64, "T=1"),  # c > 0: the vertex is a maximum of the gap
        (-0.4, -0.2, 0.02, 64, "T=C"),
    ],
)
def test_optimal_depth_is_the_best_t_on_the_slice(a, b, c, budget, where) -> None:
    """Brute force on a fine grid of log T in [0, ln C]: the reported T* minimises the
    fitted gap g(x) = (a - b + c ln C) x - c x^2 and lies in [1, C]."""
    opt = optimal_depth(a, b, c, budget)
    log_c = math.log(budget)
    x = np.linspace(0.0, log_c, 200_001)
    g = (a - b + c * log_c) * x - c * x**2
    assert opt.location == where
    assert 1.0 <= opt.t_star <= budget
    assert opt.log_t_star == pytest.approx(x[np.argmin(g)], abs=1e-4)
    inside = g <= g.min() + 0.1
    assert opt.t_low == pytest.approx(math.exp(x[inside].min()), rel=1e-3)
    assert opt.t_high == pytest.approx(math.exp(x[inside].max()), rel=1e-3)


def test_optimal_depth_nan_coefficients() -> None:
    opt = optimal_depth(float("nan"), -0.2, -0.1, 64)
    assert math.isnan(opt.t_star) and not opt.interior and opt.location == ""


@pytest.mark.parametrize("level", [0.0, 0.5, 0.9])
def test_constant_fitness_has_no_spurious_fit_statistics(level: float) -> None:
    """Regression: with every cell at the same fitness, log(1 - V) is constant, so R^2
    and the F-tests are 0/0; statsmodels warned on stderr and float noise in the fitted
    coefficients came out as p-values (p_f_m2 ~ 0.2) that meant nothing."""
    import warnings

    t, n = grid((8, 16, 32))
    v = np.full(t.size, level)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fit = fit_bilinear(t, n, v, np.random.default_rng(0), shuffles=50)
    assert fit.n_cells == t.size
    assert fit.beta0 == pytest.approx(math.log1p(-level))
    assert (fit.a, fit.b, fit.c) == (0.0, 0.0, 0.0)
    undefined = (fit.r2, fit.p_c, fit.m0_r2, fit.m2_r2, fit.m3_r2, fit.m4_r2)
    undefined += (fit.p_f_m0, fit.p_f_m2, fit.p_f_m3, fit.p_f_m4)
    assert all(math.isnan(x) for x in undefined), fit


def test_fitness_set_by_the_budget_alone_gives_no_plateau_width() -> None:
    """Issue 37, item 8: fitness that depends on C only is fitted exactly by a plane
    (R^2 = 1) and c is float round-off (~1e-17); Eq. 7 turned that into a plateau
    half-width of ~7e+07 log-T units.  The data support no curvature: c = 0 and the
    width is NaN, as docs/analysis.md promises; the plateau still spans [1, C]."""
    depth, breadth = [], []
    for budget in (4, 8, 16):
        t = 1
        while t <= budget:
            depth.append(t)
            breadth.append(budget // t)
            t *= 2
    depth_a, breadth_a = np.array(depth), np.array(breadth)
    v = 1.0 - np.exp(-0.3 - 0.01 * np.log(depth_a * breadth_a))
    fit = fit_bilinear(depth_a, breadth_a, v, np.random.default_rng(0), shuffles=20)
    assert fit.r2 == pytest.approx(1.0)
    assert fit.c == 0.0
    opt = optimal_depth(fit.a, fit.b, fit.c, 16)
    assert math.isnan(opt.half_width)
    assert (opt.t_low, opt.t_high) == (1.0, 16.0)
