"""Stores of multi-objective runs written through the store's public API (issue 36 tests).

The tests of fronts in ``export``, ``analyze``/``report`` and the dashboard need runs
whose config declares objectives and whose programs' metrics hold the objective values,
with known vectors, so every front and hypervolume can be checked by hand.  This writes
them exactly as the engine does -- :meth:`RunStore.create_run` with a
:class:`~basevolve.config.RunConfig`, a ``pending`` call row per call finished as
charged, a program per call with its ``metrics`` -- without an LLM or a sandbox, so the
tests stay fast and deterministic on a loaded machine.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from basevolve.config import RunConfig
from basevolve.store.sqlite import RunStore

FLOPS_PER_CALL = 1e12


@dataclass(frozen=True)
class Child:
    """One charged call's child: its metrics, validity, trajectory and score."""

    metrics: Mapping[str, Any]
    valid: bool = True
    trajectory: int = 0
    score: float = 0.0
    flops: float = FLOPS_PER_CALL


@dataclass(frozen=True)
class FrontRun:
    """A run to write: config fields, the initial program's metrics, its children."""

    run_id: str
    initial: Mapping[str, Any]
    children: Sequence[Child]
    objectives: Mapping[str, str] = field(default_factory=dict)
    reference_point: tuple[float, ...] = ()
    depth: int | None = None
    seed: int = 0
    task: str = "circle_packing"
    allocator: str = "single"
    arms: int = 1
    status: str = "finished"


def write_run(store: RunStore, run: FrontRun) -> None:
    """Write ``run`` into ``store`` (calls charged in order, each followed by its child)."""
    budget = len(run.children)
    cfg = RunConfig(task=run.task, budget=budget, depth=run.depth or budget,
                    model="test-model", params=1e9, seed=run.seed, run_id=run.run_id,
                    allocator=run.allocator, arms=run.arms,
                    objectives=dict(run.objectives), reference_point=run.reference_point)
    breadth = budget // (run.depth or budget)
    store.create_run(run.run_id, cfg.to_dict(), active_params=1e9)
    initial = store.insert_program(
        run.run_id, code="# initial\n", score=0.0, valid=True, generation=0, is_initial=1,
        seq=store.next_seq(run.run_id), trajectory=None, metrics=dict(run.initial))
    for i, child in enumerate(run.children):
        generation = i // breadth + 1 if run.arms == 1 else i + 1
        add_child(store, run.run_id, i, child, parent_id=initial, generation=generation,
                  seed=run.seed)
    store.set_status(run.run_id, run.status)


def add_child(store: RunStore, run_id: str, index: int, child: Child, *, parent_id: int,
              generation: int, seed: int = 0) -> int:
    """One charged call ``index`` and its child, as the engine writes them (the call
    ``pending`` first, then finished and charged, then the program); the program's id."""
    call_id = store.insert_call(
        run_id, call_index=index, seq=store.next_seq(run_id), trajectory=child.trajectory,
        pull_id=index, generation=generation, slot=0, parent_id=parent_id,
        seed=seed * 1000 + index, messages=[{"role": "user", "content": "improve the program"}])
    store.finish_call(call_id, status="ok", counted=True,
                      fields={"flops": child.flops, "prompt_tokens": 100, "cached_tokens": 0,
                              "completion_tokens": 50, "text": "```python\n# child\n```"},
                      attempts=[])
    return store.insert_program(
        run_id, code=f"# child {index}\n", score=child.score, valid=child.valid,
        generation=generation, call_id=call_id, seq=store.next_seq(run_id),
        trajectory=child.trajectory, parent_id=parent_id, metrics=dict(child.metrics))


def rename_objective(path: str | Path, old: str, new: str) -> None:
    """Rename objective ``old`` to ``new`` in every run's config and program's metrics, as a
    store written by another tool may name it: the engine refuses such names
    (:func:`~basevolve.objectives.parse_objectives`), the readers must still show them as
    text.  Plain ``sqlite3``: this edits rows the store's API never rewrites."""
    con = sqlite3.connect(path)
    try:
        with con:
            for run_id, text in con.execute("SELECT run_id, config_json FROM runs").fetchall():
                cfg = json.loads(text)
                if old in cfg.get("objectives", {}):
                    cfg["objectives"] = {new if k == old else k: v
                                         for k, v in cfg["objectives"].items()}
                    con.execute("UPDATE runs SET config_json = ? WHERE run_id = ?",
                                (json.dumps(cfg, sort_keys=True), run_id))
            for pid, text in con.execute("SELECT program_id, metrics_json FROM programs "
                                         "WHERE metrics_json IS NOT NULL").fetchall():
                metrics = json.loads(text)
                if old in metrics:
                    metrics[new] = metrics.pop(old)
                    con.execute("UPDATE programs SET metrics_json = ? WHERE program_id = ?",
                                (json.dumps(metrics, sort_keys=True), pid))
    finally:
        con.close()


def write_store(path: str | Path, runs: Sequence[FrontRun]) -> Path:
    """A new store at ``path`` holding ``runs``; returns the path."""
    with RunStore(path) as store:
        for run in runs:
            write_run(store, run)
    return Path(path)


__all__ = ["FLOPS_PER_CALL", "Child", "FrontRun", "add_child", "rename_objective", "write_run",
           "write_store"]
