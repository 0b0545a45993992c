"""Pure statistics of the paper on tidy tables (docs/design.md style rule 4).

Input contract: :mod:`basevolve.analysis.tables`.  Statistics: :mod:`.stats` (IQM,
stratified bootstrap), :mod:`.envelope` (Section 4.1), :mod:`.bilinear` (Eq. 2,
nested models, T*(C), plateau width), :mod:`.gate` (Table 4), :mod:`.thresholds`
(Table 3), :mod:`.grouped` (Tables 1, 6, 7).  :func:`analyze` runs them all.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from basevolve.analysis.bilinear import (
        BilinearFit,
        OptimalDepth,
        fit_bilinear,
        optimal_depth,
    )
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

# Public name -> the module defining it, imported on first use (issue 24, item 8): the
# bilinear fit loads statsmodels and scipy (~1.2 s of CPU), which a command that only
# reads tables or replays logs (and every one-line error on the way) should not pay.
_LAZY: dict[str, str] = {
    **dict.fromkeys(("BilinearFit", "OptimalDepth", "fit_bilinear", "optimal_depth"),
                    "basevolve.analysis.bilinear"),
    **dict.fromkeys(("cells", "collapse", "envelope", "flops_per_call_fit"),
                    "basevolve.analysis.envelope"),
    **dict.fromkeys(("GateResult", "capability_gate"), "basevolve.analysis.gate"),
    **dict.fromkeys(("AnalysisConfig", "AnalysisResult", "analyze", "to_jsonable"),
                    "basevolve.analysis.pipeline"),
    **dict.fromkeys(("aggregate_mean", "aggregate_median", "bootstrap_estimate", "describe",
                     "iqm", "stratified_bootstrap"), "basevolve.analysis.stats"),
    **dict.fromkeys(("Tables", "load_tables", "method_name"), "basevolve.analysis.tables"),
    **dict.fromkeys(("ThresholdHit", "time_to_threshold"), "basevolve.analysis.thresholds"),
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'basevolve.analysis' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


def _envelope_function(_: types.ModuleType) -> Any:
    return importlib.import_module("basevolve.analysis.envelope").envelope


def _ignore_submodule(_: types.ModuleType, value: Any) -> None:
    """Importing the submodule ``basevolve.analysis.envelope`` sets the package's
    attribute ``envelope`` to it; the public name stays the function."""
    if not isinstance(value, types.ModuleType):
        raise AttributeError("basevolve.analysis.envelope is the function; it cannot be replaced")


class _Package(types.ModuleType):
    envelope = property(_envelope_function, _ignore_submodule)


sys.modules[__name__].__class__ = _Package

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
