"""``export`` writes every multi-objective run's front (issue 36, item 5).

Real SQLite stores written through the store's public API (:mod:`basevolve.testing.front_runs`)
with hand-checkable vectors: the front, its hypervolume and the files are computed here
by hand.  A single-objective run gets no front file (its export is unchanged), and a
hostile objective name or run id is data in the files, never a path or markup.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys

import pandas as pd
import pytest

from basevolve.store.fronts_export import file_stem, front_document
from basevolve.store.run_fronts import hypervolume_curve, run_objectives, step_vectors
from basevolve.store.sqlite import RunStore
from basevolve.testing.front_runs import Child, FrontRun, write_store

OBJS = {"acc": "max", "sec": "min"}
KIDS = [Child({"acc": 0.5, "sec": 2.0}), Child({"acc": 0.8, "sec": 3.0}),
        Child({"acc": 0.4, "sec": 4.0}),  # dominated by the first
        Child({"acc": 0.9, "sec": 1.0}, valid=False),  # invalid: on no front
        Child({"acc": float("nan"), "sec": 0.5}),  # no vector
        Child({"sec": 0.1})]  # an objective missing


@pytest.fixture
def store(tmp_path):
    return write_store(tmp_path / "s.sqlite", [
        FrontRun("mo", {"acc": 0.2, "sec": 5.0}, KIDS, objectives=OBJS,
                 reference_point=(0.0, 10.0)),
        FrontRun("derived", {"acc": 0.2, "sec": 5.0}, KIDS[:2], objectives=OBJS),
        FrontRun("single", {"score": 1.0}, [Child({"score": 0.3})] * 2),
    ])


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "basevolve", *args], capture_output=True,
                          text=True, timeout=300)


def test_front_and_hypervolume_by_hand(store):
    with RunStore(store, create=False) as s:
        doc = front_document(s.query, "mo")
        # (0.8, 3): 0.8 x (10 - 3) = 5.6; (0.5, 2) adds 0.5 x (3 - 2) = 0.5
        assert doc["hypervolume"] == pytest.approx(6.1)
        assert [m["vector"] for m in doc["members"]] == [{"acc": 0.5, "sec": 2.0},
                                                         {"acc": 0.8, "sec": 3.0}]
        assert doc["reference_point"] == [0.0, 10.0] and not doc["reference_derived"]
        start, steps = step_vectors(s.query, "mo", run_objectives(s.query, "mo").objectives)
        # initial (0.2, 5): 0.2 x 5 = 1.0; then 0.5 x 8 = 4.0; then 6.1; never down
        curve = hypervolume_curve(start, steps, run_objectives(s.query, "mo").objectives,
                                  (0.0, 10.0))
        assert curve == pytest.approx([1.0, 4.0, 6.1, 6.1, 6.1, 6.1, 6.1])
        assert front_document(s.query, "single") is None


def test_a_run_without_a_stored_reference_derives_the_engines_point(store):
    with RunStore(store, create=False) as s:
        ro = run_objectives(s.query, "derived")
        # initial (0.2, 5): 0.2 - max(0.2, 1) = -0.8; 5 + max(5, 1) = 10
        assert ro.reference == (-0.8, 10.0) and ro.derived
        doc = front_document(s.query, "derived")
        assert doc["reference_derived"] is True
        assert doc["hypervolume"] == pytest.approx(1.6 * 7 + 1.3 * 1)


def test_export_writes_a_front_file_per_multi_objective_run(store, tmp_path):
    out = tmp_path / "exp"
    res = _cli("export", "--store", str(store), "--out", str(out), "--json")
    assert res.returncode == 0, res.stderr
    written = json.loads(res.stdout.splitlines()[-1])
    fronts = sorted(p for p in written if "/fronts/" in p)
    assert [p.rsplit("/", 1)[1] for p in fronts] == ["derived.csv", "derived.json",
                                                     "mo.csv", "mo.json"]
    table = pd.read_csv(out / "fronts" / "mo.csv")
    assert list(table.columns) == ["program_id", "trajectory", "generation", "call_index",
                                   "score", "acc", "sec"]
    assert table[["acc", "sec"]].values.tolist() == [[0.5, 2.0], [0.8, 3.0]]
    doc = json.loads((out / "fronts" / "mo.json").read_text())
    assert doc["hypervolume"] == pytest.approx(6.1)
    one = tmp_path / "one"  # --run: that run only; a single-objective run: no front file
    assert _cli("export", "--store", str(store), "--out", str(one), "--run", "single"
                ).returncode == 0
    assert not (one / "fronts").exists()


def test_hostile_objective_names_and_run_ids_are_data(tmp_path):
    evil = '<img src=x onerror=alert(1)>\x1b[31m'
    run_id = "../evil/<b>"
    store = write_store(tmp_path / "s.sqlite", [])
    with RunStore(store) as s:  # a store another tool wrote: names the engine refuses
        from basevolve.testing.front_runs import write_run

        write_run(s, FrontRun("tmp", {"a": 1.0, "b": 1.0}, [Child({"a": 2.0, "b": 0.5})],
                              objectives={"a": "max", "b": "min"}, reference_point=(0, 2)))
        cfg = json.loads(s.query("SELECT config_json FROM runs")[0][0])
        cfg["objectives"] = {evil: "max", "b": "min"}
        s.db.execute("UPDATE runs SET config_json = ?", (json.dumps(cfg),))
        s.db.execute("UPDATE programs SET metrics_json = json_object(?, 2.0, 'b', 0.5) "
                     "WHERE is_initial = 0", (evil,))
        s.db.commit()
    con = sqlite3.connect(store)  # no foreign-key enforcement: rename in every table
    with con:
        for table in ("programs", "calls", "trajectories", "runs"):
            con.execute(f"UPDATE {table} SET run_id = ?", (run_id,))
    con.close()
    out = tmp_path / "exp"
    res = _cli("export", "--store", str(store), "--out", str(out), "--json")
    assert res.returncode == 0, res.stderr
    files = sorted((out / "fronts").iterdir())
    assert all(f.parent == out / "fronts" for f in files)  # never outside the folder
    assert file_stem(run_id) != file_stem("__evil__b_") and "/" not in file_stem(run_id)
    doc = json.loads(next(f for f in files if f.suffix == ".json").read_text())
    assert doc["run_id"] == run_id and list(doc["objectives"]) == [evil, "b"]
    assert doc["members"][0]["vector"] == {evil: 2.0, "b": 0.5}
