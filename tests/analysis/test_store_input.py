"""``--store``: the analysis reads a real SQLite run store through basevolve.store.export."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from basevolve.cli import main

store_mod = pytest.importorskip("basevolve.store")


def make_store(path: Path) -> None:
    with store_mod.RunStore(path) as s:
        for depth in (1, 4):
            for seed in range(3):
                rid = f"d{depth}s{seed}"
                cfg = {
                    "task": "t",
                    "model": "m",
                    "protocol": "greedy",
                    "allocator": "single",
                    "arms": 1,
                    "budget": 4,
                    "depth": depth,
                    "breadth": 4 // depth,
                    "seed": seed,
                }
                s.create_run(rid, cfg, active_params=1e9)
                s.insert_program(
                    rid, code="init", score=0.1, valid=True, generation=0, is_initial=1
                )
                for i in range(4):
                    cid = s.insert_call(
                        rid,
                        call_index=i,
                        seq=s.next_seq(rid),
                        trajectory=0,
                        pull_id=0,
                        generation=i + 1,
                        slot=0,
                        parent_id=None,
                        seed=i,
                        messages=[],
                    )
                    s.finish_call(
                        cid, status="ok", counted=True, fields={"flops": 100.0}, attempts=[]
                    )
                    score = 0.2 + 0.1 * depth * (i + 1) / 4 + 0.01 * seed
                    s.insert_program(
                        rid,
                        code=f"c{i}",
                        score=score,
                        valid=True,
                        generation=i + 1,
                        call_id=cid,
                        seq=s.next_seq(rid),
                        trajectory=0,
                    )
                s.set_status(rid, "finished")
        s.create_run("unfinished", {**cfg, "seed": 9}, active_params=1e9)  # no programs yet
        # Interrupted after its initial program and one call: a partial run is not a
        # budget-4 sample, whatever its best so far (0.99 would dominate every mean).
        s.create_run("interrupted", {**cfg, "seed": 8}, active_params=1e9)
        s.insert_program("interrupted", code="init", score=0.99, valid=True, generation=0,
                         is_initial=1)
        s.set_status("interrupted", "interrupted")


def test_analyze_reads_a_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "runs.sqlite"
    make_store(path)
    code = main(
        [
            "analyze",
            "--store",
            str(path),
            "--json",
            "--resamples",
            "50",
            "--shuffles",
            "20",
            "--gate-shuffles",
            "200",
            "--thresholds",
            "0.3",
        ]
    )
    out = capsys.readouterr()
    assert code == 0, out.err
    doc = json.loads(out.out)
    summ = {r["method"]: r for r in doc["summary"]}
    assert set(summ) == {"greedy T=1", "greedy T=4"}  # the unfinished run is left out
    assert [r["n"] for r in doc["summary"]] == [3, 3]  # so is the interrupted one
    assert "left out 2 unfinished run(s)" in out.err and "--resume" in out.err
    # final best = 0.2 + 0.1 * depth + 0.01 * seed, mean over seeds 0..2
    assert summ["greedy T=4"]["mean"] == pytest.approx(0.61)
    assert summ["greedy T=1"]["mean"] == pytest.approx(0.31)
    gate = doc["gate"][0]
    # every T=4 run beats every T=1 run: only the shuffle giving T=1 the three lowest values
    # meets the observed gain, 1 / C(6, 3) = 0.05 exactly; 200 Monte Carlo shuffles ~ +-0.016
    assert gate["pen_bon"] == pytest.approx(0.3)
    assert gate["p"] == pytest.approx(0.05, abs=0.04)
    env = doc["envelope"][0]
    assert env["flops"] == pytest.approx(400.0)
    assert {r["step"] for r in doc["thresholds"]} <= {1, 2, 3, 4}


def test_store_without_finished_runs_is_a_clear_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "partial.sqlite"
    with store_mod.RunStore(path) as s:
        cfg = {"task": "t", "model": "m", "protocol": "greedy", "allocator": "single",
               "arms": 1, "budget": 4, "depth": 1, "breadth": 4, "seed": 0}
        s.create_run("r", cfg, active_params=1e9)
        s.insert_program("r", code="init", score=0.5, valid=True, generation=0, is_initial=1)
        s.set_status("r", "interrupted")
    assert main(["analyze", "--store", str(path)]) == 2
    err = capsys.readouterr().err
    assert "no finished run" in err and len(err.strip().splitlines()) == 1


# Issue 12, item 5: `export --for-analysis` writes what `analyze --input` reads; the round
# trip gives the same statistics as `analyze --store`.

ARGS = ["--json", "--resamples", "50", "--shuffles", "20", "--gate-shuffles", "50",
        "--thresholds", "0.3"]


def _analyze(capsys, *source: str) -> dict:
    assert main(["analyze", *source, *ARGS]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_export_for_analysis_round_trip(tmp_path: Path, capsys, fmt):
    store = tmp_path / "runs.sqlite"
    make_store(store)
    direct = _analyze(capsys, "--store", str(store))

    out = tmp_path / "tables"
    assert main(["export", "--store", str(store), "--for-analysis", "--format", fmt,
                 "--out", str(out), "--json"]) == 0
    paths = json.loads(capsys.readouterr().out)
    assert sorted(Path(p).name for p in paths) == sorted(
        f"{t}.{fmt}" for t in ("runs", "trajectories", "children"))
    runs = pd.read_csv(out / "runs.csv") if fmt == "csv" else pd.read_parquet(out / "runs.parquet")
    assert {"fitness", "flops"} <= set(runs.columns) and len(runs) == 6  # finished runs only

    again = _analyze(capsys, "--input", str(out / f"runs.{fmt}"), "--trajectories",
                     str(out / f"trajectories.{fmt}"), "--children", str(out / f"children.{fmt}"))
    assert again == direct


def test_plain_export_still_writes_the_stored_tables(tmp_path: Path, capsys):
    store = tmp_path / "runs.sqlite"
    make_store(store)
    assert main(["export", "--store", str(store), "--out", str(tmp_path / "raw")]) == 0
    names = {Path(p).name for p in capsys.readouterr().out.split()}
    assert {"runs_raw.csv", "calls.csv", "attempts.csv", "programs.csv",
            "trajectories_raw.csv"} <= names


def test_both_exports_share_a_folder_without_overwriting(tmp_path: Path, capsys):
    """Issue 24, item 13: ``export`` and ``export --for-analysis`` both wrote a
    ``trajectories.csv`` (and a ``runs.csv``) with different contents; into the same
    folder the second silently replaced the first.  Now no name is shared, each file
    keeps its own contents, and the tidy tables still round-trip through analyze."""
    store = tmp_path / "runs.sqlite"
    make_store(store)
    direct = _analyze(capsys, "--store", str(store))
    out = tmp_path / "both"
    assert main(["export", "--store", str(store), "--out", str(out), "--json"]) == 0
    raw = {Path(p).name for p in json.loads(capsys.readouterr().out)}
    raw_bytes = {name: (out / name).read_bytes() for name in raw}
    assert main(["export", "--store", str(store), "--out", str(out), "--for-analysis",
                 "--json"]) == 0
    tidy = {Path(p).name for p in json.loads(capsys.readouterr().out)}
    assert tidy == {"runs.csv", "trajectories.csv", "children.csv"}
    assert not raw & tidy, raw & tidy
    assert {name: (out / name).read_bytes() for name in raw} == raw_bytes  # nothing replaced
    stored = pd.read_csv(out / "trajectories_raw.csv")
    tidy_traj = pd.read_csv(out / "trajectories.csv")
    assert list(tidy_traj.columns) != list(stored.columns)  # really two different tables
    again = _analyze(capsys, "--input", str(out / "runs.csv"), "--trajectories",
                     str(out / "trajectories.csv"), "--children", str(out / "children.csv"))
    assert again == direct
