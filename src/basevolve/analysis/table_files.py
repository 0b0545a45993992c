"""Reading a table file of the analysis (CSV or Parquet, by extension) with one clear line
per failure.

Its own module so the table contracts that read files -- the runs, trajectory and
children tables (:mod:`basevolve.analysis.tables`) and the per-model table
(:mod:`basevolve.analysis.per_model`), and the fronts table
(:mod:`basevolve.analysis.front_input`) -- share one reader without importing each other
(issue 33: ``tables`` loads the per-model rows, so ``per_model`` must not import it).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from basevolve.errors import ConfigError


def read_table(path: str | Path, what: str) -> pd.DataFrame:
    """Read a CSV or Parquet file (by extension) with clear errors."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"{what}: file {str(p)!r} does not exist; fix: check the path")
    suffix = p.suffix.lower()
    try:
        if suffix in (".parquet", ".pq"):
            return pd.read_parquet(p)
        if suffix in (".csv", ".txt", ".tsv"):
            return pd.read_csv(p, sep="\t" if suffix == ".tsv" else ",")
    except (ValueError, OSError, pd.errors.ParserError) as exc:
        raise ConfigError(
            f"{what}: cannot read {str(p)!r} ({exc}); fix: give a valid CSV/Parquet file"
        ) from None
    raise ConfigError(
        f"{what}: unknown file type {suffix!r} for {str(p)!r}; fix: use .csv or .parquet"
    )


__all__ = ["read_table"]
