"""``basevolve.analyze`` / ``report``: the paper's statistics from a store or DataFrames.

The same pipeline as ``basevolve analyze`` / ``basevolve report``
(:mod:`basevolve.analysis.pipeline`, :func:`basevolve.report.write_report`): the
fitness-FLOPs envelope (Section 4.1), the bilinear depth-breadth fit (Eq. 2), the
capability gate (Table 4), time to threshold (Table 3) and the BaSE tables (Tables
1, 6, 7), with stratified bootstrap CIs and IQM.  Inputs follow the tidy-table contract
of :mod:`basevolve.analysis.tables`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TypeAlias

import pandas as pd

from basevolve.analysis.pipeline import DEFAULT_THRESHOLDS, AnalysisConfig, AnalysisResult
from basevolve.analysis.tables import Tables
from basevolve.api.checks import check_type
from basevolve.errors import ConfigError

TableArg: TypeAlias = str | os.PathLike[str] | pd.DataFrame


def _thresholds(values: Sequence[float] | None) -> tuple[float, ...]:
    if values is None:
        return DEFAULT_THRESHOLDS
    if isinstance(values, str) or not isinstance(values, Sequence) or not values or any(
            isinstance(v, bool) or not isinstance(v, int | float) for v in values):
        raise ConfigError(f"thresholds= must be a non-empty list of numbers like [0.8, 0.9], "
                          f"got {values!r}")
    return tuple(float(v) for v in values)


def _path(table: TableArg | None) -> Path | pd.DataFrame | None:
    return table if table is None or isinstance(table, pd.DataFrame) else Path(table)


def _load(store: str | os.PathLike[str] | None, runs: TableArg | None,
          trajectories: TableArg | None, children: TableArg | None, resamples: int | None,
          shuffles: int, gate_shuffles: int, seed: int, ceiling: float,
          thresholds: Sequence[float] | None,
          budget_axis: str = "calls",
          fronts: TableArg | None = None) -> tuple[Tables, AnalysisResult]:
    from basevolve.analysis.pipeline import analyze as run_pipeline
    from basevolve.analysis.tables import load_tables

    for name, value in (("store", store), ("runs", runs), ("trajectories", trajectories),
                        ("children", children), ("fronts", fronts)):
        if (value is not None and not isinstance(value, str | os.PathLike | pd.DataFrame)) or (
                name == "store" and isinstance(value, pd.DataFrame)):
            kind = "a file path" if name == "store" else "a DataFrame or a file path"
            raise ConfigError(f"{name}= must be {kind}, got {type(value).__name__}")
    for knob, count in (("resamples", resamples), ("shuffles", shuffles),
                        ("gate_shuffles", gate_shuffles), ("seed", seed)):
        check_type(knob, count, int | None if knob == "resamples" else int)
    check_type("ceiling", ceiling, float)
    cfg = AnalysisConfig(resamples=1000 if resamples is None else resamples, shuffles=shuffles,
                         gate_shuffles=gate_shuffles, seed=seed, ceiling=ceiling,
                         thresholds=_thresholds(thresholds))
    tables = load_tables(input=_path(runs), trajectories=_path(trajectories),
                         store=None if store is None else Path(store), children=_path(children),
                         budget_axis=budget_axis, fronts=_path(fronts))
    if store is not None:  # a sweep's runs: its own thresholds and resamples (issue 24)
        from basevolve.analysis.sweep_settings import with_sweep_settings

        cfg = with_sweep_settings(cfg, tables.runs, Path(store), thresholds=thresholds is None,
                                  resamples=resamples is None)
    return tables, run_pipeline(tables, cfg)


def analyze(store: str | os.PathLike[str] | None = None, *, runs: TableArg | None = None,
            trajectories: TableArg | None = None, children: TableArg | None = None,
            resamples: int | None = None, shuffles: int = 10_000, gate_shuffles: int = 20_000,
            seed: int = 0, ceiling: float = 0.97,
            thresholds: Sequence[float] | None = None,
            budget_axis: str = "calls", fronts: TableArg | None = None) -> AnalysisResult:
    """The paper's statistics over finished runs (``basevolve analyze`` from Python).

    Give exactly one of ``store`` (every finished run in it; unfinished ones are left
    out with a note on stderr) and ``runs`` (a runs table: DataFrame, CSV or Parquet).

    Args:
        store: A basevolve run store.
        runs: One row per run (columns in :mod:`basevolve.analysis.tables`).
        trajectories: Running best per call (``RunResult.trajectories()`` frames
            concatenated); read from the store when ``store`` is given.
        children: Every child's score (for the T = 1 histogram).
        resamples: Bootstrap resamples (summary SE/CI, thresholds); default: the
            sweep's own for a store of a sweep's runs (as it stored them), else 1000.
        shuffles: Permutation shuffles for the bilinear interaction c (Table 8).
        gate_shuffles: Permutation shuffles for the capability gate (Table 4).
        seed: Seed of every resampling.
        ceiling: Sub-ceiling cutoff for the bilinear fit (Eq. 2).
        thresholds: Fitness thresholds tau for time to threshold (Table 3); default:
            for a store of a sweep's runs, the sweep file's own thresholds per task,
            else 0.5, 0.8, 0.9, 0.95, 0.99.
        budget_axis: ``"calls"`` (runs with a call budget C), or ``"flops"`` /
            ``"tokens"``: runs made with a FLOPs/token budget, compared at equal budgets
            (the depth-breadth tables are empty on those axes).
        fronts: The objective vectors of runs with several objectives (the fronts
            table of :mod:`basevolve.analysis.front_input`, as ``export
            --for-analysis`` writes it); read from the store when ``store`` is given.
            Such runs add ``result["front"]``, ``result["hypervolume"]``, ``hv_*``.

    Returns:
        An :class:`~basevolve.analysis.AnalysisResult`; ``result["summary"]``,
        ``result["envelope"]``, ... are DataFrames (``result.tables`` lists them).

    Raises:
        ConfigError: Missing or inconsistent input (same messages as the CLI).
    """
    return _load(store, runs, trajectories, children, resamples, shuffles, gate_shuffles,
                 seed, ceiling, thresholds, budget_axis, fronts)[1]


def report(out: str | os.PathLike[str], *, store: str | os.PathLike[str] | None = None,
           runs: TableArg | None = None, trajectories: TableArg | None = None,
           children: TableArg | None = None, resamples: int | None = None,
           shuffles: int = 10_000,
           gate_shuffles: int = 20_000, seed: int = 0, ceiling: float = 0.97,
           thresholds: Sequence[float] | None = None, pdf: bool = True,
           budget_axis: str = "calls", fronts: TableArg | None = None) -> Path:
    """Write the report folder (``basevolve report --out DIR`` from Python).

    Markdown and LaTeX tables, PNG (and PDF unless ``pdf=False``) figures,
    ``analysis.json`` and an ``index.html`` showing everything.  The other arguments
    are those of :func:`analyze`.

    Returns:
        The path of ``index.html``.

    Raises:
        ConfigError: Bad input (as :func:`analyze`) or an unwritable ``out``.
    """
    from basevolve.report import write_report

    if not isinstance(out, str | os.PathLike):
        raise ConfigError(f"out= must be a folder path (str or Path), got {out!r}")
    check_type("pdf", pdf, bool)
    tables, result = _load(store, runs, trajectories, children, resamples, shuffles,
                           gate_shuffles, seed, ceiling, thresholds, budget_axis, fronts)
    try:
        return write_report(result, tables, Path(out), pdf=pdf)
    except OSError as exc:
        raise ConfigError(
            f"cannot write the report to {os.fspath(out)!r} ({exc}); fix: choose a writable "
            "--out folder") from None
