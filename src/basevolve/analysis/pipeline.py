"""End-to-end analysis of validated tables into result DataFrames (and JSON).

:func:`analyze` is what ``basevolve analyze`` and ``basevolve report`` run.  Each
(model, task) group gets its own child generator spawned from ``config.seed`` in a
fixed order, so results do not depend on which other groups are present.

Result keys (DataFrames): ``summary``, ``cells``, ``envelope``, ``flops_fit``,
``collapse``, ``bilinear``, ``optimal_depth``, ``gate``, ``thresholds``, ``table1``,
``table6``, ``table7``; and ``models`` only when some analysed run used several models
(:mod:`basevolve.analysis.per_model`, issue 25); ``front``, ``hypervolume``, ``hv_*``
only when some analysed run declared objectives (:mod:`basevolve.analysis.fronts`,
issue 36).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from numbers import Integral
from typing import Any

import numpy as np
import pandas as pd

from basevolve.analysis.bilinear import (
    PERMUTATION_SHUFFLES,
    BilinearFit,
    fit_bilinear,
    optimal_depth,
)
from basevolve.analysis.envelope import (
    BUDGET_KEYS,
    cells,
    collapse,
    envelope,
    flops_per_call_fit,
    sweep_runs,
)
from basevolve.analysis.fronts import front_tables
from basevolve.analysis.gate import GateResult, capability_gate
from basevolve.analysis.grouped import (
    allocator_by_protocol,
    arms_table,
    methods_at_budget,
    summary,
)
from basevolve.analysis.per_model import per_model_table
from basevolve.analysis.tables import Tables
from basevolve.analysis.thresholds import time_to_threshold
from basevolve.errors import ConfigError

DEFAULT_THRESHOLDS: tuple[float, ...] = (0.5, 0.8, 0.9, 0.95, 0.99)
BILINEAR_COLUMNS: list[str] = ["task", "model", *BilinearFit.__dataclass_fields__]
GATE_COLUMNS: list[str] = [*BUDGET_KEYS, *GateResult.__dataclass_fields__]


@dataclass(frozen=True)
class AnalysisConfig:
    """Knobs of one analysis; defaults are the paper's."""

    resamples: int = 1000  # bootstrap resamples (summary SE/CI, thresholds)
    shuffles: int = PERMUTATION_SHUFFLES  # permutation shuffles for the bilinear c (Table 8)
    gate_shuffles: int = 20_000  # permutation shuffles for the capability gate (Table 4)
    seed: int = 0
    ceiling: float = 0.97  # sub-ceiling cells for Eq. 2
    thresholds: tuple[float, ...] = DEFAULT_THRESHOLDS
    #: per task, the thresholds of the sweep its runs came from (``sweep_settings``;
    #: issue 24, item 5); a task not listed uses ``thresholds``
    task_thresholds: dict[str, tuple[float, ...]] = field(default_factory=dict)
    level: float = 0.9  # Table 3: fraction of bootstrap samples reaching tau
    delta: float = 0.1  # plateau half-width tolerance (log fitness gap)
    collapse_max_v: float | None = None

    def __post_init__(self) -> None:
        for name in ("resamples", "shuffles", "gate_shuffles"):
            if getattr(self, name) < 1:
                raise ConfigError(
                    f"{name} must be >= 1, got {getattr(self, name)}; fix: pass a positive count"
                )
        if isinstance(self.seed, bool) or not isinstance(self.seed, Integral) or self.seed < 0:
            # numpy's SeedSequence takes non-negative integers only; say so up front
            # instead of failing with its ValueError deep inside the first resampling.
            raise ConfigError(
                f"seed must be a non-negative integer, got {self.seed!r}; fix: e.g. --seed 0"
            )
        if not 0 < self.ceiling <= 1:
            raise ConfigError(
                f"ceiling must be in (0, 1], got {self.ceiling}; fix: e.g. --ceiling 0.97"
            )
        if not self.thresholds or any(not math.isfinite(t) for t in self.thresholds):
            raise ConfigError(
                f"thresholds must be finite numbers, got {self.thresholds}; fix: e.g. --thresholds 0.8,0.9"
            )


@dataclass
class AnalysisResult:
    """All result tables plus the config that produced them."""

    config: AnalysisConfig
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)

    def __getitem__(self, key: str) -> pd.DataFrame:
        """The result table ``key`` (``summary``, ``envelope``, ...; see the module doc).

        Raises ConfigError, not a bare KeyError, naming the tables there are.
        """
        try:
            return self.tables[key]
        except (KeyError, TypeError):
            known = ", ".join(self.tables) or "(none)"
            raise ConfigError(f"no result table {key!r}; known: {known}") from None


def _child(seed: int, *key: Any) -> np.random.Generator:
    """A generator determined by (seed, key) only -- stable across subsets of groups."""
    words = [seed] + [
        int.from_bytes(hashlib.blake2b(str(k).encode(), digest_size=8).digest(), "little")
        for k in key
    ]
    return np.random.default_rng(np.random.SeedSequence(words))


def _bilinear_and_depth(
    cell_table: pd.DataFrame, env: pd.DataFrame, cfg: AnalysisConfig
) -> tuple[pd.DataFrame, pd.DataFrame]:
    fits, depth_rows = [], []
    for (task, model), grp in cell_table.groupby(["task", "model"], sort=True):
        fit = fit_bilinear(
            grp["depth"].to_numpy(),
            grp["breadth"].to_numpy(),
            grp["fitness"].to_numpy(),
            _child(cfg.seed, "bilinear", task, model),
            cfg.shuffles,
            cfg.ceiling,
        )
        fits.append({"task": task, "model": model, **fit.as_dict()})
        for _, e in env[(env["task"] == task) & (env["model"] == model)].iterrows():
            opt = (
                optimal_depth(fit.a, fit.b, fit.c, e["budget"], cfg.delta)
                if np.isfinite(fit.c)
                else None
            )
            depth_rows.append(
                {
                    "task": task,
                    "model": model,
                    "budget": int(e["budget"]),
                    "t_star_emp": int(e["t_star"]),
                    "v_max": e["v_max"],
                    "t_star_fit": opt.t_star if opt else float("nan"),
                    "interior": bool(opt.interior) if opt else False,
                    "location": opt.location if opt else "",
                    "half_width": opt.half_width if opt else float("nan"),
                    "t_low": opt.t_low if opt else float("nan"),
                    "t_high": opt.t_high if opt else float("nan"),
                }
            )
    return (
        pd.DataFrame(fits, columns=BILINEAR_COLUMNS),
        pd.DataFrame(
            depth_rows,
            columns=[
                "task",
                "model",
                "budget",
                "t_star_emp",
                "v_max",
                "t_star_fit",
                "interior",
                "location",
                "half_width",
                "t_low",
                "t_high",
            ],
        ),
    )


def _gate(sweep: pd.DataFrame, cfg: AnalysisConfig) -> pd.DataFrame:
    rows = []
    for (task, model, budget), grp in sweep.groupby(BUDGET_KEYS, sort=True):
        res = capability_gate(
            grp["fitness"].to_numpy(float),
            grp["depth"].to_numpy(),
            _child(cfg.seed, "gate", task, model, budget),
            cfg.gate_shuffles,
        )
        rows.append({"task": task, "model": model, "budget": int(budget), **asdict(res)})
    return pd.DataFrame(rows, columns=GATE_COLUMNS)


THRESHOLD_COLUMNS = [
    "task",
    "model",
    "budget",
    "method",
    "tau",
    "reached",
    "step",
    "generation",
    "calls",
    "flops",
    "n",
]


def _wide(
    run: np.ndarray, step: np.ndarray, values: list[np.ndarray]
) -> tuple[np.ndarray, list[np.ndarray]]:
    """Long (run, step, value) rows -> ``(n_runs, n_steps)`` matrices, forward-filled."""
    _, ri = np.unique(run, return_inverse=True)
    steps, si = np.unique(step, return_inverse=True)
    shape = (int(ri.max()) + 1, steps.size)
    last = np.full(shape, -1)
    last[ri, si] = np.arange(ri.size)  # later rows win, like "last"
    fill = np.maximum.accumulate(np.where(last >= 0, np.arange(shape[1]), -1), axis=1)
    rows = np.arange(shape[0])[:, None]
    src = np.where(fill >= 0, last[rows, np.maximum(fill, 0)], -1)
    mats = [np.where(src >= 0, v[np.maximum(src, 0)], np.nan) for v in values]
    return steps, mats


def _thresholds(runs: pd.DataFrame, traj: pd.DataFrame | None, cfg: AnalysisConfig) -> pd.DataFrame:
    if traj is None:
        return pd.DataFrame(columns=THRESHOLD_COLUMNS)
    keys = ["task", "model", "budget", "method"]
    joined = traj.merge(runs[["run_id", *keys]], on="run_id", how="inner")
    run_ids = joined["run_id"].to_numpy()
    step = joined["step"].to_numpy()
    if "generation" not in joined:
        joined["generation"] = np.nan
    cols = [
        joined[c].to_numpy(float)
        for c in ("best_fitness", "calls", "cumulative_flops", "generation")
    ]
    rows = []
    for key, pos in sorted(joined.groupby(keys, sort=True).indices.items()):
        task, model, budget, method = key
        steps, (best, calls, flops, gens) = _wide(run_ids[pos], step[pos], [c[pos] for c in cols])
        hits = time_to_threshold(
            best,
            steps,
            cfg.task_thresholds.get(task, cfg.thresholds),
            _child(cfg.seed, "thresholds", task, model, budget, method),
            cfg.resamples,
            cfg.level,
            calls=calls,
            flops=flops,
            generations=gens,
        )
        for h in hits:
            rows.append(
                {
                    "task": task,
                    "model": model,
                    "budget": int(budget),
                    "method": method,
                    "tau": h.tau,
                    "reached": h.step is not None,
                    "step": h.step,
                    "generation": h.generation,
                    "calls": h.calls,
                    "flops": h.flops,
                    "n": best.shape[0],
                }
            )
    out = pd.DataFrame(rows, columns=THRESHOLD_COLUMNS)
    # methods in a reading order (protocol, allocator, K, T), not alphabetical ("T=16" < "T=2")
    order = runs.sort_values(["protocol", "allocator", "arms", "depth"], kind="stable")[
        "method"
    ].unique()
    out["_rank"] = out["method"].map({m: i for i, m in enumerate(order)})
    out = out.sort_values(["task", "model", "budget", "_rank", "tau"], kind="stable")
    return out.drop(columns="_rank").reset_index(drop=True)


def analyze(tables: Tables, config: AnalysisConfig | None = None) -> AnalysisResult:
    """Run every analysis of the paper on validated tables (see module docstring); runs
    that declared objectives add the tables of :mod:`basevolve.analysis.fronts`."""
    cfg = config or AnalysisConfig()
    out = _one_fitness(tables, cfg)
    if tables.fronts is not None:  # several objectives (issue 36); else unchanged
        out.tables.update(front_tables(tables, cfg, _one_fitness))
    return out


def _one_fitness(tables: Tables, cfg: AnalysisConfig) -> AnalysisResult:
    """Every analysis of the paper on the tables' one fitness column."""
    runs = tables.runs
    out = AnalysisResult(cfg)
    out.tables["summary"] = summary(runs, cfg.seed, cfg.resamples)  # seeded per cell
    sweep = sweep_runs(runs)
    if tables.budget_axis != "calls":  # no fixed T under a FLOPs/token budget (Tables doc)
        sweep = sweep.iloc[0:0]
    cell_table = cells(sweep)
    env = envelope(cell_table)
    out.tables["cells"] = cell_table
    out.tables["envelope"] = env
    out.tables["flops_fit"] = flops_per_call_fit(cell_table)
    with np.errstate(divide="ignore", invalid="ignore"):
        out.tables["collapse"] = collapse(env, max_v=cfg.collapse_max_v)
    out.tables["bilinear"], out.tables["optimal_depth"] = _bilinear_and_depth(cell_table, env, cfg)
    out.tables["gate"] = _gate(sweep, cfg)
    out.tables["thresholds"] = _thresholds(runs, tables.trajectories, cfg)
    summ = out.tables["summary"]
    out.tables["table1"] = methods_at_budget(summ)
    out.tables["table6"] = allocator_by_protocol(summ)
    out.tables["table7"] = arms_table(summ)
    models = per_model_table(runs, tables.per_model)
    if models is not None:  # absent for single-model runs: their outputs stay as they were
        out.tables["models"] = models
    return out


def _clean(value: Any) -> Any:
    if isinstance(value, (float, np.floating)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.bool_):
        return bool(value)
    if value is pd.NA or value is pd.NaT:
        return None
    return value


def to_jsonable(result: AnalysisResult, keys: Sequence[str] | None = None) -> dict[str, Any]:
    """Plain dict of row lists; NaN/inf become ``None`` (JSON null)."""
    doc: dict[str, Any] = {
        "config": {
            k: _clean(v) if not isinstance(v, tuple) else list(v)
            for k, v in asdict(result.config).items()
        }
    }
    for key in keys or result.tables:
        df = result.tables[key].drop(columns=["row", "column"], errors="ignore")
        doc[key] = [{k: _clean(v) for k, v in rec.items()} for rec in df.to_dict(orient="records")]
    return doc


__all__ = ["DEFAULT_THRESHOLDS", "AnalysisConfig", "AnalysisResult", "analyze", "to_jsonable"]
