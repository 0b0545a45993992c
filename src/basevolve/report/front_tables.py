"""Report tables of multi-objective runs (issue 36, item 5): the final fronts, each run's
hypervolume, hypervolume statistics across seeds, and the depth-breadth analysis with
the normalised hypervolume as the fitness (:mod:`basevolve.analysis.fronts`).

Each entry is ``(name, caption, build)``; the report shows an entry only when the
analysis has the result table ``name``, so single-objective reports are unchanged.
Objective names become column headers: the report's writers escape them (Markdown, LaTeX,
HTML) like every other outside text.
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from basevolve.analysis.envelope import BUDGET_KEYS
from basevolve.analysis.fronts import FRONT_FIXED, KEYS
from basevolve.analysis.pipeline import AnalysisResult
from basevolve.report.tables import (
    Grid,
    bilinear_grid,
    frame_grid,
    gate_grid,
    mean_se_grid,
    thresholds_grid,
)

Build = Callable[[AnalysisResult], Grid]
STATS = ("n", "mean", "se", "ci_low", "ci_high", "iqm", "iqm_se")


def _fmt(digits: int = 4) -> Callable[[object], str]:
    def fmt(v: object) -> str:
        try:
            f = float(v)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return str(v)
        return "---" if f != f else f"{f:.{digits}g}" if abs(f) >= 1e5 else f"{f:.{digits}f}"
    return fmt


def _front(r: AnalysisResult) -> Grid:
    df = r["front"]
    objectives = [c for c in df.columns if c not in FRONT_FIXED]
    return frame_grid(df, ["run_id", "program_id"],
                          {"step": _fmt(0), **{c: _fmt() for c in objectives}})


def _hypervolume(r: AnalysisResult) -> Grid:
    return frame_grid(r["hypervolume"], ["run_id"], {
        "method": str, "objectives": str, "reference": str, "front_size": _fmt(0),
        "hv": _fmt(), "hv_norm": _fmt()})


def _stats(key: str) -> Build:
    return lambda r: frame_grid(r[key], KEYS, {
        s: _fmt(0) if s == "n" else _fmt() for s in STATS})


def _at_end(key: str, x: str) -> Build:
    """A curve table at its last point per configuration (the figure has every point)."""
    def build(r: AnalysisResult) -> Grid:
        df = r[key]
        last = df[df[x] == df.groupby(KEYS)[x].transform("max")] if len(df) else df
        return frame_grid(last, [*KEYS, x], {s: _fmt(0) if s == "n" else _fmt()
                                                 for s in STATS})
    return build


def _envelope(r: AnalysisResult) -> Grid:
    return frame_grid(r["hv_envelope"], BUDGET_KEYS, {
        "v_max": _fmt(), "t_star": _fmt(0), "v_t1": _fmt(), "gap": _fmt(), "flops": _fmt()})


def _of(key: str, grid: Callable[[pd.DataFrame], Grid]) -> Build:
    return lambda r: grid(r[key])


FRONT_TABLES: tuple[tuple[str, str, Build], ...] = (
    ("front", "Final Pareto front of each run (several objectives, issue 36): its members "
              "and their objective values", _front),
    ("hypervolume", "Hypervolume of each run's final front against its group's common "
                    "reference point; hv_norm = hv / the box up to the group's ideal point",
     _hypervolume),
    ("hv_final", "Final hypervolume per configuration: mean, bootstrap SE and 95% CI, IQM "
                 "across seeds", _stats("hv_final")),
    ("hv_calls", "Hypervolume vs calls at the last call (every call in analysis.json and "
                 "the figure)", _at_end("hv_calls", "calls")),
    ("hv_table1", "Depth-breadth with hypervolume as the fitness: hv_norm (mean ± bootstrap "
                  "SE) per method at the largest budget", _of("hv_table1", mean_se_grid)),
    ("hv_envelope", "Depth-breadth with hypervolume as the fitness: the hv_norm-compute "
                    "envelope per budget", _envelope),
    ("hv_bilinear", "Depth-breadth with hypervolume as the fitness: the bilinear fit of "
                    "log(1 - hv_norm) (Eq. 2)", _of("hv_bilinear", bilinear_grid)),
    ("hv_gate", "Depth-breadth with hypervolume as the fitness: the capability gate",
     _of("hv_gate", gate_grid)),
    ("hv_thresholds", "Depth-breadth with hypervolume as the fitness: time to hv_norm "
                      "thresholds", _of("hv_thresholds", thresholds_grid)),
)


__all__ = ["FRONT_TABLES"]
