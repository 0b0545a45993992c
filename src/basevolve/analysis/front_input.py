"""The fronts table: the analysis input of multi-objective runs (issue 36, item 5).

**Fronts table** (optional, long format; a basevolve store writes it, ``export
--for-analysis`` writes it as ``fronts.csv``, ``analyze --fronts FILE`` reads it): one row
per (program with an objective vector, objective) of every multi-objective run:

==========  =======  =============================================================
column      dtype    meaning
==========  =======  =============================================================
run_id      any      the run (joins the runs and trajectory tables)
step        int      0 = the initial program, else the charged call (1..C) whose child
                     it is, numbered as the trajectory table's ``step``
program_id  any      optional: the program (shown in the front table)
k           int      the objective's place in the run's declaration (0, 1, ...)
objective   str      its name (the metric), shown as text, never as markup
direction   str      ``max`` or ``min``
reference   float    the run's reference point in that objective; NaN = unknown
value       float    the program's value, finite
==========  =======  =============================================================

A run with no row is a single-objective run: its analysis is unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from basevolve.analysis.table_files import read_table
from basevolve.errors import ConfigError
from basevolve.objectives import DIRECTIONS

#: the columns a fronts table must have (``program_id`` is optional); the store writes them
#: (:data:`basevolve.store.fronts_export.FRONTS_COLUMNS`)
REQUIRED = ("run_id", "step", "k", "objective", "direction", "reference", "value")


def validate_fronts(df: pd.DataFrame) -> pd.DataFrame:
    """Check a fronts table (module docstring); a clean copy sorted by run, step, k."""
    what = "fronts table"
    missing = [c for c in REQUIRED if c not in df.columns]
    if missing:
        raise ConfigError(f"{what}: missing column(s) {', '.join(missing)}; fix: the table "
                          f"needs columns {', '.join(REQUIRED)} (basevolve.analysis.front_input)")
    out = df.copy()
    if "program_id" not in out:
        out["program_id"] = np.nan
    for col, nan_ok in (("step", False), ("k", False), ("reference", True), ("value", False)):
        values = pd.to_numeric(out[col], errors="coerce")
        finite = np.isfinite(values.to_numpy(float))
        bad = ~finite & (values.notna().to_numpy() | ~nan_ok)
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise ConfigError(f"{what}: column {col!r} must hold finite numbers, found "
                              f"{df[col].iloc[row]!r} in row {row}; fix: correct that row")
        out[col] = values.astype("int64") if col in ("step", "k") else values.astype(float)
    out["objective"] = out["objective"].astype(str)
    out["direction"] = out["direction"].astype(str).str.strip()
    wrong = ~out["direction"].isin(DIRECTIONS)
    if wrong.any():
        row = int(np.flatnonzero(wrong.to_numpy())[0])
        raise ConfigError(f"{what}: column 'direction' must be max or min, found "
                          f"{df['direction'].iloc[row]!r} in row {row}")
    return out.sort_values(["run_id", "step", "k"], kind="stable").reset_index(drop=True)


def load_fronts(source: str | Path | pd.DataFrame | None, store: str | Path | None,
                run_ids: Iterable) -> pd.DataFrame | None:
    """The fronts table of the analysed runs (``source``, else the store's), or None when
    no analysed run declared objectives."""
    if source is not None:
        df = source if isinstance(source, pd.DataFrame) else read_table(source, "fronts table")
    elif store is not None:
        # on use, like tables.py's store export: moocore and the store's front reader
        # (~0.2 s) are not paid by a wrong --store's one-line error (issue 24, item 8)
        from basevolve.store.fronts_export import fronts_table

        df = fronts_table(store)
    else:
        return None
    if len(df) == 0:
        return None
    df = validate_fronts(df)
    df = df[df["run_id"].isin(set(run_ids))]
    return df.reset_index(drop=True) if len(df) else None


__all__ = ["REQUIRED", "load_fronts", "validate_fronts"]
