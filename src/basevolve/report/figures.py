"""Matplotlib figures of the paper (Agg backend), from analysis result tables.

Each figure function takes exactly what the statistics return (docs/design.md rule 4) and
returns a ``Figure`` or ``None`` when the input has nothing to draw (the report then
writes a note instead).  :data:`FIGURES` is the registry the report iterates over.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator, NullFormatter, ScalarFormatter

from basevolve.analysis.pipeline import AnalysisResult
from basevolve.analysis.tables import Tables
from basevolve.report.figures_base import base_vs_greedy_figure, label_text, pulls_figure

MAX_PANELS = 15


@dataclass(frozen=True)
class FigureSpec:
    """A named figure: file stem, caption and builder."""

    name: str
    caption: str
    build: Callable[[AnalysisResult, Tables], Figure | None]


def _grid(n: int, width: float = 4.0, height: float = 3.2, ncols: int | None = None):
    ncols = ncols or min(n, 3)
    nrows = int(np.ceil(n / ncols))
    fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), squeeze=False)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    return fig, list(axes.flat[:n])


def _colors(names: list[str]) -> dict[str, tuple]:
    cmap = plt.get_cmap("tab10")
    return {m: cmap(i % 10) for i, m in enumerate(names)}


def envelope_figure(res: AnalysisResult, tables: Tables) -> Figure | None:
    """Fig. 2: V_max (solid) and best-of-N V_{T=1} (dashed) vs effective FLOPs, per task.

    Where T = 1 is the best depth the two lines coincide; V_max is drawn wide and light
    underneath and best-of-N thin, dashed, with its own markers on top, so both stay
    visible there (issue 24, item 16).
    """
    env = res["envelope"]
    if env.empty or not np.isfinite(env["flops"]).any():
        return None
    tasks = sorted(env["task"].unique())
    colors = _colors(sorted(env["model"].unique()))
    fig, axes = _grid(len(tasks))
    for ax, task in zip(axes, tasks, strict=True):
        for model, grp in env[env["task"] == task].groupby("model"):
            grp = grp.sort_values("budget")
            ax.plot(
                grp["flops"], grp["v_max"], "-o", color=colors[model], ms=6, lw=4, alpha=0.35,
                zorder=2, label=f"{label_text(model)} V_max"
            )
            ax.plot(
                grp["flops"],
                grp["v_t1"],
                "--x",
                color=colors[model],
                ms=6,
                lw=1.4,
                zorder=3,
                label=f"{label_text(model)} best-of-N (T=1)",
            )
        ax.set_xscale("log")
        lo, hi = ax.get_xlim()
        if hi / lo >= 10:  # a decade or more: labels at the powers of ten only
            ax.xaxis.set_minor_formatter(NullFormatter())
        # (less than a decade has no power of ten inside: the minor ticks keep labels)
        ax.set_xlabel("effective FLOPs per run")
        ax.set_ylabel("fitness (normalised)")
        ax.set_title(f"{label_text(task)}: fitness-compute envelope", fontsize=10)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    return fig


def _surface(res: AnalysisResult, value: str, label: str, cmap: str) -> Figure | None:
    cells = res["cells"]
    if cells.empty:
        return None
    pairs = list(cells.groupby(["task", "model"]).groups)[:MAX_PANELS]
    fig, axes = _grid(len(pairs), width=4.2, height=3.4)
    for ax, (task, model) in zip(axes, pairs, strict=True):
        sub = cells[(cells["task"] == task) & (cells["model"] == model)]
        piv = sub.pivot(index="budget", columns="depth", values=value).sort_index()
        im = ax.imshow(piv.to_numpy(float), origin="lower", aspect="auto", cmap=cmap)
        ax.set_xticks(range(piv.shape[1]), [str(c) for c in piv.columns], fontsize=7)
        ax.set_yticks(range(piv.shape[0]), [str(c) for c in piv.index], fontsize=7)
        ax.set_xlabel("depth T (generations)")
        ax.set_ylabel("budget C (LLM calls)")
        ax.set_title(f"{label_text(task)} / {label_text(model)}", fontsize=9)
        fig.colorbar(im, ax=ax, label=label)
    fig.tight_layout()
    return fig


def flops_surface_figure(res: AnalysisResult, tables: Tables) -> Figure | None:
    """Fig. 3 top, per call: mean effective FLOPs / C per (C, T) cell.

    Divided by C so the colour shows what Fig. 3's argument needs -- whether the cost
    of a call changes with depth at fixed budget -- instead of the trivial growth with C.
    """
    if res["cells"].empty or not np.isfinite(res["cells"]["flops"]).any():
        return None
    return _surface(res, "flops_per_call", "effective FLOPs per LLM call", "viridis")


def fitness_surface_figure(res: AnalysisResult, tables: Tables) -> Figure | None:
    """Fig. 3 bottom: mean fitness per (C, T) cell."""
    return _surface(res, "fitness", "mean fitness", "magma")


def trajectories_figure(res: AnalysisResult, tables: Tables) -> Figure | None:
    """Fig. 4: per-seed running best of the deepest greedy configuration (T = C, N = 1),
    drawn as steps on integer call ticks (a running best holds until it rises; issue 24,
    item 16)."""
    if tables.trajectories is None:
        return None
    runs = tables.runs
    greedy = runs[(runs["protocol"] == "greedy") & (runs["allocator"] == "single")]
    if greedy.empty:
        greedy = runs
    top = greedy[greedy["budget"] == greedy["budget"].max()]
    top = top[top["depth"] == top["depth"].max()]
    traj = tables.trajectories.merge(top[["run_id", "task", "model", "seed"]], on="run_id")
    if traj.empty:
        return None
    pairs = list(traj.groupby(["task", "model"]).groups)[:MAX_PANELS]
    fig, axes = _grid(len(pairs))
    for ax, (task, model) in zip(axes, pairs, strict=True):
        sub = traj[(traj["task"] == task) & (traj["model"] == model)]
        for seed, g in sub.groupby("seed"):
            ax.step(g["step"], g["best_fitness"], where="post", lw=1, alpha=0.8,
                    label=f"seed {seed}")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        t = int(top["depth"].iloc[0])
        ax.set_title(f"{label_text(task)} / {label_text(model)} (T={t})", fontsize=9)
        ax.set_xlabel("step (LLM call)")
        ax.set_ylabel("running-best fitness")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=6, ncol=2)
    fig.tight_layout()
    return fig


#: Per-method centre lines of the distribution figure: (summary column, legend, style);
#: mean dashed black, IQM solid red (the caption in :data:`FIGURES` says so).
_CENTER_LINES: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("mean", "mean", {"colors": "k", "linestyles": "--", "lw": 1.2}),
    ("iqm", "IQM", {"colors": "tab:red", "linestyles": "-", "lw": 1.5}),
)


def distribution_figure(res: AnalysisResult, tables: Tables) -> Figure | None:
    """Appendix "Distribution": final fitness per configuration; mean dashed, IQM solid."""
    summ = res["summary"]
    runs = tables.runs
    top = int(runs["budget"].max())
    sel = runs[runs["budget"] == top]
    pairs = list(sel.groupby(["task", "model"]).groups)[:MAX_PANELS]
    fig, axes = _grid(len(pairs), width=5.0)
    rng = np.random.default_rng(0)  # jitter only
    for ax, (task, model) in zip(axes, pairs, strict=True):
        sub = sel[(sel["task"] == task) & (sel["model"] == model)]
        methods = list(
            dict.fromkeys(sub.sort_values(["protocol", "allocator", "depth", "arms"])["method"])
        )
        for i, m in enumerate(methods):
            vals = sub.loc[sub["method"] == m, "fitness"].to_numpy()
            ax.scatter(
                i + rng.uniform(-0.15, 0.15, vals.size), vals, s=10, alpha=0.7, color="tab:blue"
            )
            row = summ[
                (summ["task"] == task)
                & (summ["model"] == model)
                & (summ["budget"] == top)
                & (summ["method"] == m)
            ]
            if len(row):
                for column, label, style in _CENTER_LINES:
                    ax.hlines(
                        row[column].iloc[0],
                        i - 0.3,
                        i + 0.3,
                        **style,
                        label=label if i == 0 else None,
                    )
        ax.set_xticks(range(len(methods)), [label_text(m) for m in methods], rotation=60,
                      ha="right", fontsize=7)
        ax.set_ylabel("final fitness")
        ax.set_title(f"{label_text(task)} / {label_text(model)} (C={top})", fontsize=9)
        ax.grid(alpha=0.3, axis="y")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    return fig


def children_figure(res: AnalysisResult, tables: Tables) -> Figure | None:
    """Appendix "Distribution": child fitness at T = 1 (all children share the initial parent)."""
    if tables.children is None:
        return None
    t1 = tables.runs[tables.runs["depth"] == 1][["run_id", "task", "model"]]
    kids = tables.children.merge(t1, on="run_id")
    if kids.empty:
        return None
    tasks = sorted(kids["task"].unique())
    colors = _colors(sorted(kids["model"].unique()))
    fig, axes = _grid(len(tasks))
    bins = np.linspace(min(0.0, kids["fitness"].min()), max(1.0, kids["fitness"].max()), 26)
    for ax, task in zip(axes, tasks, strict=True):
        for model, g in kids[kids["task"] == task].groupby("model"):
            ax.hist(
                g["fitness"], bins=bins, histtype="step", lw=1.5, color=colors[model],
                label=label_text(model)
            )
        ax.set_yscale("log")
        ax.set_xlabel("child fitness (normalised)")
        ax.set_ylabel("count (log scale)")
        ax.set_title(f"{label_text(task)}: children at T=1", fontsize=9)
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    return fig


def optimal_depth_figure(res: AnalysisResult, tables: Tables) -> Figure | None:
    """Fig. 8-style: empirical T*(C) and V_max(C) across models, per task."""
    od = res["optimal_depth"]
    if od.empty:
        return None
    tasks = sorted(od["task"].unique())
    colors = _colors(sorted(od["model"].unique()))
    fig, axes = plt.subplots(2, len(tasks), figsize=(4.2 * len(tasks), 6.4), squeeze=False)
    for j, task in enumerate(tasks):
        for model, g in od[od["task"] == task].groupby("model"):
            g = g.sort_values("budget")
            axes[0, j].plot(
                g["budget"], g["t_star_emp"], "-o", ms=3, color=colors[model],
                label=label_text(model)
            )
            axes[1, j].plot(g["budget"], g["v_max"], "-o", ms=3, color=colors[model],
                            label=label_text(model))
            fitted = g[g["interior"]]
            if len(fitted):
                axes[0, j].plot(
                    fitted["budget"],
                    fitted["t_star_fit"],
                    ":",
                    color=colors[model],
                    label=f"{label_text(model)} fitted (Eq. 2)",
                )
        for i, lab in enumerate(("empirical T*(C) (generations)", "V_max(C) (fitness)")):
            ax = axes[i, j]
            ax.set_xscale("log", base=2)
            ax.xaxis.set_major_formatter(ScalarFormatter())
            ax.set_xlabel("budget C (LLM calls)")
            ax.set_ylabel(lab)
            ax.grid(alpha=0.3)
        axes[0, j].set_yscale("log", base=2)
        axes[0, j].yaxis.set_major_formatter(ScalarFormatter())
        axes[0, j].set_title(f"{label_text(task)}: compute-optimal depth", fontsize=10)
        axes[1, j].set_title(f"{label_text(task)}: best in-sweep fitness", fontsize=10)
    axes[0, 0].legend(fontsize=7)
    fig.tight_layout()
    return fig


def r2_figure(res: AnalysisResult, tables: Tables) -> Figure | None:
    """Fig. 9: bilinear-fit R^2 vs V_max (at the largest budget) per (model, task)."""
    bil, env = res["bilinear"], res["envelope"]
    if bil.empty or env.empty:
        return None
    top = env.loc[env.groupby(["task", "model"])["budget"].idxmax(), ["task", "model", "v_max"]]
    pts = bil.merge(top, on=["task", "model"]).dropna(subset=["r2", "v_max"])
    if pts.empty:
        return None
    fig, ax = plt.subplots(figsize=(5.5, 4.2))
    colors = _colors(sorted(pts["model"].unique()))
    for model in colors:  # colour = model (legend), label = task
        mine = pts[pts["model"] == model]
        ax.scatter(mine["v_max"], mine["r2"], color=colors[model], s=40, edgecolor="k", lw=0.5,
                   label=label_text(model))
    # labels of neighbouring points go above and below in turn, so they do not overlap
    for i, (_, r) in enumerate(pts.sort_values(["v_max", "r2"]).iterrows()):
        ax.annotate(label_text(r["task"]), (r["v_max"], r["r2"]), fontsize=6,
                    xytext=(4, 4 if i % 2 == 0 else -9), textcoords="offset points")
    ax.axhline(0.7, color="grey", ls="--", lw=1, label="R² = 0.7")
    ax.margins(x=0.25, y=0.1)
    ax.set_xlabel("V_max at the largest budget (fitness)")
    ax.set_ylabel("bilinear fit R² (Eq. 2)")
    ax.set_title("Bilinear-fit quality vs best fitness", fontsize=10)
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


FIGURES: tuple[FigureSpec, ...] = (
    FigureSpec(
        "envelope",
        "Fitness vs effective FLOPs: V_max (wide, light) and best-of-N, T=1 (dashed, x).",
        envelope_figure,
    ),
    FigureSpec(
        "surface_flops", "(C, T) surface of mean effective FLOPs per LLM call (a run's FLOPs / C).",
        flops_surface_figure
    ),
    FigureSpec("surface_fitness", "(C, T) surface of mean fitness.", fitness_surface_figure),
    FigureSpec(
        "trajectories",
        "Per-seed running-best fitness of the deepest greedy configuration.",
        trajectories_figure,
    ),
    FigureSpec(
        "distribution",
        "Final fitness per configuration at the largest budget: dots = runs, "
        "dashed = mean, solid = IQM.",
        distribution_figure,
    ),
    FigureSpec(
        "children_t1",
        "Child fitness at T=1 (one mutation of the initial program), log counts.",
        children_figure,
    ),
    FigureSpec(
        "optimal_depth", "Empirical T*(C) and V_max(C) across models.", optimal_depth_figure
    ),
    FigureSpec("bilinear_r2", "Bilinear-fit R² vs V_max per (model, task).", r2_figure),
    FigureSpec(
        "base_vs_greedy",
        "Running best of BaSE and greedy (T=C, and the best depth) at the same budget C: "
        "mean over seeds as steps, interquartile range shaded.",
        base_vs_greedy_figure,
    ),
    FigureSpec(
        "pulls_per_arm",
        "LLM calls per arm of BaSE runs, arms ranked by calls within each run: mean over "
        "seeds (bars: min to max), dashed = uniform C/K.",
        pulls_figure,
    ),
)


def close(fig: Figure) -> None:
    plt.close(fig)


__all__ = ["FIGURES", "FigureSpec", "close"]
