"""The budget advisor: turn a depth-breadth sweep into a decision for one budget C.

``basevolve advise`` answers "I have C calls for this task and model: what depth T
(and breadth N = C / T)?" from the sweep cells already in a store, using the paper's
own analysis and nothing new:

1. **Fit** Eq. 2 (``log(1 - V) = beta0 + a log T + b log N + c log T log N``) on the
   sub-ceiling cells of the (task, model) sweep (:func:`~.bilinear.fit_bilinear`).
2. **Gate** -- refuse, plainly, when the surface cannot carry advice: fewer than
   ``min_cells`` sub-ceiling cells or a rank-deficient design (one budget only), fit
   R^2 < 0.7 (Appendix "Boundary of the Regime": below it the bilinear form does not
   describe the sweep), or nothing in the sweep says depth matters: neither a
   significant depth gain at the swept budget nearest C (capability gate p > 0.05,
   Table 4) nor a significant interaction c (Freedman-Lane permutation p > 0.05, Table
   8).  A refusal comes with a pilot: ``basevolve advise --pilot`` writes a small sweep
   config.

   The capability gate alone vetoes nothing (issue 23, item 6).  The paper reads it as
   deciding whether the *envelope collapse* holds (Appendix "The Capability Gate of the
   Collapse": capable models lie on one fitness-FLOPs curve, weaker ones below it), not
   whether the bilinear fit may be used: its clearest interior case, MMD / Qwen3-8B
   (c = -0.106, p(c) = 1.2e-11), has gate p = 0.64 because best-of-N is already near the
   ceiling there.  So the advice reports ``gate.envelope_collapse`` ("holds" /
   "not established") and says in ``notes`` what that means and what the depth advice
   rests on.
3. **Recommend** T*(C) on [1, C] (:func:`~.bilinear.optimal_depth`: interior optimum
   or a corner) with its plateau -- T in ``T* e^(+-sqrt(Delta/|c|))`` clipped to [1, C]
   (Appendix "Plateau Width", Eq. 7); at a corner the exact sub-level set -- and the
   divisor of C nearest T* in log T as the depth to run.  The expected fitness there
   is the fitted surface's value; its 95% CI (and one for T*) comes from a bootstrap
   over runs: each cell's seeds are resampled, the cell means refitted (OLS on the same
   cells), the prediction redone.  The empirical best cell at C is reported when C was
   swept, with whether it differs from the recommendation.
4. **Extrapolate** -- a C outside the swept budgets is answered from the same fit and
   labelled an extrapolation; the bootstrap CI is its uncertainty from run-to-run noise
   only (the bilinear form itself is assumed, which the sweep cannot check there).
5. **Allocator and K** -- when the store holds BaSE runs at C their measured means are
   listed, and when it holds logged greedy N = 1 runs (:mod:`.replay`) each allocator
   and K is replayed offline at C and the best mean final fitness recommended.

Everything here is pure on validated tables (:class:`~.tables.Tables`) plus optional
logged runs, so tests drive it with synthetic surfaces of known coefficients.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from basevolve.analysis.bilinear import fit_bilinear, optimal_depth
from basevolve.analysis.envelope import cells, sweep_runs
from basevolve.analysis.gate import capability_gate
from basevolve.analysis.replay import LoggedRuns, check_replayable, logged_lengths, replay
from basevolve.analysis.tables import Tables
from basevolve.errors import ConfigError


@dataclass(frozen=True)
class AdviceConfig:
    """Thresholds of the advisor; defaults are the paper's where it has one."""

    delta: float = 0.1  # plateau tolerance in log fitness gap (Appendix "Plateau Width")
    min_cells: int = 6  # sub-ceiling cells needed for a 4-coefficient fit with slack
    min_r2: float = 0.7  # Appendix "Boundary of the Regime"
    gate_alpha: float = 0.05  # capability gate (Table 4) and the interaction's test
    gate_shuffles: int = 2000
    c_shuffles: int = 10_000  # permutation test of c (Table 8)
    resamples: int = 1000
    ceiling: float = 0.97
    seed: int = 0
    arms: tuple[int, ...] = (2, 5, 10)
    replay_repeats: int = 20


def jsonable(value: Any) -> Any:
    """Nested dicts/lists with NaN/inf as None and numpy scalars as Python numbers."""
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def divisor_nearest(budget: int, t: float) -> int:
    """The divisor of C nearest ``t`` in log T (greedy needs C = T x N); ties -> larger T."""
    divs = [d for d in range(1, budget + 1) if budget % d == 0]
    return min(divs, key=lambda d: (abs(math.log(d) - math.log(t)), -d))


def predict(beta: np.ndarray, depth: float, budget: float) -> np.ndarray:
    """Fitted V at (T, N = C / T) for one or many coefficient vectors ``(..., 4)``."""
    lt, ln = math.log(depth), math.log(budget / depth)
    gap = beta[..., 0] + beta[..., 1] * lt + beta[..., 2] * ln + beta[..., 3] * lt * ln
    return 1.0 - np.exp(gap)


def _refusal(reason: str, message: str) -> dict[str, str]:
    return {"reason": reason, "message": message}


def _bootstrap(sweep: pd.DataFrame, keep: pd.DataFrame, cfg: AdviceConfig,
               rng: np.random.Generator) -> np.ndarray:
    """``(resamples, 4)`` Eq. 2 coefficients refitted on seed-resampled cell means."""
    means = []
    for (budget, depth), _ in keep.groupby(["budget", "depth"], sort=True):
        f = sweep[(sweep["budget"] == budget) & (sweep["depth"] == depth)]["fitness"].to_numpy(float)
        idx = rng.integers(0, f.size, size=(cfg.resamples, f.size))
        means.append(f[idx].mean(axis=1))
    v = np.clip(np.column_stack(means), None, 1.0 - 1e-9)  # (reps, cells)
    k = keep.sort_values(["budget", "depth"])
    lt, ln = np.log(k["depth"].to_numpy(float)), np.log(k["breadth"].to_numpy(float))
    x = np.column_stack([np.ones_like(lt), lt, ln, lt * ln])
    return (np.linalg.pinv(x) @ np.log1p(-v).T).T


def _gate(sweep: pd.DataFrame, budget: int, cfg: AdviceConfig) -> dict[str, Any]:
    budgets = np.array(sorted(sweep["budget"].unique()))
    near = int(budgets[np.argmin(np.abs(np.log(budgets) - math.log(budget)) - 1e-9 * budgets)])
    at = sweep[sweep["budget"] == near]
    g = capability_gate(at["fitness"].to_numpy(float), at["depth"].to_numpy(),
                        np.random.default_rng([cfg.seed, 1]), cfg.gate_shuffles)
    return {"budget": near, "v_t1": g.v_t1, "v_max": g.v_max, "t_star": g.t_star,
            "pen_bon": g.pen_bon, "p": g.p}


def _gate_reading(gate: dict[str, Any], fit: Any, c_sig: bool, alpha: float
                  ) -> tuple[list[str], dict[str, str] | None]:
    """What the capability gate says (module docstring, step 2): notes, and the
    refusal when neither the gate nor the interaction shows that depth matters."""
    passed = bool(gate["p"] <= alpha)
    gate["envelope_collapse"] = "holds" if passed else "not established"
    at = (f"capability gate at C={gate['budget']}: penBoN = {gate['pen_bon']:.4f}, "
          f"p = {gate['p']:.3f}")
    if passed:
        return [f"{at} <= {alpha}: depth beats best-of-N here, so by the paper the "
                "fitness-FLOPs envelope collapse holds for this model and task (it lies on "
                "the capable models' curve in effective FLOPs)"], None
    c_text = ("no interaction fitted" if fit is None or not math.isfinite(fit.c) else
              f"interaction c = {fit.c:.3f}, permutation p = {fit.p_c:.2g}")
    note = (f"{at} > {alpha}: the fitness-FLOPs envelope collapse is not established for "
            "this model and task (the paper's gate of the collapse: compare it with other "
            "models on its own sweep, not on a shared FLOPs curve)")
    if c_sig:
        return [note + f"; the depth advice rests on the bilinear fit, whose {c_text} is "
                "significant on its own"], None
    return [note], _refusal(
        "no_depth_gain", f"nothing in the sweep shows that depth matters at C="
                         f"{gate['budget']}: depth gain not significant (penBoN = "
                         f"{gate['pen_bon']:.4f}, capability-gate p = {gate['p']:.3f} > "
                         f"{alpha}) and the interaction not significant either ({c_text})")


def _empirical(sweep: pd.DataFrame, budget: int) -> dict[str, Any] | None:
    at = cells(sweep[sweep["budget"] == budget]) if (sweep["budget"] == budget).any() else None
    if at is None or at.empty:
        return None
    best = at.loc[at["fitness"].idxmax()]
    return {"budget": budget, "depth": int(best["depth"]), "breadth": int(best["breadth"]),
            "fitness": float(best["fitness"]), "runs": int(best["n"])}


def base_measured(runs: pd.DataFrame, budget: int) -> list[dict[str, Any]]:
    """Measured BaSE runs at C: mean final fitness per (protocol, allocator, K)."""
    base = runs[(runs["allocator"] != "single") & (runs["budget"] == budget)]
    out = []
    for (proto, alloc, k), g in base.groupby(["protocol", "allocator", "arms"], sort=True):
        out.append({"protocol": proto, "allocator": alloc, "arms": int(k),
                    "mean": float(g["fitness"].mean()), "runs": len(g)})
    return sorted(out, key=lambda r: -r["mean"])


def replay_advice(logged: LoggedRuns, budget: int, cfg: AdviceConfig,
                  allocators: list[str]) -> dict[str, Any]:
    """Offline replay (:mod:`.replay`) of each allocator and K at C; best mean final.

    Only the longest logs are used as arms: those with at least min(C, longest) steps
    (a sweep logs N = 1 runs at every budget; a C = 8 log cannot stand in for an arm
    of a C = 512 run, and mixing lengths would let the short ones cap the pool).
    """
    lengths = logged_lengths(logged.scores)
    if lengths.size == 0 or lengths.max() == 0:
        return {"repeats": cfg.replay_repeats, "logged_runs": 0, "best": None, "table": [],
                "skipped": ["no logged greedy N = 1 run with a step"]}
    keep = lengths >= min(budget, int(lengths.max()))
    scores, initial = logged.scores[keep], logged.initial[keep]
    rows, skipped = [], []
    for k in cfg.arms:
        try:
            check_replayable(scores, k, budget)
        except ConfigError as exc:
            skipped.append(f"K={k}: {exc}")
            continue
        for name in allocators:
            res = replay(scores, name, k, budget, cfg.replay_repeats, seed=cfg.seed,
                         initial=initial)
            rows.append({"allocator": name, "arms": k, "mean": float(res.finals.mean()),
                         "sd": float(res.finals.std(ddof=1)) if res.finals.size > 1 else 0.0})
    rows.sort(key=lambda r: (-r["mean"], r["arms"], r["allocator"]))
    return {"repeats": cfg.replay_repeats, "logged_runs": int(keep.sum()),
            "steps_per_run": int(lengths[keep].min()), "best": rows[0] if rows else None,
            "table": rows, "skipped": skipped}


def advise(tables: Tables, task: str, model: str, budget: int,
           config: AdviceConfig | None = None, logged: LoggedRuns | None = None,
           allocators: list[str] | None = None) -> dict[str, Any]:
    """The advice for (task, model, C) as a JSON-able dict (module docstring)."""
    cfg = config or AdviceConfig()
    if isinstance(budget, bool) or int(budget) != budget or budget < 1:
        raise ConfigError(f"--budget must be an integer >= 1, got {budget!r}")
    budget = int(budget)
    runs = tables.runs
    mine = runs[(runs["task"] == task) & (runs["model"] == model)]
    if mine.empty:
        pairs = sorted({f"{t}/{m}" for t, m in zip(runs["task"], runs["model"], strict=True)})
        raise ConfigError(f"no runs of task {task!r} with model {model!r} in the store; it holds "
                          f"{', '.join(pairs) or 'none'}; fix: --task/--model, or run a pilot "
                          "sweep (basevolve advise --pilot)")
    sweep = sweep_runs(mine)
    table = cells(sweep) if len(sweep) else pd.DataFrame(columns=["budget", "depth", "breadth",
                                                                  "fitness", "n"])
    budgets = sorted(int(b) for b in table["budget"].unique())
    out: dict[str, Any] = {"task": task, "model": model, "budget": budget,
                           "swept_budgets": budgets, "can_advise": False, "refusals": []}
    fit = fit_bilinear(table["depth"].to_numpy(), table["breadth"].to_numpy(),
                       table["fitness"].to_numpy(), np.random.default_rng([cfg.seed, 3]),
                       cfg.c_shuffles, cfg.ceiling) if len(table) else None
    if fit is None or not np.isfinite(fit.c) or fit.n_cells < cfg.min_cells:
        n = 0 if fit is None else fit.n_cells
        out["refusals"].append(_refusal(
            "too_few_cells",
            f"only {n} sub-ceiling sweep cells over {len(budgets)} budget(s); Eq. 2 needs >= "
            f"{cfg.min_cells} cells over >= 2 budgets (one budget cannot separate log T "
            "from log N)"))
    else:
        out["fit"] = {"beta0": fit.beta0, "a": fit.a, "b": fit.b, "c": fit.c, "r2": fit.r2,
                      "p_c": fit.p_c, "cells": fit.n_cells}
        if not fit.r2 >= cfg.min_r2:
            out["refusals"].append(_refusal(
                "low_r2", f"the bilinear fit explains too little of the sweep (R^2 = "
                          f"{fit.r2:.3f} < {cfg.min_r2}): the surface is flat or noisy"))
    out["notes"] = []
    if len(sweep):
        gate = _gate(sweep, budget, cfg)
        out["gate"] = gate
        c_sig = fit is not None and bool(fit.p_c <= cfg.gate_alpha)  # NaN: not significant
        notes, refusal = _gate_reading(gate, fit, c_sig, cfg.gate_alpha)
        out["notes"] += notes
        if refusal is not None:
            out["refusals"].append(refusal)
    out["empirical_best"] = _empirical(sweep, budget) if len(sweep) else None
    out["base_measured"] = base_measured(mine, budget)
    if logged is not None and allocators:
        out["replay"] = replay_advice(logged, budget, cfg, allocators)
    if out["refusals"]:
        return out
    assert fit is not None
    out["can_advise"] = True
    lo_b, hi_b = budgets[0], budgets[-1]
    out["extrapolation"] = not lo_b <= budget <= hi_b
    opt = optimal_depth(fit.a, fit.b, fit.c, budget, cfg.delta)
    depth = divisor_nearest(budget, opt.t_star)
    keep = table[table["fitness"] < min(cfg.ceiling, 1.0)]
    boot = _bootstrap(sweep, keep, cfg, np.random.default_rng([cfg.seed, 2]))
    v_boot = predict(boot, depth, budget)
    t_boot = np.array([optimal_depth(b[1], b[2], b[3], budget, cfg.delta).t_star
                       for b in boot if np.isfinite(b).all()])
    beta = np.array([fit.beta0, fit.a, fit.b, fit.c])
    out["depth"] = {
        "t_star": opt.t_star, "location": opt.location, "plateau": [opt.t_low, opt.t_high],
        "half_width_log": opt.half_width, "delta": cfg.delta,
        "t_star_ci": [float(np.quantile(t_boot, 0.025)), float(np.quantile(t_boot, 0.975))],
        "recommended_depth": depth, "recommended_breadth": budget // depth,
    }
    out["expected_fitness"] = {
        "value": float(predict(beta, depth, budget)),
        "ci_low": float(np.quantile(v_boot, 0.025)), "ci_high": float(np.quantile(v_boot, 0.975)),
        "resamples": cfg.resamples,
    }
    emp = out["empirical_best"]
    if emp is not None:
        emp["differs"] = emp["depth"] != depth
        emp["in_plateau"] = bool(opt.t_low <= emp["depth"] <= opt.t_high)
    return out


__all__ = ["AdviceConfig", "advise", "base_measured", "divisor_nearest", "jsonable", "predict",
           "replay_advice"]
