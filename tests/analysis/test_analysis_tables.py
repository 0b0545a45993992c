"""Input contract: validation messages, loading CSV/Parquet, method names."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from basevolve.analysis.synthetic import synthetic_study
from basevolve.analysis.tables import RUN_COLUMNS, load_tables, method_name, validate_runs
from basevolve.errors import ConfigError


@pytest.fixture(scope="module")
def study() -> dict[str, pd.DataFrame]:
    return synthetic_study(np.random.default_rng(0), budgets=(8, 16), seeds=3)


def test_method_names() -> None:
    assert method_name("greedy", "single", 8, 1) == "greedy T=8"
    assert method_name("openevolve", "", 1, 1) == "openevolve"
    assert method_name("greedy", "ucb", 512, 10) == "base-ucb K=10"
    assert method_name("shinkaevolve", "thompson", 1, 5) == "shinkaevolve+base-thompson K=5"


def test_missing_column_names_it(study) -> None:
    with pytest.raises(ConfigError, match=r"missing column.*fitness"):
        validate_runs(study["runs"].drop(columns=["fitness"]))


def test_non_numeric_fitness_names_row_and_value(study) -> None:
    bad = study["runs"].copy().astype({"fitness": object})
    bad.loc[2, "fitness"] = "high"
    with pytest.raises(ConfigError, match=r"'fitness' must be numeric, found 'high' in row 2"):
        validate_runs(bad)


def test_empty_table_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="empty"):
        validate_runs(pd.DataFrame(columns=list(RUN_COLUMNS)))
    with pytest.raises(ConfigError, match="does not exist"):
        load_tables(input=tmp_path / "nope.csv")
    with pytest.raises(ConfigError, match="exactly one"):
        load_tables()


def test_csv_and_parquet_round_trip(study, tmp_path: Path) -> None:
    study["runs"].to_csv(tmp_path / "runs.csv", index=False)
    study["runs"].to_parquet(tmp_path / "runs.parquet")
    study["trajectories"].to_csv(tmp_path / "traj.csv", index=False)
    a = load_tables(input=tmp_path / "runs.csv", trajectories=tmp_path / "traj.csv")
    b = load_tables(input=tmp_path / "runs.parquet")
    assert len(a.runs) == len(b.runs) == len(study["runs"])
    assert a.runs["fitness"].tolist() == pytest.approx(b.runs["fitness"].tolist())
    assert a.trajectories is not None and b.trajectories is None
    assert {"method", "run_id"} <= set(a.runs.columns)


def test_empty_allocator_means_single(study) -> None:
    runs = study["runs"].copy()
    runs["allocator"] = runs["allocator"].where(runs["allocator"] != "single", None)
    out = validate_runs(runs)
    assert set(out["allocator"]) == {"single", "ucb", "thompson"}


def test_duplicate_run_ids_are_refused(study) -> None:
    runs = study["runs"].copy()
    runs.loc[1, "run_id"] = runs.loc[0, "run_id"]
    with pytest.raises(ConfigError, match="'run_id' must be unique"):
        validate_runs(runs)
