"""Per-configuration summaries and the paper's grouped layouts (Tables 1, 6, 7).

* :func:`summary` -- one row per (task, model, budget, method): mean with bootstrap SE
  and 95% percentile CI, median, IQM (``stats.describe``).
* :func:`methods_at_budget` -- Table 1: rows (model, task), one column per method at a
  fixed C (default: the largest budget present).
* :func:`allocator_by_protocol` -- Table 6: rows (model, task, allocator) with
  ``baseline`` for runs without a bandit, columns = the protocol variant
  (``greedy N=4``, ``openevolve`` ...).
* :func:`arms_table` -- Table 7: BaSE runs, rows (model, task, allocator), columns K.

Layout functions return long DataFrames with ``row``/``column`` keys plus ``mean``,
``se``, ``n`` and a ``best`` flag (largest mean within the row block, the bold entry
in the paper); :mod:`basevolve.report.tables` renders them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from basevolve.analysis.stats import cell_stats

SUMMARY_KEYS: list[str] = ["task", "model", "budget", "method"]
SUMMARY_COLUMNS: list[str] = [
    *SUMMARY_KEYS,
    "protocol",
    "allocator",
    "arms",
    "depth",
    "breadth",
    "mean",
    "se",
    "ci_low",
    "ci_high",
    "median",
    "iqm",
    "iqm_se",
    "n",
]


def summary(runs: pd.DataFrame, seed: int = 0, reps: int = 1000) -> pd.DataFrame:
    """Summary rows (module doc); one bootstrap per configuration, seeded by ``seed`` and
    the configuration's own scores (:func:`~basevolve.analysis.stats.cell_stats`: the
    sweep summary and the dashboard give the same cell the same interval)."""
    rows = []
    for key, grp in runs.groupby(SUMMARY_KEYS, sort=True):
        first = grp.iloc[0]
        stats = cell_stats(grp["fitness"].to_numpy(float), seed, reps)
        rows.append(
            {
                **dict(zip(SUMMARY_KEYS, key, strict=True)),
                "protocol": first["protocol"],
                "allocator": first["allocator"],
                "arms": int(first["arms"]),
                "depth": int(first["depth"]),
                "breadth": int(first["breadth"]),
                **stats,
            }
        )
    out = pd.DataFrame(rows, columns=SUMMARY_COLUMNS)
    order = ["task", "model", "budget", "protocol", "allocator", "arms", "depth", "breadth"]
    return out.sort_values(order, kind="stable").reset_index(drop=True)


def _mark_best(df: pd.DataFrame, block: list[str]) -> pd.DataFrame:
    """Bold = the largest mean of its block, only where the block compares >= 2 entries."""
    df = df.copy()
    grouped = df.groupby(block)["mean"]
    df["best"] = (df["mean"] == grouped.transform("max")) & (grouped.transform("size") >= 2)
    return df


def methods_at_budget(summ: pd.DataFrame, budget: int | None = None) -> pd.DataFrame:
    """Table 1 layout: (model, task) x method at one budget."""
    if summ.empty:
        return summ.assign(row=[], column=[], best=[])
    c = int(summ["budget"].max()) if budget is None else int(budget)
    sel = summ[summ["budget"] == c].copy()
    sel["row"] = sel["model"] + " / " + sel["task"]
    sel["column"] = sel["method"]
    return _mark_best(sel, ["model", "task"])


def protocol_label(protocol: str, breadth: int) -> str:
    """Table 6 column: greedy variants are told apart by their breadth N."""
    return f"greedy N={int(breadth)}" if protocol == "greedy" else str(protocol)


def allocator_by_protocol(summ: pd.DataFrame, budget: int | None = None) -> pd.DataFrame:
    """Table 6 layout: rows (model, task, baseline|allocator), columns protocol variant.

    For BaSE over greedy trajectories, ``breadth`` is the per-trajectory N, so
    ``greedy N=1`` pairs a T = C greedy baseline with BaSE over T = C/K trajectories.
    Only K = 10 (the paper's default) BaSE rows are used when several K exist.
    """
    if summ.empty:
        return summ.assign(row=[], column=[], best=[])
    c = int(summ["budget"].max()) if budget is None else int(budget)
    sel = summ[summ["budget"] == c].copy()
    is_base = sel["allocator"] != "single"
    if is_base.any() and (sel.loc[is_base, "arms"] == 10).any():
        sel = sel[~is_base | (sel["arms"] == 10)]
    sel["row_method"] = np.where(sel["allocator"] == "single", "baseline", sel["allocator"])
    sel["row"] = sel["model"] + " / " + sel["task"] + " / " + sel["row_method"]
    sel["column"] = [
        protocol_label(p, n) for p, n in zip(sel["protocol"], sel["breadth"], strict=True)
    ]
    return _mark_best(sel, ["model", "task", "column"])


def arms_table(summ: pd.DataFrame, budget: int | None = None) -> pd.DataFrame:
    """Table 7 layout: BaSE rows (model, task, allocator) x K columns."""
    sel = summ[summ["allocator"] != "single"].copy()
    if sel.empty:
        return sel.assign(row=[], column=[], best=[])
    c = int(sel["budget"].max()) if budget is None else int(budget)
    sel = sel[sel["budget"] == c]
    sel["row"] = sel["model"] + " / " + sel["task"] + " / " + sel["allocator"]
    sel["column"] = "K=" + sel["arms"].astype(str)
    return _mark_best(sel, ["model", "task"])


__all__ = [
    "SUMMARY_COLUMNS",
    "allocator_by_protocol",
    "arms_table",
    "methods_at_budget",
    "protocol_label",
    "summary",
]
