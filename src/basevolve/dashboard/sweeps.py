"""Data of the sweep page: heat map, fitness-FLOPs envelope and reliability table.

Statistics come from :mod:`basevolve.analysis` (no second implementation): cells and the
envelope from :mod:`basevolve.analysis.envelope` (paper Section 4.1), mean / IQM /
bootstrap CI from :func:`basevolve.analysis.stats.describe` (rliable protocol).  Like
``basevolve analyze``, only *finished* runs are fixed-budget samples; the others are
counted and named, never averaged in.  The bootstrap is seeded per cell
(:func:`~basevolve.analysis.stats.cell_stats`), so a page shows the same numbers every
time it is drawn and the same interval ``analyze`` and the sweep's summary give a cell;
the reliability table uses each sweep's own thresholds and resamples as its runs stored
them (:mod:`basevolve.analysis.sweep_settings`; issue 24, items 4-5).

A sweep is whatever :func:`basevolve.dashboard.runs.sweep_sql` finds; the runs outside
any sweep form a group of their own, and ``all`` covers the whole store, so a store of
hand-started runs gets the same views.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from basevolve.analysis.envelope import cells, envelope, sweep_runs
from basevolve.analysis.stats import cell_stats
from basevolve.analysis.sweep_settings import KEY, parse_settings, union_thresholds
from basevolve.analysis.tables import method_name
from basevolve.dashboard.db import ReadOnlyStore
from basevolve.dashboard.runs import sweep_sql
from basevolve.errors import ConfigError

ALL, NONE = "all", "none"  # pseudo sweeps: the whole store / runs outside any sweep
DEFAULT_TAUS = (0.9, 0.95, 0.99)
BOOTSTRAP_REPS = 1000
BOOTSTRAP_SEED = 0


def parse_taus(text: str | None) -> tuple[float, ...] | None:
    """``?tau=`` as numbers; None when not given: each cell then shows the thresholds its
    sweep file set (stored with its runs), else :data:`DEFAULT_TAUS` (issue 24, item 5)."""
    if not text:
        return None
    try:
        taus = tuple(float(t) for t in text.split(",") if t.strip())
    except ValueError:
        raise ConfigError(f"tau must be comma-separated numbers, got {text[:50]!r}") from None
    if not taus or len(taus) > 8 or not all(math.isfinite(t) for t in taus):
        raise ConfigError("give 1 to 8 finite thresholds tau")
    return taus


def sweep_runs_frame(store: ReadOnlyStore, sweep: str) -> pd.DataFrame:
    """Runs of ``sweep`` with their fitness (best score incl. the initial program) and FLOPs."""
    expr = sweep_sql(store)
    where, args = {ALL: ("1", ()), NONE: (f"{expr} IS NULL", ())}.get(
        sweep, (f"{expr} = ?", (sweep,)))
    rows = store.query(f"""
        SELECT r.run_id, r.status, r.task, r.model, r.protocol, r.allocator, r.arms, r.budget,
               r.depth, r.breadth, r.seed,
               (SELECT max(score) FROM programs p WHERE p.run_id = r.run_id) AS fitness,
               (SELECT coalesce(sum(flops), 0) FROM calls c WHERE c.run_id = r.run_id) AS flops,
               (SELECT count(*) FROM calls c WHERE c.run_id = r.run_id AND c.counted = 1)
                   AS calls_done,
               CASE WHEN instr(r.config_json, '"{KEY}"') > 0
                    THEN json_extract(r.config_json, '$.{KEY}') END AS settings
        FROM runs r WHERE {where} ORDER BY r.created_at""", args)
    cols = ["run_id", "status", "task", "model", "protocol", "allocator", "arms", "budget",
            "depth", "breadth", "seed", "fitness", "flops", "calls_done", "settings"]
    return pd.DataFrame([tuple(r) for r in rows], columns=cols)


def _heatmaps(greedy: pd.DataFrame) -> list[dict[str, Any]]:
    """Per (task, model): mean fitness over seeds on the (C, T) grid."""
    out = []
    if greedy.empty:
        return out
    table = cells(greedy)
    for (task, model), g in table.groupby(["task", "model"], sort=True):
        budgets = sorted(int(b) for b in g["budget"].unique())
        depths = sorted(int(t) for t in g["depth"].unique())
        grid: list[list[Any]] = [[None] * len(budgets) for _ in depths]
        for r in g.itertuples():
            grid[depths.index(int(r.depth))][budgets.index(int(r.budget))] = {
                "mean": float(r.fitness), "n": int(r.n), "flops": float(r.flops)}
        out.append({"task": task, "model": model, "budgets": budgets, "depths": depths,
                    "cells": grid})
    return out


def _envelope(greedy: pd.DataFrame) -> list[dict[str, Any]]:
    """Per (task, model): v_max and FLOPs at each C, plus every cell as a point."""
    if greedy.empty:
        return []
    table = cells(greedy)
    env = envelope(table)
    out = []
    for (task, model), g in env.groupby(["task", "model"], sort=True):
        pts = table[(table["task"] == task) & (table["model"] == model)]
        out.append({
            "task": task, "model": model,
            "envelope": [{"budget": int(r.budget), "flops": float(r.flops),
                          "v_max": float(r.v_max), "t_star": int(r.t_star),
                          # best-of-N at T = 1 (issue 24, item 16: drawn as in the report)
                          "v_t1": float(r.v_t1) if np.isfinite(r.v_t1) else None}
                         for r in g.sort_values("flops").itertuples()],
            "cells": [{"budget": int(r.budget), "depth": int(r.depth), "flops": float(r.flops),
                       "fitness": float(r.fitness)} for r in pts.itertuples()]})
    return out


def _reliability(done: pd.DataFrame, taus: Sequence[float] | None
                 ) -> tuple[list[dict[str, Any]], list[float]]:
    """Per configuration: n, mean, IQM, 95% bootstrap CI of the mean and P(fitness >= tau).

    The CI is :func:`~basevolve.analysis.stats.cell_stats`, seeded per cell, so a cell
    shows the interval ``analyze`` and the sweep's summary give it (issue 24, item 4),
    with its sweep's resamples.  ``taus`` None: each cell's sweep thresholds (item 5);
    the returned list is their union, a cell's ``p_ge`` None where its sweep has no such
    threshold."""
    rows = []
    keys = ["task", "model", "budget", "protocol", "allocator", "arms", "depth"]
    for key, g in done.groupby(keys, sort=True):
        x = g["fitness"].to_numpy(float)
        settings = [parse_settings(t) for t in g["settings"] if t is not None]
        reps = {s["resamples"] for s in settings if s and s["resamples"]}
        stats = cell_stats(x, BOOTSTRAP_SEED, reps.pop() if len(reps) == 1 else BOOTSTRAP_REPS)
        own = tuple(taus) if taus is not None else (union_thresholds(settings) or DEFAULT_TAUS)
        cfg = dict(zip(keys, key, strict=True))
        rows.append({
            **{k: (int(v) if isinstance(v, np.integer) else v) for k, v in cfg.items()},
            "method": method_name(cfg["protocol"], cfg["allocator"], int(cfg["depth"]),
                                  int(cfg["arms"])),
            "n": stats["n"], "mean": stats["mean"], "iqm": stats["iqm"],
            "ci_low": stats["ci_low"], "ci_high": stats["ci_high"],
            "taus": list(own), "run_ids": g["run_id"].tolist()[:50]})
    shown = sorted({t for r in rows for t in r["taus"]}) if taus is None else list(taus)
    for r, (_, g) in zip(rows, done.groupby(keys, sort=True), strict=True):
        x = g["fitness"].to_numpy(float)
        r["p_ge"] = [float((x >= t).mean()) if t in r["taus"] else None for t in shown]
    return rows, shown


def sweep_page(store: ReadOnlyStore, sweep: str,
               taus: Sequence[float] | None = None) -> dict[str, Any]:
    """The sweep page's data; ``taus`` None: the sweep's own thresholds (see above)."""
    runs = sweep_runs_frame(store, sweep)
    if runs.empty:
        return {"sweep": sweep, "runs": 0, "finished": 0, "unfinished": {},
                "taus": list(DEFAULT_TAUS if taus is None else taus),
                "heatmaps": [], "envelopes": [], "reliability": []}
    finished = runs["status"].eq("finished") & runs["fitness"].notna()
    done = runs[finished].astype({"fitness": float, "flops": float})
    unfinished = runs.loc[~finished, "status"].value_counts().to_dict()
    greedy = sweep_runs(done)
    reliability, shown = _reliability(done, taus)
    return {"sweep": sweep, "runs": len(runs), "finished": int(finished.sum()),
            "unfinished": {str(k): int(v) for k, v in unfinished.items()},
            "taus": shown or list(DEFAULT_TAUS if taus is None else taus),
            "heatmaps": _heatmaps(greedy), "envelopes": _envelope(greedy),
            "reliability": reliability}
