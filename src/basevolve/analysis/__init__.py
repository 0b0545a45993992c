"""Pure statistics of the paper on tidy tables (docs/design.md style rule 4).

Input contract: :mod:`basevolve.analysis.tables`.  Statistics: :mod:`.stats` (IQM,
stratified bootstrap), :mod:`.envelope` (Section 4.1), :mod:`.bilinear` (Eq. 2,
nested models, T*(C), plateau width), :mod:`.gate` (Table 4), :mod:`.thresholds`
(Table 3), :mod:`.grouped` (Tables 1, 6, 7).  :func:`analyze` runs them all.
"""

from __future__ import annotations

from basevolve.analysis.bilinear import BilinearFit, OptimalDepth, fit_bilinear, optimal_depth
from basevolve.analysis.envelope import cells, collapse, envelope, flops_per_call_fit
from basevolve.analysis.gate import GateResult, capability_gate
from basevolve.analysis.pipeline import AnalysisConfig, AnalysisResult, analyze, to_jsonable
from basevolve.analysis.stats import (
    aggregate_mean,
    aggregate_median,
    bootstrap_estimate,
    describe,
    iqm,
    stratified_bootstrap,
)
from basevolve.analysis.tables import Tables, load_tables, method_name
from basevolve.analysis.thresholds import ThresholdHit, time_to_threshold

__all__ = [
    "AnalysisConfig",
    "AnalysisResult",
    "BilinearFit",
    "GateResult",
    "OptimalDepth",
    "Tables",
    "ThresholdHit",
    "aggregate_mean",
    "aggregate_median",
    "analyze",
    "bootstrap_estimate",
    "capability_gate",
    "cells",
    "collapse",
    "describe",
    "envelope",
    "fit_bilinear",
    "flops_per_call_fit",
    "iqm",
    "load_tables",
    "method_name",
    "optimal_depth",
    "stratified_bootstrap",
    "time_to_threshold",
    "to_jsonable",
]
