"""The fitness-compute envelope (Section 4.1, Fig. 2) and the FLOPs surface (Fig. 3).

Inputs are greedy depth-breadth sweep runs (see :func:`sweep_runs`).  Definitions:

* **cell** = one (model, task, C, T); its fitness is the mean over seeds, its FLOPs the
  mean effective FLOPs over seeds (:func:`cells`).
* **envelope row** per (model, task, C): ``v_max`` = best cell mean over the swept
  depths (compute-performance envelope convention, Hoffmann et al. 2022), ``t_star``
  its depth, ``v_t1`` = best-of-N (T = 1) cell mean, ``gap = v_max - v_t1``,
  ``flops`` = mean effective FLOPs over all runs at this C (the envelope's x-axis),
  ``flops_vmax``/``flops_t1`` = mean FLOPs of those two cells.
* **FLOPs-per-call fit** per (model, task): OLS of the cell's ``flops / C`` on ``T``
  (and separately on ``log2 T``), pooled over all budgets; ``rel_slope = slope /
  intercept`` is the fractional change of per-call cost per unit of T (per doubling of
  T for the ``log2`` fit); a small ``rel_slope`` is the paper's "FLOPs surface nearly
  flat in T at fixed C", and R^2 says how linear it is.
* **cross-model collapse** per task: pool the envelope points of all models (or the
  chosen ones), optionally only sub-ceiling points ``v_max < max_v``, and fit one
  line ``v_max = alpha + beta * log10(flops)`` by OLS; ``r2`` is that single line's
  coefficient of determination, ``1 - SS_res / SS_tot`` over the pooled points.  A high
  R^2 means the models' envelopes coincide when priced in FLOPs (Section 4.1:
  "R^2 = 0.94" on MMD).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

#: One envelope point: a (task, model, budget C); the key of every per-budget table.
BUDGET_KEYS: list[str] = ["task", "model", "budget"]
#: One cell of the depth-breadth sweep: a budget point at one depth T.
CELL_KEYS: list[str] = [*BUDGET_KEYS, "depth"]


def sweep_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """The greedy depth-breadth sweep: protocol ``greedy`` without a bandit allocator."""
    return runs[(runs["protocol"] == "greedy") & (runs["allocator"] == "single")]


def cells(runs: pd.DataFrame) -> pd.DataFrame:
    """Per (task, model, C, T): mean/SD fitness over seeds, mean FLOPs, N, n."""
    g = runs.groupby(CELL_KEYS, sort=True)
    out = g.agg(
        fitness=("fitness", "mean"),
        fitness_sd=("fitness", "std"),
        flops=("flops", "mean"),
        breadth=("breadth", "median"),
        n=("fitness", "size"),
    )
    out = out.reset_index()
    out["breadth"] = out["breadth"].round().astype("int64")
    out["flops_per_call"] = out["flops"] / out["budget"]
    return out


def envelope(cell_table: pd.DataFrame) -> pd.DataFrame:
    """One row per (task, model, C): v_max, t_star, v_t1, gap and FLOPs (module doc)."""
    rows = []
    for (task, model, budget), grp in cell_table.groupby(BUDGET_KEYS, sort=True):
        best = grp.loc[grp["fitness"].idxmax()]
        t1 = grp[grp["depth"] == 1]
        v_t1 = float(t1["fitness"].iloc[0]) if len(t1) else float("nan")
        total = grp["n"].sum()
        flops = (
            float((grp["flops"] * grp["n"]).sum() / total)
            if grp["flops"].notna().all()
            else float(grp["flops"].mean())
        )
        rows.append(
            {
                "task": task,
                "model": model,
                "budget": int(budget),
                "v_max": float(best["fitness"]),
                "t_star": int(best["depth"]),
                "v_t1": v_t1,
                "gap": float(best["fitness"]) - v_t1,
                "flops": flops,
                "flops_vmax": float(best["flops"]),
                "flops_t1": float(t1["flops"].iloc[0]) if len(t1) else float("nan"),
                "n_depths": len(grp),
            }
        )
    return pd.DataFrame(
        rows,
        columns=[
            *BUDGET_KEYS,
            "v_max",
            "t_star",
            "v_t1",
            "gap",
            "flops",
            "flops_vmax",
            "flops_t1",
            "n_depths",
        ],
    )


def _line(x: np.ndarray, y: np.ndarray) -> tuple[float, float, float]:
    """Intercept, slope and R^2 of the OLS line y ~ x (NaN when underdetermined)."""
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    if x.size < 3 or np.ptp(x) == 0:
        return float("nan"), float("nan"), float("nan")
    slope, intercept = np.polyfit(x, y, 1)
    ss_tot = float(((y - y.mean()) ** 2).sum())
    ss_res = float(((y - (intercept + slope * x)) ** 2).sum())
    r2 = 1.0 - ss_res / ss_tot if ss_tot > 0 else float("nan")
    return float(intercept), float(slope), r2


def flops_per_call_fit(cell_table: pd.DataFrame) -> pd.DataFrame:
    """Per (task, model): pooled OLS of ``flops / C`` on ``T`` and on ``log2 T`` (module doc).

    Section 4.2 reads the FLOPs surface as "approximately linear in T"; the ``log2 T``
    fit is reported next to it because the T grid is geometric.
    """
    rows = []
    for (task, model), grp in cell_table.groupby(["task", "model"], sort=True):
        t = grp["depth"].to_numpy(float)
        y = grp["flops_per_call"].to_numpy(float)
        icpt, slope, r2 = _line(t, y)
        icpt2, slope2, r2_2 = _line(np.log2(t), y)
        rows.append(
            {
                "task": task,
                "model": model,
                "intercept": icpt,
                "slope": slope,
                "rel_slope": slope / icpt if icpt else float("nan"),
                "r2": r2,
                "slope_log2t": slope2,
                "rel_slope_log2t": slope2 / icpt2 if icpt2 else float("nan"),
                "r2_log2t": r2_2,
                "n_cells": len(grp),
            }
        )
    return pd.DataFrame(
        rows,
        columns=[
            "task",
            "model",
            "intercept",
            "slope",
            "rel_slope",
            "r2",
            "slope_log2t",
            "rel_slope_log2t",
            "r2_log2t",
            "n_cells",
        ],
    )


def collapse(
    env: pd.DataFrame, models: Sequence[str] | None = None, max_v: float | None = None
) -> pd.DataFrame:
    """Per task: one pooled line ``v_max ~ log10(flops)`` across models, with R^2."""
    rows = []
    for task, grp in env.groupby("task", sort=True):
        if models is not None:
            grp = grp[grp["model"].isin(models)]
        if max_v is not None:
            grp = grp[grp["v_max"] < max_v]
        icpt, slope, r2 = _line(
            np.log10(grp["flops"].to_numpy(float)), grp["v_max"].to_numpy(float)
        )
        rows.append(
            {
                "task": task,
                "models": ",".join(sorted(grp["model"].unique())),
                "n_points": len(grp),
                "intercept": icpt,
                "slope": slope,
                "r2": r2,
            }
        )
    return pd.DataFrame(rows, columns=["task", "models", "n_points", "intercept", "slope", "r2"])


__all__ = [
    "BUDGET_KEYS",
    "CELL_KEYS",
    "cells",
    "collapse",
    "envelope",
    "flops_per_call_fit",
    "sweep_runs",
]
