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


def test_trajectories_generation_of_greedy_t_by_n(store_path):
    # the fixture is greedy N = 1: each call is its own generation
    assert trajectories_table(store_path)["generation"].tolist() == [1, 2, 3]


def _failing_store(path):
    """Greedy T = 2 x N = 2 (budget 4) where two calls fail outright (not charged to C):

    seq  event
    1    ask call 0 (gen 1, slot 0)            flops 10
    2    ask call 1 (gen 1, slot 1)  -> failed, uncharged, flops 7
    3    tell call 0 (score 0.4)
    4    ask call 2 = re-issue of call 1       flops 20
    5    tell call 2 (score 0.6)
    6    ask call 3 (gen 2, slot 0)            flops 30
    7    tell call 3 (score 0.5)
    8    ask call 4 (gen 2, slot 1)  -> failed, uncharged, flops 5, never re-issued
    9    ask call 5 = gen 2 slot 1 again       flops 40   (engine reissues; here: fresh row)
    10   tell call 5 (score 0.9)
    """
    cfg = {**CONFIG, "budget": 4, "depth": 2, "breadth": 2}
    with RunStore(path) as s:
        s.create_run("f", cfg, active_params=2e9)
        s.insert_program("f", code="init", score=0.1, valid=True, generation=0, is_initial=1)

        def ask(i, gen, slot, reissue_of=None):
            return s.insert_call("f", call_index=i, seq=s.next_seq("f"), trajectory=0,
                                 pull_id=0, generation=gen, slot=slot, parent_id=None,
                                 reissue_of=reissue_of, seed=i, messages=[])

        def done(cid, flops, ok=True):
            s.finish_call(cid, status="ok" if ok else "failed", counted=ok,
                          fields={"flops": flops}, attempts=[])

        def tell(cid, gen, score):
            s.insert_program("f", code=f"p{cid}", score=score, valid=True, generation=gen,
                             call_id=cid, seq=s.next_seq("f"), trajectory=0)

        c0, c1 = ask(0, 1, 0), ask(1, 1, 1)
        done(c1, 7.0, ok=False)
        done(c0, 10.0)
        tell(c0, 1, 0.4)
        c2 = ask(2, 1, 1, reissue_of=c1)
        done(c2, 20.0)
        tell(c2, 1, 0.6)
        c3 = ask(3, 2, 0)
        done(c3, 30.0)
        tell(c3, 2, 0.5)
        c4 = ask(4, 2, 1)
        done(c4, 5.0, ok=False)
        c5 = ask(5, 2, 1)
        done(c5, 40.0)
        tell(c5, 2, 0.9)
    return path


def test_trajectory_flops_include_failed_calls_and_match_the_runs_table(tmp_path):
    """Issue 9, 5b: the paper sums FLOPs over all attempts, failed calls included."""
    path = _failing_store(tmp_path / "f.sqlite")
    df = trajectories_table(path)
    assert df["step"].tolist() == [1, 2, 3, 4]
    assert df["best_fitness"].tolist() == [0.4, 0.6, 0.6, 0.9]
    # step 1: 10; step 2: + failed 7 (charged at its re-issue's ask) + 20 = 37;
    # step 3: + 30 = 67; step 4: + 40 + the never re-issued failure 5 = 112
    assert df["cumulative_flops"].tolist() == [10.0, 37.0, 67.0, 112.0]
    assert df["cumulative_flops"].iloc[-1] == runs_table(path)["flops"].iloc[0] == 112.0
    assert df["generation"].tolist() == [1, 1, 2, 2]  # greedy T=2 x N=2: ceil(step / N)


def test_trajectory_generation_counts_pulls_across_trajectories(tmp_path):
    """BaSE with N = 1: every charged call is one generation of its trajectory, so the
    run's generation index is the call index, whichever arm the bandit pulled."""
    path = tmp_path / "b.sqlite"
    with RunStore(path) as s:
        s.create_run("b", {**CONFIG, "allocator": "ucb", "arms": 2, "budget": 4}, active_params=1)
        s.insert_program("b", code="init", score=0.0, valid=True, generation=0, is_initial=1)
        gens = {0: 0, 1: 0}
        for i, traj in enumerate([0, 1, 1, 0]):
            gens[traj] += 1
            cid = s.insert_call("b", call_index=i, seq=s.next_seq("b"), trajectory=traj,
                                pull_id=i, generation=gens[traj], slot=0, seed=i, messages=[])
            s.finish_call(cid, status="ok", counted=True, fields={"flops": 1.0}, attempts=[])
            s.insert_program("b", code=f"c{i}", score=0.1 * i, valid=True,
                             generation=gens[traj], call_id=cid, seq=s.next_seq("b"),
                             trajectory=traj)
    assert trajectories_table(path)["generation"].tolist() == [1, 2, 3, 4]


def test_children_table(store_path):
    df = children_table(store_path)
    assert list(df.columns) == CHILDREN_COLUMNS
    assert df["step"].tolist() == [1, 2, 3] and df["fitness"].tolist() == [0.2, 0.5, 0.4]


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_export_writes_tidy_tables(store_path, tmp_path, fmt):
    paths = export_tables(store_path, tmp_path / "out", fmt, run_id="r")
    names = sorted(p.stem for p in paths)
    assert names == sorted(["runs_raw", "calls", "attempts", "programs", "allocations",
                            "trajectories_raw", "eval_calls",  # issue 24, item 13
                            "model_events", "models"])  # issue 25
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
