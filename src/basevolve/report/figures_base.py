"""Report figures of BaSE runs (issue 24, item 16): BaSE against greedy at equal C, and
how a bandit spread its calls over the arms.

* :func:`base_vs_greedy_figure` -- the running best of every BaSE method and of greedy
  (T = C, N = 1: the configuration each BaSE arm runs, and the best greedy depth at that
  C) against LLM calls, at the largest budget C where both were run, per (task, model):
  the mean over seeds as steps (a running best holds until it rises), the interquartile
  range shaded.  Table 6 compares the final numbers; this shows when the gap opens.
* :func:`pulls_figure` -- calls per arm of each BaSE method at its largest C, arms ranked
  by their calls within each run, mean over seeds (error bars: min to max), against the
  uniform C / K.  A bandit that learned puts most of C on few arms.

Both read the tidy tables only (``arm``, the trajectory of each step's call, is an
optional column of the trajectory table that a basevolve store writes); without what
they need they return None and the report says so.  Registered in
:data:`basevolve.report.figures.FIGURES`.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from basevolve.analysis.pipeline import AnalysisResult
from basevolve.analysis.tables import ARM_COLUMN, NO_ALLOCATOR, Tables

MAX_PANELS = 12


def label_text(value: object) -> str:
    """A task, model or method name as figure text: one printable line, and every ``$``
    escaped so that matplotlib never reads it as mathtext (a model named with
    ``$\\frac{$x$`` failed the whole report with a ParseException; issue 25).  Only
    outside names go through here: the axes' own mathtext ticks stay as they are."""
    from basevolve.terminal import clean

    return clean(value).replace("$", r"\$")


def panel_grid(n: int, width: float = 5.0, height: float = 3.6, columns: int = 2):
    """A figure of ``n`` visible panels, ``columns`` per row (the rest hidden)."""
    ncols = min(n, columns)
    nrows = int(np.ceil(n / ncols))
    fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), squeeze=False)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    return fig, list(axes.flat[:n])


def _is_base(runs: pd.DataFrame) -> pd.Series:
    return ~runs["allocator"].astype(str).str.lower().isin(NO_ALLOCATOR)


def _curves(traj: pd.DataFrame, run_ids: list, budget: int) -> np.ndarray:
    """Running best of ``run_ids`` at steps 1..C, one row per run (held after a run's
    last step; before its first, NaN)."""
    sub = traj[traj["run_id"].isin(run_ids)]
    wide = sub.pivot_table(index="run_id", columns="step", values="best_fitness", aggfunc="max")
    wide = wide.reindex(columns=range(1, budget + 1)).ffill(axis=1)
    return wide.to_numpy(float)


def _greedy_methods(greedy: pd.DataFrame, budget: int) -> list[tuple[str, pd.DataFrame]]:
    """Greedy at C: T = C (N = 1) and, if another depth has a higher mean, that one."""
    at = greedy[greedy["budget"] == budget]
    picked: list[tuple[str, pd.DataFrame]] = []
    deep = at[at["depth"] == budget]
    if len(deep):
        picked.append((str(deep["method"].iloc[0]), deep))
    means = at.groupby("depth")["fitness"].mean()
    if len(means):
        best = int(means.idxmax())
        if best != budget:
            rows = at[at["depth"] == best]
            picked.append((f"{rows['method'].iloc[0]} (best depth)", rows))
    return picked


def base_vs_greedy_figure(res: AnalysisResult, tables: Tables) -> Figure | None:
    """BaSE vs greedy running best at equal C (module doc)."""
    traj, runs = tables.trajectories, tables.runs
    if traj is None or "run_id" not in runs.columns:
        return None
    base = runs[_is_base(runs)]
    greedy = runs[~_is_base(runs) & (runs["protocol"] == "greedy")]
    panels = []
    for (task, model), b in base.groupby(["task", "model"], sort=True):
        g = greedy[(greedy["task"] == task) & (greedy["model"] == model)]
        common = sorted(set(b["budget"]) & set(g["budget"]))
        if common:
            panels.append((task, model, int(common[-1]), b, g))
    panels = panels[:MAX_PANELS]
    if not panels:
        return None
    fig, axes = panel_grid(len(panels))
    cmap = plt.get_cmap("tab10")
    for ax, (task, model, budget, b, g) in zip(axes, panels, strict=True):
        steps = np.arange(1, budget + 1)
        at = b[b["budget"] == budget]
        lines = [(str(m), rows, {"color": cmap(i % 10), "lw": 2.0})
                 for i, (m, rows) in enumerate(at.groupby("method", sort=True))]
        styles = ({"color": "k", "lw": 1.6, "ls": "--"}, {"color": "0.45", "lw": 1.6, "ls": ":"})
        lines += [(m, rows, style) for (m, rows), style in
                  zip(_greedy_methods(g, budget), styles, strict=False)]
        for label, rows, style in lines:
            curves = _curves(traj, list(rows["run_id"]), budget)
            if not np.isfinite(curves).any():
                continue
            mean = np.nanmean(curves, axis=0)
            lo, hi = np.nanpercentile(curves, 25, axis=0), np.nanpercentile(curves, 75, axis=0)
            ax.step(steps, mean, where="post", label=f"{label_text(label)} (n={len(curves)})", **style)
            ax.fill_between(steps, lo, hi, step="post", color=style["color"], alpha=0.08, lw=0)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel("LLM calls")
        ax.set_ylabel("running-best fitness (mean over seeds)")
        ax.set_title(f"{label_text(task)} / {label_text(model)}: BaSE vs greedy at C={budget}",
                     fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6, loc="lower right")
    fig.tight_layout()
    return fig


def pulls_figure(res: AnalysisResult, tables: Tables) -> Figure | None:
    """Calls per arm of BaSE runs, arms ranked by calls (module doc)."""
    traj, runs = tables.trajectories, tables.runs
    if traj is None or ARM_COLUMN not in traj.columns or not traj[ARM_COLUMN].notna().any():
        return None
    base = runs[_is_base(runs) & (runs["arms"] > 1)]
    groups = [(t, m, b[b["budget"] == b["budget"].max()])
              for (t, m), b in base.groupby(["task", "model"], sort=True)][:MAX_PANELS]
    if not groups:
        return None
    fig, axes = panel_grid(len(groups))
    cmap = plt.get_cmap("tab10")
    drawn = 0
    for ax, (task, model, at) in zip(axes, groups, strict=True):
        budget, arms = int(at["budget"].iloc[0]), int(at["arms"].max())
        methods = list(at.groupby("method", sort=True))
        width = 0.8 / max(len(methods), 1)
        for i, (method, rows) in enumerate(methods):
            ranked = []
            for run_id in rows["run_id"]:
                arm = traj.loc[traj["run_id"] == run_id, ARM_COLUMN].dropna().astype(int)
                if len(arm):
                    counts = np.bincount(arm.clip(0, arms - 1), minlength=arms)
                    ranked.append(np.sort(counts)[::-1])
            if not ranked:
                continue
            ranked_arr = np.array(ranked, dtype=float)
            mean = ranked_arr.mean(axis=0)
            err = np.vstack([mean - ranked_arr.min(axis=0), ranked_arr.max(axis=0) - mean])
            x = np.arange(1, arms + 1) + (i - (len(methods) - 1) / 2) * width
            ax.bar(x, mean, width=width, color=cmap(i % 10), yerr=err, capsize=2,
                   label=f"{label_text(method)} (n={len(ranked)})")
            drawn += 1
        ax.axhline(budget / arms, color="k", ls="--", lw=1, label=f"uniform C/K = {budget / arms:g}")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel("arm, ranked by its calls within the run (1 = most)")
        ax.set_ylabel("LLM calls (mean over seeds)")
        ax.set_title(f"{label_text(task)} / {label_text(model)}: calls per arm at C={budget}, "
                     f"K={arms}", fontsize=9)
        ax.grid(alpha=0.3, axis="y")
        ax.legend(fontsize=6)
    if not drawn:
        plt.close(fig)
        return None
    fig.tight_layout()
    return fig


__all__ = ["base_vs_greedy_figure", "label_text", "pulls_figure"]
