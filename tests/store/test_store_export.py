"""Export tables (analysis contract) from a store filled by hand, checkable by eye."""

from __future__ import annotations

import pandas as pd
import pytest

from basevolve.errors import ConfigError
from basevolve.store import RunStore
from basevolve.store.export import (
    CHILDREN_COLUMNS,
    RUNS_COLUMNS,
    TRAJECTORY_COLUMNS,
    children_table,
    export_tables,
    runs_table,
    trajectories_table,
)

CONFIG = {"task": "t", "model": "m", "protocol": "greedy", "allocator": "single", "arms": 1,
          "budget": 3, "depth": 3, "breadth": 1, "seed": 4}


@pytest.fixture()
def store_path(tmp_path):
    path = tmp_path / "s.sqlite"
    with RunStore(path) as s:
        s.create_run("r", CONFIG, active_params=2e9)
        s.insert_program("r", code="init", score=0.3, valid=True, generation=0, is_initial=1)
        for i, score in enumerate([0.2, 0.5, 0.4]):
            cid = s.insert_call("r", call_index=i, seq=s.next_seq("r"), trajectory=0, pull_id=0,
                                generation=i + 1, slot=0, parent_id=None, seed=i, messages=[])
            s.finish_call(cid, status="ok", counted=True, fields={"flops": 10.0 * (i + 1)},
                          attempts=[])
            s.insert_program("r", code=f"c{i}", score=score, valid=True, generation=i + 1,
                             call_id=cid, seq=s.next_seq("r"), trajectory=0)
    return path


def test_runs_table(store_path):
    df = runs_table(store_path)
    assert list(df.columns) == RUNS_COLUMNS
    row = df.iloc[0]
    assert (row.run_id, row.budget, row.seed, row.fitness, row.flops, row.params) == (
        "r", 3, 4, 0.5, 60.0, 2e9)


def test_trajectories_table_is_running_best(store_path):
    df = trajectories_table(store_path)
    assert list(df.columns) == TRAJECTORY_COLUMNS
    assert df["step"].tolist() == [1, 2, 3]
    assert df["best_fitness"].tolist() == [0.3, 0.5, 0.5]  # initial 0.3 beats the 0.2 child
    assert df["cumulative_flops"].tolist() == [10.0, 30.0, 60.0]


def test_children_table(store_path):
    df = children_table(store_path)
    assert list(df.columns) == CHILDREN_COLUMNS
    assert df["step"].tolist() == [1, 2, 3] and df["fitness"].tolist() == [0.2, 0.5, 0.4]


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_export_writes_tidy_tables(store_path, tmp_path, fmt):
    paths = export_tables(store_path, tmp_path / "out", fmt, run_id="r")
    names = sorted(p.stem for p in paths)
    assert names == sorted(["runs", "calls", "attempts", "programs", "allocations", "trajectories"])
    read = pd.read_csv if fmt == "csv" else pd.read_parquet
    assert len(read(tmp_path / "out" / f"programs.{fmt}")) == 4
    assert len(read(tmp_path / "out" / f"calls.{fmt}")) == 3


def test_export_unknown_run_is_a_clear_error(store_path, tmp_path):
    with pytest.raises(ConfigError, match="not in"):
        export_tables(store_path, tmp_path / "out", "csv", run_id="nope")


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_export_to_unwritable_folder_is_one_line_exit_2(store_path, tmp_path, capsys, fmt):
    """`basevolve export --out` under a regular file used to end in a traceback."""
    from pathlib import Path

    from basevolve.cli import main

    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    before = Path(store_path).read_bytes()
    code = main(["export", "--store", str(store_path), "--format", fmt,
                 "--out", str(blocker / "x")])
    err = capsys.readouterr().err
    assert code == 2 and "cannot write the export" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert Path(store_path).read_bytes() == before
