"""Fronts of a real two-objective run, end to end (issue 36, item 5).

A real engine run (obj-core's objectives: the task's own metrics ``dmin`` max and
``dmax`` min, the reference point derived from the initial program and stored) against
the repo's test server with sandboxed scoring, into a real SQLite store; then the real
``basevolve export`` and ``basevolve analyze --json`` commands.  The oracle is recomputed
here from the stored rows with moocore: every valid program's vector, its non-dominated
set and its hypervolume against the stored reference point.  Export, analyze and the
dashboard's reader must all give that front.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import moocore
import numpy as np
import pytest

from basevolve.config import RunConfig
from basevolve.engine import start_run
from basevolve.sandbox import SandboxConfig, SandboxPool
from basevolve.testing import LLMTestServer
from basevolve.testing.replies import seeded_points_reply

OBJECTIVES = {"dmin": "max", "dmax": "min"}
NAMES = sorted(OBJECTIVES)  # a run keeps its objectives in name order


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    db = tmp_path_factory.mktemp("e2e") / "s.sqlite"
    with SandboxPool(SandboxConfig(workers=2)) as pool, LLMTestServer(seeded_points_reply) as srv:
        for seed in (0, 1):
            start_run(RunConfig(task="min_max_distance", budget=6, model="test-model",
                                params=1e9, base_url=srv.base_url, seed=seed,
                                run_id=f"mo-{seed}", objectives=OBJECTIVES), db, pool=pool)
    return db


def _oracle(db: Path, run_id: str) -> tuple[list[list[float]], float]:
    con = sqlite3.connect(db)
    try:
        cfg = json.loads(con.execute("SELECT config_json FROM runs WHERE run_id = ?",
                                     (run_id,)).fetchone()[0])
        rows = con.execute("SELECT metrics_json, valid FROM programs WHERE run_id = ?",
                           (run_id,)).fetchall()
    finally:
        con.close()
    assert list(cfg["objectives"]) == NAMES and len(cfg["reference_point"]) == 2
    vecs = []
    for text, valid in rows:
        m = json.loads(text or "{}")
        if valid and all(n in m for n in NAMES):
            vecs.append([float(m[n]) for n in NAMES])
    arr = np.asarray(vecs)
    maximise = [OBJECTIVES[n] == "max" for n in NAMES]
    front = arr[moocore.is_nondominated(arr, maximise=maximise, keep_weakly=True)]
    hv = float(moocore.hypervolume(front, ref=np.asarray(cfg["reference_point"]),
                                   maximise=maximise))
    return sorted(front.tolist()), hv


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "basevolve", *args], capture_output=True,
                          text=True, timeout=600)


def test_export_analyze_and_the_dashboard_reader_give_the_stored_front(store, tmp_path):
    from basevolve.dashboard.db import ReadOnlyStore
    from basevolve.dashboard.run_front import front_section

    out = tmp_path / "exp"
    assert _cli("export", "--store", str(store), "--out", str(out)).returncode == 0
    res = _cli("analyze", "--store", str(store), "--json", "--resamples", "20",
               "--shuffles", "20", "--gate-shuffles", "20")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout.splitlines()[-1])
    for run_id in ("mo-0", "mo-1"):
        front, hv = _oracle(store, run_id)
        exported = json.loads((out / "fronts" / f"{run_id}.json").read_text())
        assert sorted([m["vector"][n] for n in NAMES] for m in exported["members"]) == front
        assert exported["hypervolume"] == pytest.approx(hv)
        assert exported["reference_derived"] is False  # the engine stored it
        rows = [r for r in doc["front"] if r["run_id"] == run_id]
        assert sorted([r[n] for n in NAMES] for r in rows) == front
        section = front_section(ReadOnlyStore(store), run_id,
                                json.loads(sqlite3.connect(store).execute(
                                    "SELECT config_json FROM runs WHERE run_id = ?",
                                    (run_id,)).fetchone()[0]))
        assert section["hypervolume"] == pytest.approx(hv)
        assert section["curve"]["hypervolume"][-1] == pytest.approx(hv)
    # both runs share the task's derived reference (same initial program): the group's
    # common point is theirs, so analyze's per-run hv is the stored front's
    hvs = {r["run_id"]: r["hv"] for r in doc["hypervolume"]}
    assert hvs["mo-0"] == pytest.approx(_oracle(store, "mo-0")[1])
