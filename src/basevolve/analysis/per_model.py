"""Per-model cost and gain of runs that used several models (issue 25).

A run may spread its calls over several models (``--model`` repeated: fixed weights,
roles or a model bandit).  Which model bought the improvements, and at what price in
FLOPs, tokens and dollars, is what a practitioner mixing a cheap and a strong model
wants to read next to the paper's tables.

**Per-model table** (optional input, long format; ``basevolve export`` writes it as
``models``, ``export --for-analysis`` as ``per_model``): one row per (run, model) with
``run_id, model, calls, prompt_tokens, cached_tokens, completion_tokens, flops,
cost_usd, improvements, gain`` -- the numbers of
:func:`basevolve.store.per_model.model_breakdown` (``cost_usd`` empty = unpriced).

Only runs with rows for two or more models enter the analysis: a run of one model has
nothing to break down, so analyses of single-model runs are unchanged (no ``models``
result table at all).  The result (:func:`per_model_table`) sums each quantity over the
runs of a configuration (task, the run's models, budget, method) per model, and adds
the model's share of the calls and its gain per 1e15 FLOPs.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from basevolve.analysis.table_files import read_table
from basevolve.errors import ConfigError

#: required columns of the per-model input table (``cost_usd`` may be empty)
PER_MODEL_COLUMNS: tuple[str, ...] = (
    "run_id", "model", "calls", "prompt_tokens", "cached_tokens", "completion_tokens",
    "flops", "cost_usd", "improvements", "gain")
_INTS = ("calls", "prompt_tokens", "cached_tokens", "completion_tokens", "improvements")
_SUMS = (*_INTS, "flops", "cost_usd", "gain")
#: the configuration of a row: which runs are pooled
KEYS: list[str] = ["task", "ensemble", "budget", "method", "model"]
RESULT_COLUMNS: list[str] = [*KEYS, "runs", "calls", "calls_share", "prompt_tokens",
                             "cached_tokens", "completion_tokens", "flops", "cost_usd",
                             "improvements", "gain", "gain_per_1e15_flops"]


def several_models(df: pd.DataFrame | None) -> pd.DataFrame | None:
    """The rows of the runs with two or more models, checked; None when there are none
    (then nothing about models is added to an analysis)."""
    if df is None or len(df) == 0:
        return None
    what = "per-model table"
    missing = [c for c in PER_MODEL_COLUMNS if c not in df.columns]
    if missing:
        raise ConfigError(f"{what}: missing column(s) {', '.join(missing)}; fix: the table "
                          f"needs columns {', '.join(PER_MODEL_COLUMNS)} (as `basevolve "
                          "export` writes models.csv)")
    out = df[list(PER_MODEL_COLUMNS)].copy()
    out["run_id"] = out["run_id"].astype(str)
    if out["model"].isna().any():
        raise ConfigError(f"{what}: column 'model' has a missing value; fix: name the model "
                          "of every row")
    out["model"] = out["model"].astype(str)
    for col in _SUMS:
        values = pd.to_numeric(out[col], errors="coerce")
        # empty is allowed for cost_usd alone (an unpriced model); text or inf never
        bad = (values.isna() & (out[col].notna() | (col != "cost_usd"))) | np.isinf(values)
        if bad.any():
            row = int(np.flatnonzero(bad.to_numpy())[0])
            raise ConfigError(f"{what}: column {col!r} must hold finite numbers, found "
                              f"{df[col].iloc[row]!r} in row {row}; fix: write plain numbers"
                              + (" (empty = unpriced)" if col == "cost_usd" else ""))
        out[col] = values
    if out.duplicated(["run_id", "model"]).any():
        dup = out.loc[out.duplicated(["run_id", "model"]), ["run_id", "model"]].iloc[0]
        raise ConfigError(f"{what}: run {dup['run_id']!r} has two rows for model "
                          f"{dup['model']!r}; fix: one row per (run, model)")
    n = out.groupby("run_id")["model"].transform("size")
    out = out[n >= 2].reset_index(drop=True)
    return out if len(out) else None


def load_per_model(given: str | Path | pd.DataFrame | None, store: str | Path | None,
                   run_ids: pd.Series) -> pd.DataFrame | None:
    """The per-model rows (``given``, else the store's breakdown) of the analysed runs
    ``run_ids`` that used several models; None when there are none."""
    if given is not None:
        df = given if isinstance(given, pd.DataFrame) else read_table(given, "per-model table")
    elif store is not None:
        from basevolve.store.export import models_table, several_model_runs

        several = set(several_model_runs(store))  # a sweep of one-model runs reads nothing
        df = models_table(store, only=several) if several else None
    else:
        return None
    rows = several_models(df)
    if rows is None:
        return None
    rows = rows[rows["run_id"].isin(set(run_ids.astype(str)))].reset_index(drop=True)
    return rows if len(rows) else None


def per_model_table(runs: pd.DataFrame, per_model: pd.DataFrame | None) -> pd.DataFrame | None:
    """Sums per (task, ensemble, budget, method, model) over the analysed runs (``runs``:
    validated, with ``run_id`` and ``method``); None when no analysed run used several
    models.  ``ensemble`` is the run's models, sorted and joined by ``+``; ``cost_usd``
    is empty when no run of the row priced the model."""
    if per_model is None:
        return None
    keys = runs[["run_id", "task", "budget", "method"]].assign(run_id=runs["run_id"].astype(str))
    rows = per_model.merge(keys, on="run_id", how="inner")
    if len(rows) == 0:
        return None
    rows["ensemble"] = rows.groupby("run_id")["model"].transform(
        lambda names: "+".join(sorted(names)))
    grouped = rows.groupby(KEYS, sort=True)
    out = grouped[list(_SUMS)].sum(min_count=1).reset_index()
    for col in (*_INTS, "flops", "gain"):  # min_count leaves NaN only where every run is empty
        out[col] = out[col].fillna(0)
    for col in _INTS:
        out[col] = out[col].astype("int64")
    out["runs"] = grouped["run_id"].nunique().to_numpy()
    total = out.groupby(["task", "ensemble", "budget", "method"])["calls"].transform("sum")
    out["calls_share"] = out["calls"] / total.where(total > 0)
    out["gain_per_1e15_flops"] = out["gain"] / out["flops"].where(out["flops"] > 0) * 1e15
    return out[RESULT_COLUMNS].reset_index(drop=True)


__all__ = ["KEYS", "PER_MODEL_COLUMNS", "RESULT_COLUMNS", "load_per_model", "per_model_table",
           "several_models"]
