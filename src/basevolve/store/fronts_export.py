"""``basevolve export``: the Pareto front of every multi-objective run (issue 36, item 5).

Beside the tables, ``export`` writes for each run that declared objectives

* ``fronts/<run>.csv``: one row per front member -- ``program_id, trajectory,
  generation, call_index, score`` and one column per objective (declared order);
* ``fronts/<run>.json``: ``run_id, objectives {name: direction}, reference_point,
  reference_derived, hypervolume, members`` (each member with its vector by name).

The front and its hypervolume are :mod:`basevolve.store.run_fronts`' (the dashboard's
and ``analyze``'s too).  A single-objective run gets no file, so its export is what it
was.  File names are the run id with unsafe characters replaced, plus a short hash of
the id when anything was replaced, so two ids never share a file.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pandas as pd

from basevolve.store.run_fronts import (
    front_hypervolume,
    points,
    run_objectives,
    step_programs,
)
from basevolve.store.sqlite import RunStore

FOLDER = "fronts"
_UNSAFE = re.compile(r"[^A-Za-z0-9._+-]+")
BASE_COLUMNS = ["program_id", "trajectory", "generation", "call_index", "score"]


def file_stem(run_id: str) -> str:
    """A file name for ``run_id``: itself when safe, else sanitised + 8 hex of its hash."""
    safe = _UNSAFE.sub("_", run_id).strip(".") or "run"
    if safe == run_id:
        return safe
    return f"{safe[:80]}-{hashlib.sha256(run_id.encode()).hexdigest()[:8]}"


def front_document(query: Any, run_id: str) -> dict[str, Any] | None:
    """The JSON document of one run's front (module docstring), or None: one objective."""
    ro = run_objectives(query, run_id)
    if ro is None:
        return None
    objs = ro.objectives
    pts = [p for p in points(query, run_id, objs) if p.on_front]
    hv = None if ro.reference is None else front_hypervolume(pts, objs, ro.reference)
    return {"run_id": run_id, **ro.as_dict(), "hypervolume": hv,
            "members": [{"program_id": p.program_id, "trajectory": p.trajectory,
                         "generation": p.generation, "call_index": p.call_index,
                         "score": p.score,
                         "vector": dict(zip(objs.names, p.vector or (), strict=True))}
                        for p in pts]}


def export_fronts(store_path: str | Path, out_dir: Path, run_id: str | None = None,
                  fmt: str = "csv") -> list[Path]:
    """Write ``fronts/<run>.<fmt>`` and ``fronts/<run>.json`` per multi-objective run."""
    with RunStore(store_path, create=False) as store:
        ids = [r["run_id"] for r in store.list_runs()
               if run_id is None or r["run_id"] == run_id]
        docs = [d for d in (front_document(store.query, i) for i in ids) if d is not None]
    paths: list[Path] = []
    for doc in docs:
        folder = out_dir / FOLDER
        folder.mkdir(parents=True, exist_ok=True)
        stem = file_stem(doc["run_id"])
        names = list(doc["objectives"])
        rows = [[m[c] for c in BASE_COLUMNS] + [m["vector"][n] for n in names]
                for m in doc["members"]]
        frame = pd.DataFrame(rows, columns=[*BASE_COLUMNS, *names])
        table = folder / f"{stem}.{fmt}"
        if fmt == "parquet":
            frame.to_parquet(table, index=False)
        else:
            frame.to_csv(table, index=False)
        meta = folder / f"{stem}.json"
        meta.write_text(json.dumps(doc, allow_nan=False), encoding="utf-8")
        paths += [table, meta]
    return paths




#: the tidy fronts table (``analyze``'s input, :mod:`basevolve.analysis.front_input`)
FRONTS_COLUMNS = ["run_id", "step", "program_id", "k", "objective", "direction", "reference",
                  "value"]


def fronts_table(store_path: str | Path) -> pd.DataFrame:
    """One row per (program with a vector, objective) of every multi-objective run:
    :data:`FRONTS_COLUMNS`.  ``step`` is 0 for the initial program, else the charged
    call's step as :func:`basevolve.store.export.trajectories_table` numbers it; ``k``
    the objective's place in the declaration; ``reference`` the run's reference point
    (stored, else derived; NaN when neither)."""
    rows: list[tuple[Any, ...]] = []
    with RunStore(store_path, create=False) as store:
        for r in store.list_runs():
            ro = run_objectives(store.query, r["run_id"])
            if ro is None:
                continue
            objs = ro.objectives
            ref = ro.reference or (float("nan"),) * len(objs.names)
            for step, (pid, vector) in enumerate(step_programs(store.query, r["run_id"], objs)):
                if vector is None:
                    continue
                rows += [(r["run_id"], step, pid, k, n, d, ref[k], vector[k])
                         for k, (n, d) in enumerate(zip(objs.names, objs.directions,
                                                        strict=True))]
    return pd.DataFrame(rows, columns=FRONTS_COLUMNS)


__all__ = ["FOLDER", "FRONTS_COLUMNS", "export_fronts", "file_stem", "front_document",
           "fronts_table"]
