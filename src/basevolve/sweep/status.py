"""``basevolve sweep CONFIG --store FILE --status``: where a sweep stands (issue 11, part 4).

Works while the sweep runs in another process: the store is opened read-only
(``mode=ro``; SQLite WAL lets readers run beside the writer) and run locks are only
*tested* (``F_GETLK``), never taken, so looking can neither block nor disturb the
sweep.  A run the store says is ``running`` but whose lock is free was left behind by
a process that died: it is reported as ``interrupted`` (the next sweep resumes it).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from basevolve.sweep.config import SweepConfig
from basevolve.sweep.locks import holder
from basevolve.sweep.progress import cell_labels
from basevolve.sweep.reliability import reliability, render_reliability
from basevolve.sweep.stored import read_state
from basevolve.terminal import clean, clean_lines

STATES = ("finished", "running", "interrupted", "failed", "pending")


def sweep_status(sweep: SweepConfig, store_path: str | Path, *,
                 every_run: bool = True) -> dict[str, Any]:
    """The status document (``--status --json`` prints it as is).

    ``every_run=False`` keeps only the failed runs in ``run_list`` (all the text view
    shows): a grid of 100,000 runs then costs no dictionary per run (issue 22, item 6).
    """
    stored = read_state(store_path, configs=False)
    labels = cell_labels(sweep.runs)
    counts = dict.fromkeys(STATES, 0)
    cells: dict[Any, dict[str, Any]] = {}
    runs = []
    calls = flops = 0.0
    for run in sweep.runs:
        row = stored.get(run.run_id)
        state = _state(row, store_path, run.run_id)
        counts[state] += 1
        c = row["calls"] if row else 0
        calls += c
        flops += row["flops"] if row else 0.0
        best = row["best"] if row else None
        if every_run or state == "failed":
            runs.append({"run_id": run.run_id, "cell": labels[run.cell], "status": state,
                         "calls": c, "budget": run.template.config.budget, "best": best,
                         "error": row.get("error") if row and state == "failed" else None})
        cell = cells.setdefault(run.cell, {"cell": labels[run.cell], "runs": 0,
                                           **dict.fromkeys(STATES, 0), "best": None})
        cell["runs"] += 1
        cell[state] += 1
        if best is not None and (cell["best"] is None or best > cell["best"]):
            cell["best"] = best
    return {
        "sweep": sweep.name, "store": str(store_path), "runs_total": len(sweep.runs),
        "runs": counts, "calls": int(calls),
        "calls_total": sweep.runs.total_budget(), "flops": flops,
        "cost_runs": sweep.runs.cost_runs(),  # not in calls_total: no C (sweep/cost.py)
        "complete": counts["finished"] == len(sweep.runs),
        "cells": list(cells.values()), "run_list": runs,
        # the end-of-sweep summary so far: this sweep's thresholds, per-cell CIs (issue 24)
        "reliability": reliability(sweep, str(store_path), stored=stored),
    }


def _state(row: dict[str, Any] | None, store_path: str | Path, run_id: str) -> str:
    if row is None:  # the Ray executor writes a run when it is complete; a held lock
        return "running" if holder(store_path, run_id) else "pending"  # means in progress
    status = row["status"]
    if status == "finished":
        return "finished"
    if status == "failed":
        return "failed"
    return "running" if holder(store_path, run_id) else (
        "pending" if status == "created" and not row["calls"] else "interrupted")


def render_status(doc: dict[str, Any]) -> str:
    """The text form of :func:`sweep_status`; names and errors are printed clean
    (:mod:`basevolve.terminal`): a failed run's error quotes a server or a program."""
    r = doc["runs"]
    lines = [
        f"sweep {doc['sweep']} in {doc['store']}: {r['finished']}/{doc['runs_total']} runs "
        f"finished, {r['running']} running, {r['interrupted']} interrupted, {r['failed']} "
        f"failed, {r['pending']} not started",
        f"calls {doc['calls']}"
        f"{'' if doc.get('cost_runs') else '/' + str(doc['calls_total'])}, "
        f"effective FLOPs {doc['flops']:.4g}",
        "",
    ]
    width = max([len(c["cell"]) for c in doc["cells"]] + [4])
    lines.append(f"{'cell':<{width}}  finished  running  best")
    for c in doc["cells"]:
        best = "-" if c["best"] is None else f"{c['best']:.4f}"
        lines.append(f"{c['cell']:<{width}}  {c['finished']:>4}/{c['runs']:<3}  "
                     f"{c['running']:>7}  {best}")
    failed = [x for x in doc["run_list"] if x["status"] == "failed"]
    for x in failed[:10]:
        lines.append(f"failed: {clean(x['run_id'])}: {clean(x['error'])}")
    if doc.get("reliability"):  # with the sweep file's thresholds, as its summary shows
        lines += ["", render_reliability(doc["reliability"], doc["store"])]
    if not doc["complete"]:
        lines.append("")
        lines.append("rerun the same `basevolve sweep` command to finish the rest "
                     "(finished runs are skipped, interrupted ones resumed)")
    return clean_lines("\n".join(lines))


def interrupted_words(store_path: str | Path, command: str, since: float = 0.0) -> list[str]:
    """What an interrupted sweep prints (issue 37, item 8): the calls this session lost
    in flight (marked since ``since``, a ``time.time()``) and their charge, as
    ``basevolve run`` says it, then the command that continues the sweep.  The Ray
    executor's runs keep their calls in the nodes' scratch stores until they finish, so
    there the charge shows when the resumed runs are imported."""
    from basevolve.engine.lost_calls import lost_words

    lines = []
    try:
        con = sqlite3.connect(f"file:{Path(store_path)}?mode=ro", uri=True, timeout=30.0)
        try:
            r = con.execute("SELECT count(*), coalesce(sum(flops > 0), 0), "
                            "coalesce(sum(flops), 0) FROM calls WHERE status='lost' "
                            "AND completed_at >= ?", (since,)).fetchone()
            policies = {p for (p,) in con.execute(  # --charge-unanswered of the runs
                "SELECT DISTINCT coalesce(json_extract(config_json, '$.charge_unanswered'), "
                "'worst') FROM runs")}
        finally:
            con.close()
        words = lost_words({"calls_lost": r[0], "calls_lost_charged": r[1],
                            "flops_lost": r[2]}, "none" if policies == {"none"} else "worst")
        if words:
            lines.append(f"basevolve: {words}")
    except sqlite3.Error:  # no store yet (interrupted while starting): nothing was charged
        pass
    lines.append(f"interrupted — continue with `{command}` (finished runs are kept, "
                 "the others resume)")
    return lines


__all__ = ["interrupted_words", "render_status", "sweep_status"]
