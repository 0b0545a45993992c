"""Statistics of multi-objective runs: fronts, hypervolume curves, depth-breadth on
hypervolume (issue 36, item 5).

Input: the validated runs and trajectory tables and the fronts table
(:mod:`basevolve.analysis.front_input`).  Output tables (added to
:class:`~basevolve.analysis.pipeline.AnalysisResult` only when some analysed run declared
objectives, so single-objective analyses are unchanged):

* ``front`` -- each run's final Pareto front: one row per member, its objective values
  in columns named after the objectives (text; the report and the terminal escape it).
* ``hypervolume`` -- per run: the objectives, the group's reference point, the final
  front's size, ``hv`` and ``hv_norm`` (below).
* ``hv_final`` -- final ``hv`` per configuration (task, model, budget, method): mean,
  bootstrap SE and 95% CI, IQM across seeds (:func:`~basevolve.analysis.stats.cell_stats`,
  the one cell statistic every view uses).
* ``hv_calls`` / ``hv_flops`` -- the same statistics of the hypervolume of the run's
  front against calls done and against cumulative effective FLOPs (on a common grid up to
  the FLOPs every run of the configuration reached; a run's value at ``x`` is its
  hypervolume after its last call within ``x``).
* ``hv_<table>`` -- the paper's depth-breadth analysis with ``hv_norm`` as the fitness:
  the single-score pipeline itself, run on a copy of the tables whose ``fitness`` /
  ``best_fitness`` are the normalised hypervolume (summary, envelope, bilinear,
  optimal_depth, gate, thresholds, table1).

**One reference per group.**  Runs are compared within a group of the same task and the
same objectives.  A run's own reference point may differ from another's (derived from an
initial program whose CPU time was measured again), so every run of a group is measured
against the group's *common* reference: per objective the worst of the runs' points (what
all of them count, and more).  ``hv_norm`` divides by the volume of the box between that
point and the group's ideal point (per objective the best value any run reached), so it
lies in [0, 1] as the bilinear fit's ``log(1 - V)`` needs.  Hypervolume is moocore's
(:mod:`basevolve.fronts`), never computed here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from basevolve.analysis.stats import cell_stats
from basevolve.fronts import nondominated_mask
from basevolve.objectives import Objectives
from basevolve.store.run_fronts import hypervolume_curve

if TYPE_CHECKING:
    from basevolve.analysis.pipeline import AnalysisConfig, AnalysisResult
    from basevolve.analysis.tables import Tables

CURVE_POINTS = 101  # grid points of a hypervolume curve (calls: every step up to this)
KEYS = ["task", "model", "budget", "method"]
STAT_COLUMNS = ["n", "mean", "se", "ci_low", "ci_high", "iqm", "iqm_se"]
#: the single-score result tables re-run with the normalised hypervolume as the fitness
DEPTH_BREADTH = ("summary", "envelope", "bilinear", "optimal_depth", "gate", "thresholds",
                 "table1")


@dataclass
class RunVectors:
    """One run's objectives, reference point and its programs' vectors by step."""

    objectives: Objectives
    reference: tuple[float, ...]
    steps: dict[int, tuple[float, ...]]  # step (0 = initial) -> vector
    programs: dict[int, Any]  # step -> program id


#: columns of the ``front`` table beside the objectives' own
FRONT_FIXED = ("run_id", "task", "step", "program_id", "model", "budget", "method", "seed")


def column_of(name: str) -> str:
    """The ``front`` table's column of objective ``name`` (prefixed only where the name
    is one of :data:`FRONT_FIXED`, e.g. an objective called ``step``)."""
    return f"objective {name}" if name in FRONT_FIXED else name


def spec_text(objs: Objectives) -> str:
    """``acc:max,sec:min``: a group's objectives as one cell."""
    return ",".join(f"{n}:{d}" for n, d in zip(objs.names, objs.directions, strict=True))


def run_vectors(fronts: pd.DataFrame) -> dict[Any, RunVectors]:
    """The fronts table (validated) per run."""
    out: dict[Any, RunVectors] = {}
    for run_id, g in fronts.groupby("run_id", sort=False):
        decl = g.drop_duplicates("k").sort_values("k")
        objs = Objectives(tuple(decl["objective"]), tuple(decl["direction"]))
        m = len(objs.names)
        steps: dict[int, tuple[float, ...]] = {}
        programs: dict[int, Any] = {}
        for step, s in g.groupby("step", sort=True):
            if len(s) == m:
                steps[int(step)] = tuple(s.sort_values("k")["value"].tolist())
                programs[int(step)] = s["program_id"].iloc[0]
        out[run_id] = RunVectors(objs, tuple(decl["reference"].tolist()), steps, programs)
    return out


def _common(runs: list[RunVectors]) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The group's common reference point and ideal point (module docstring)."""
    objs = runs[0].objectives
    refs = np.array([r.reference for r in runs], dtype=float)
    vecs = np.array([v for r in runs for v in r.steps.values()], dtype=float).reshape(
        -1, len(objs.names))
    ref, ideal = [], []
    for k, mx in enumerate(objs.maximise):
        col = refs[:, k][np.isfinite(refs[:, k])]
        if col.size:  # worst of the runs' points
            ref.append(float(col.min() if mx else col.max()))
        else:  # no run knows one: the worst value seen
            ref.append(float(vecs[:, k].min() if mx else vecs[:, k].max()))
        ideal.append(float(vecs[:, k].max() if mx else vecs[:, k].min()))
    return tuple(ref), tuple(ideal)


def _curve(rv: RunVectors, n_steps: int, reference: tuple[float, ...]) -> np.ndarray:
    start = rv.steps.get(0)
    steps = [rv.steps.get(i) for i in range(1, n_steps + 1)]
    return np.asarray(hypervolume_curve(start, steps, rv.objectives, reference), dtype=float)


def _grid(n: int) -> np.ndarray:
    return np.arange(n) if n <= CURVE_POINTS else np.unique(
        np.linspace(0, n - 1, CURVE_POINTS).round().astype(int))


def _stats_rows(key: dict[str, Any], x_name: str, xs: np.ndarray, mat: np.ndarray,
                seed: int, reps: int) -> list[dict[str, Any]]:
    return [{**key, x_name: float(x) if x_name == "flops" else int(x),
             **cell_stats(mat[:, j], seed, reps)} for j, x in enumerate(xs)]


def _flops_of(traj: pd.DataFrame | None, run_id: Any, n_steps: int) -> np.ndarray | None:
    """Cumulative FLOPs before the first call (0) and after each step, or None."""
    if traj is None:
        return None
    t = traj[traj["run_id"] == run_id].sort_values("step")
    fl = t["cumulative_flops"].to_numpy(float)
    if fl.size < n_steps or not np.isfinite(fl[:n_steps]).all():
        return None
    return np.concatenate([[0.0], fl[:n_steps]])


def front_tables(tables: Tables, cfg: AnalysisConfig,
                 one_fitness: Callable[[Tables, AnalysisConfig], AnalysisResult]
                 ) -> dict[str, pd.DataFrame]:
    """Every table of the module docstring; ``one_fitness`` is the single-score pipeline
    (passed in by :func:`basevolve.analysis.pipeline.analyze`, which calls this)."""
    assert tables.fronts is not None
    vectors = run_vectors(tables.fronts)
    runs = tables.runs[tables.runs["run_id"].isin(list(vectors))].copy()
    groups: dict[tuple[str, str], list[Any]] = {}
    for run_id, task in zip(runs["run_id"], runs["task"], strict=True):
        groups.setdefault((task, spec_text(vectors[run_id].objectives)), []).append(run_id)
    curves: dict[Any, np.ndarray] = {}
    per_run, members = [], []
    budget = dict(zip(runs["run_id"], runs["budget"], strict=True))
    for (task, spec), ids in groups.items():
        reference, ideal = _common([vectors[i] for i in ids])
        box = float(np.prod([abs(a - b) for a, b in zip(ideal, reference, strict=True)]))
        for run_id in ids:
            rv = vectors[run_id]
            n_steps = int(budget[run_id]) if tables.budget_axis == "calls" else max(rv.steps)
            if tables.trajectories is not None:
                done = tables.trajectories.loc[tables.trajectories["run_id"] == run_id, "step"]
                n_steps = int(done.max()) if len(done) else n_steps
            curves[run_id] = _curve(rv, n_steps, reference)
            hv = float(curves[run_id][-1])
            order = sorted(rv.steps)
            mask = nondominated_mask([rv.steps[s] for s in order], rv.objectives)
            on = [s for s, keep in zip(order, mask, strict=True) if keep]
            members += [{"run_id": run_id, "task": task, "step": s,
                         "program_id": rv.programs[s],
                         **{column_of(n): v for n, v in zip(rv.objectives.names, rv.steps[s],
                                                            strict=True)}} for s in on]
            per_run.append({"run_id": run_id, "task": task, "objectives": spec,
                            "reference": ",".join(f"{v:.6g}" for v in reference),
                            "front_size": len(on), "hv": hv,
                            "hv_norm": hv / box if box > 0 else 0.0})
    info = runs[["run_id", "model", "budget", "method", "seed"]]
    hv_runs = pd.DataFrame(per_run).merge(info, on="run_id", how="left")
    out: dict[str, pd.DataFrame] = {
        "front": pd.DataFrame(members).merge(info, on="run_id", how="left"),
        "hypervolume": hv_runs[["run_id", "task", "model", "budget", "method", "seed",
                                "objectives", "reference", "front_size", "hv", "hv_norm"]],
    }
    summ, by_calls, by_flops = [], [], []
    for key, g in hv_runs.groupby(KEYS, sort=True):
        k = dict(zip(KEYS, key, strict=True))
        k["budget"] = int(k["budget"])
        ids = list(g["run_id"])
        summ.append({**k, **cell_stats(g["hv"].to_numpy(float), cfg.seed, cfg.resamples)})
        width = min(curves[i].size for i in ids)
        mat = np.vstack([curves[i][:width] for i in ids])
        xs = _grid(width)
        by_calls += _stats_rows(k, "calls", xs, mat[:, xs], cfg.seed, cfg.resamples)
        fls = [_flops_of(tables.trajectories, i, width - 1) for i in ids]
        if all(f is not None for f in fls) and min(f[-1] for f in fls) > 0:  # type: ignore[index]
            grid = np.linspace(0.0, min(f[-1] for f in fls), CURVE_POINTS)  # type: ignore[index]
            at = np.vstack([mat[r, np.searchsorted(f, grid, side="right") - 1]  # type: ignore[arg-type]
                            for r, f in enumerate(fls)])
            by_flops += _stats_rows(k, "flops", grid, at, cfg.seed, cfg.resamples)
    out["hv_final"] = pd.DataFrame(summ, columns=[*KEYS, *STAT_COLUMNS])
    out["hv_calls"] = pd.DataFrame(by_calls, columns=[*KEYS, "calls", *STAT_COLUMNS])
    out["hv_flops"] = pd.DataFrame(by_flops, columns=[*KEYS, "flops", *STAT_COLUMNS])
    out.update(_depth_breadth(tables, runs, hv_runs, curves, cfg, one_fitness))
    return out


def _depth_breadth(tables: Tables, runs: pd.DataFrame, hv_runs: pd.DataFrame,
                   curves: dict[Any, np.ndarray], cfg: AnalysisConfig,
                   one_fitness: Callable[[Tables, AnalysisConfig], AnalysisResult]
                   ) -> dict[str, pd.DataFrame]:
    """The single-score pipeline with ``hv_norm`` as the fitness (module docstring)."""
    norm = dict(zip(hv_runs["run_id"], hv_runs["hv_norm"], strict=True))
    scale = {r: (norm[r] / curves[r][-1] if curves[r][-1] > 0 else 0.0) for r in norm}
    hv_fit = runs.assign(fitness=runs["run_id"].map(norm).astype(float))
    traj = None
    if tables.trajectories is not None:
        t = tables.trajectories[tables.trajectories["run_id"].isin(list(norm))].copy()
        t["best_fitness"] = [float(curves[r][min(int(s), curves[r].size - 1)] * scale[r])
                             for r, s in zip(t["run_id"], t["step"], strict=True)]
        traj = t if len(t) else None
    sub = replace(tables, runs=hv_fit.reset_index(drop=True), trajectories=traj,
                  children=None, per_model=None, fronts=None)
    result = one_fitness(sub, cfg)
    return {f"hv_{name}": result.tables[name] for name in DEPTH_BREADTH}


__all__ = ["CURVE_POINTS", "DEPTH_BREADTH", "FRONT_FIXED", "RunVectors", "column_of",
           "front_tables", "run_vectors", "spec_text"]
