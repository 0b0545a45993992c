"""Report figures of multi-objective runs (issue 36, item 5).

* :func:`front_figure` -- per task and objective pair: every evaluated program (grey) and
  each run's final front (coloured by method; with two objectives its staircase).
* :func:`attainment_figure` -- per task and objective pair, for methods with several
  seeds: the empirical attainment surfaces across seeds (moocore's ``eaf``): the median
  (attained by at least half of the runs; solid) and the worst (attained by every run;
  dashed).  moocore minimises, so "max" objectives are negated in and out.
* :func:`hv_curves_figure` -- the hypervolume of the runs' fronts against calls, and
  against cumulative effective FLOPs: mean across seeds with its 95% bootstrap CI
  (shaded) and the IQM (dashed), per (task, model) at the largest budget.

They read the result tables of :mod:`basevolve.analysis.fronts` and the fronts table;
objective, task and method names are outside text and go through
:func:`~basevolve.report.figures_base.label_text` (never mathtext).  Shown only in
reports of runs that declared objectives (:data:`FRONT_FIGURES`).
"""

from __future__ import annotations

import itertools

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import moocore
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from basevolve.analysis.fronts import column_of, run_vectors
from basevolve.analysis.pipeline import AnalysisResult
from basevolve.analysis.tables import Tables
from basevolve.report.figures import FigureSpec
from basevolve.report.figures_base import label_text, panel_grid

MAX_PANELS = 12


def _pairs(result: AnalysisResult, tables: Tables) -> list[tuple[str, list, int, int]]:
    """(task, run ids, i, j) per task and objective pair (at most MAX_PANELS)."""
    if tables.fronts is None or "hypervolume" not in result.tables:
        return []
    hv = result["hypervolume"]
    out = []
    for (task, spec), g in hv.groupby(["task", "objectives"], sort=True):
        m = len(str(spec).split(","))
        out += [(task, list(g["run_id"]), i, j) for i, j in itertools.combinations(range(m), 2)]
    return out[:MAX_PANELS]


def _method_colors(result: AnalysisResult) -> dict[str, tuple]:
    cmap = plt.get_cmap("tab10")
    methods = sorted(result["hypervolume"]["method"].astype(str).unique())
    return {m: cmap(i % 10) for i, m in enumerate(methods)}


def _where(x_is_max: bool) -> str:
    """How a 2-D front's staircase steps, points sorted by x: the region a front attains
    lies below x when x is maximised (a value holds up to its point: "pre"), above it
    when minimised ("post")."""
    return "pre" if x_is_max else "post"


def front_figure(result: AnalysisResult, tables: Tables) -> Figure | None:
    pairs = _pairs(result, tables)
    if not pairs:
        return None
    vectors = run_vectors(tables.fronts)  # type: ignore[arg-type]
    method = dict(zip(result["hypervolume"]["run_id"], result["hypervolume"]["method"].astype(str),
                      strict=True))
    colors = _method_colors(result)
    front = result["front"]
    fig, axes = panel_grid(len(pairs), 4.6, columns=3)
    for ax, (task, ids, i, j) in zip(axes, pairs, strict=True):
        objs = vectors[ids[0]].objectives
        every = np.array([v for r in ids for v in vectors[r].steps.values()], dtype=float)
        ax.scatter(every[:, i], every[:, j], s=8, color="0.75", label="all programs", zorder=1)
        shown: set[str] = set()
        for run_id in ids:
            mine = front[front["run_id"] == run_id]
            xs = mine[column_of(objs.names[i])].to_numpy(float)
            ys = mine[column_of(objs.names[j])].to_numpy(float)
            label = None if method[run_id] in shown else label_text(method[run_id])
            shown.add(method[run_id])
            ax.scatter(xs, ys, s=22, color=colors[method[run_id]], label=label, zorder=3)
            if len(objs.names) == 2 and xs.size:
                order = np.argsort(xs)
                ax.step(xs[order], ys[order], where=_where(objs.maximise[i]),
                        color=colors[method[run_id]], lw=0.8, alpha=0.6, zorder=2)
        ax.set_xlabel(f"{label_text(objs.names[i])} ({objs.directions[i]})")
        ax.set_ylabel(f"{label_text(objs.names[j])} ({objs.directions[j]})")
        ax.set_title(label_text(task), fontsize=10)
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def attainment_surface(points: np.ndarray, sets: np.ndarray, level: float,
                       maximise: tuple[bool, bool]) -> np.ndarray:
    """The ``level``-% attainment surface of the runs ``sets`` (one id per point): the
    minimal points attained by at least ``level`` % of the runs (moocore's ``eaf``, which
    minimises: "max" objectives are negated in and out)."""
    sign = np.array([-1.0 if m else 1.0 for m in maximise])
    eaf = moocore.eaf(points * sign, sets, percentiles=[level])
    return eaf[:, :2] * sign


def attainment_figure(result: AnalysisResult, tables: Tables) -> Figure | None:
    pairs = _pairs(result, tables)
    if not pairs:
        return None
    vectors = run_vectors(tables.fronts)  # type: ignore[arg-type]
    hv = result["hypervolume"].set_index("run_id")
    colors = _method_colors(result)
    cells = []
    for task, ids, i, j in pairs:
        at = hv.loc[ids]
        top = at[at["budget"] == at["budget"].max()]
        groups = {m: list(g.index) for m, g in top.groupby(top["method"].astype(str))
                  if len(g) >= 2}
        if groups:
            cells.append((task, ids, i, j, groups))
    if not cells:
        return None
    fig, axes = panel_grid(len(cells), 4.6, columns=3)
    for ax, (task, ids, i, j, groups) in zip(axes, cells, strict=True):
        objs = vectors[ids[0]].objectives
        maximise = (objs.maximise[i], objs.maximise[j])
        for name, runs in groups.items():
            pts = [(v[i], v[j], n) for n, r in enumerate(runs, start=1)
                   for v in vectors[r].steps.values()]
            arr = np.array(pts, dtype=float)
            for level, style in ((50.0, "-"), (100.0, "--")):
                s = attainment_surface(arr[:, :2], arr[:, 2], level, maximise)
                order = np.argsort(s[:, 0])
                ax.step(s[order, 0], s[order, 1], style, where=_where(maximise[0]),
                        color=colors[name],
                        label=f"{label_text(name)} ({'median' if level == 50 else 'all runs'}, "
                              f"{len(runs)} seeds)")
        ax.set_xlabel(f"{label_text(objs.names[i])} ({objs.directions[i]})")
        ax.set_ylabel(f"{label_text(objs.names[j])} ({objs.directions[j]})")
        ax.set_title(label_text(task), fontsize=10)
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def _curves(result: AnalysisResult, key: str, x: str, xlabel: str) -> Figure | None:
    df = result.tables.get(key)
    if df is None or df.empty:
        return None
    top = df[df["budget"] == df.groupby(["task", "model"])["budget"].transform("max")]
    groups = list(top.groupby(["task", "model"], sort=True))[:MAX_PANELS]
    colors = _method_colors(result)
    fig, axes = panel_grid(len(groups), 4.6, columns=3)
    for ax, ((task, model), g) in zip(axes, groups, strict=True):
        for name, m in g.groupby(g["method"].astype(str), sort=True):
            m = m.sort_values(x)
            # a front's hypervolume holds until a child grows it: steps, not slopes
            ax.plot(m[x], m["mean"], color=colors[name], lw=1.6, drawstyle="steps-post",
                    label=f"{label_text(name)} (n={int(m['n'].max())})")
            ax.fill_between(m[x], m["ci_low"], m["ci_high"], color=colors[name], alpha=0.18,
                            step="post")
            ax.plot(m[x], m["iqm"], "--", color=colors[name], lw=1.0, drawstyle="steps-post")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("hypervolume")
        ax.set_title(f"{label_text(task)} / {label_text(model)}", fontsize=10)
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def hv_calls_figure(result: AnalysisResult, tables: Tables) -> Figure | None:
    return _curves(result, "hv_calls", "calls", "calls done")


def hv_flops_figure(result: AnalysisResult, tables: Tables) -> Figure | None:
    return _curves(result, "hv_flops", "flops", "cumulative effective FLOPs")


FRONT_FIGURES: tuple[FigureSpec, ...] = (
    FigureSpec("front", "Final Pareto fronts per objective pair: grey = every evaluated "
                        "program, colours = each run's front by method.", front_figure),
    FigureSpec("front_attainment", "Attainment surfaces across seeds (moocore eaf): median "
                                   "(solid) and attained by every run (dashed), largest "
                                   "budget.", attainment_figure),
    FigureSpec("hv_calls", "Hypervolume of the run's front vs calls: mean across seeds with "
                           "95% bootstrap CI (shaded), IQM dashed.", hv_calls_figure),
    FigureSpec("hv_flops", "Hypervolume of the run's front vs cumulative effective FLOPs: "
                           "mean with 95% bootstrap CI (shaded), IQM dashed.", hv_flops_figure),
)


def has_fronts(result: AnalysisResult) -> bool:
    """Whether the report gets the front figures (some run declared objectives)."""
    return isinstance(result.tables.get("hypervolume"), pd.DataFrame)


__all__ = ["FRONT_FIGURES", "attainment_figure", "attainment_surface", "front_figure", "has_fronts",
           "hv_calls_figure", "hv_flops_figure"]
