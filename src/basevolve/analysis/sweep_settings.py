"""A sweep's own statistics settings, read back from the store (issue 24, item 5).

A sweep file's ``thresholds`` (and ``resamples``) were used only by its end-of-sweep
summary; the dashboard's reliability table used 0.9/0.95/0.99 and ``analyze`` its own
defaults, so the same sweep showed different P(fitness >= tau) rows in each view.
``basevolve sweep`` now stores with every run the settings its file gives for that run
(``sweep_settings`` next to the config: :meth:`SweepConfig.run_labels`), and every view
that shows the sweep's runs uses them unless told otherwise:

* ``analyze`` / ``report`` (store input, no ``--thresholds``): per task, the union of
  the thresholds of the sweeps its analysed runs came from (a task with none keeps the
  defaults); with no ``--resamples``, the resamples count those sweeps share;
* the dashboard's reliability table (no ``?tau=``): per cell, its runs' thresholds;
* ``sweep --status`` and the end-of-sweep summary read the sweep file itself.

Runs stored before the settings were (or outside any sweep) carry none: the defaults.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

#: The config key the settings are stored under (also read by the dashboard's SQL).
KEY = "sweep_settings"


def parse_settings(text: Any) -> dict[str, Any] | None:
    """One run's stored settings (JSON text or a dict) checked, or None when absent or
    malformed: ``{"thresholds": (floats), "resamples": int | None}``."""
    if isinstance(text, str):
        try:
            text = json.loads(text)
        except ValueError:
            return None
    if not isinstance(text, dict):
        return None
    taus = text.get("thresholds")
    if not isinstance(taus, list) or not all(
            isinstance(t, int | float) and not isinstance(t, bool) and math.isfinite(t)
            for t in taus):
        return None
    reps = text.get("resamples")
    ok = isinstance(reps, int) and not isinstance(reps, bool) and reps >= 1
    return {"thresholds": tuple(float(t) for t in taus), "resamples": reps if ok else None}


def stored_settings(store: str | Path) -> dict[str, dict[str, Any]]:
    """Run id -> its sweep settings, for the runs that have them (read-only)."""
    con = sqlite3.connect(f"file:{Path(store)}?mode=ro", uri=True)
    try:
        rows = con.execute(
            f"SELECT run_id, json_extract(config_json, '$.{KEY}') FROM runs "
            f"WHERE instr(config_json, '\"{KEY}\"') > 0").fetchall()
    except sqlite3.Error:  # not JSON, or no such table: nothing stored
        return {}
    finally:
        con.close()
    out = {}
    for run_id, text in rows:
        settings = parse_settings(text)
        if settings is not None:
            out[str(run_id)] = settings
    return out


def union_thresholds(settings: Iterable[Mapping[str, Any] | None]) -> tuple[float, ...]:
    """The sorted union of the thresholds of several runs' settings."""
    return tuple(sorted({t for s in settings if s for t in s["thresholds"]}))


def analysis_settings(by_run: Mapping[str, Mapping[str, Any]],
                      runs: Iterable[tuple[str, str]]
                      ) -> tuple[dict[str, tuple[float, ...]], int | None]:
    """(per task: its sweeps' thresholds, the one resamples count) for the analysed runs
    given as (run_id, task) pairs; resamples is None unless every run that has settings
    agrees on it."""
    per_task: dict[str, list[Mapping[str, Any]]] = {}
    counts = set()
    for run_id, task in runs:
        s = by_run.get(str(run_id))
        if s is None:
            continue
        per_task.setdefault(str(task), []).append(s)
        counts.add(s["resamples"])
    taus = {task: union_thresholds(ss) for task, ss in per_task.items()}
    resamples = counts.pop() if len(counts) == 1 else None
    return {task: t for task, t in taus.items() if t}, resamples


def with_sweep_settings(cfg: Any, runs: Any, store: str | Path, *, thresholds: bool,
                        resamples: bool) -> Any:
    """``cfg`` (an :class:`~basevolve.analysis.pipeline.AnalysisConfig`) with the
    sweeps' own thresholds (if ``thresholds``: none were given) and resamples (if
    ``resamples``) for the runs table ``runs`` read from ``store``."""
    import dataclasses

    if not (thresholds or resamples) or "run_id" not in runs:
        return cfg
    per_task, reps = analysis_settings(
        stored_settings(store), zip(runs["run_id"].astype(str), runs["task"].astype(str),
                                    strict=True))
    changes: dict[str, Any] = {}
    if thresholds and per_task:
        changes["task_thresholds"] = per_task
    if resamples and reps is not None:
        changes["resamples"] = reps
    return dataclasses.replace(cfg, **changes) if changes else cfg


__all__ = ["KEY", "analysis_settings", "parse_settings", "stored_settings",
           "union_thresholds", "with_sweep_settings"]
