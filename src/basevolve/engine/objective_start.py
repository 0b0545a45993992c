"""A multi-objective run's start: its objectives, checked on the initial program, and its
reference point, fixed once (issue 36, items 1, 2 and 7).

Where objectives come from (one path for the command line, the Python API and sweep
files, which all reach :func:`basevolve.engine.runner.start_run` or its async twin): the
run's own ``--objectives`` / ``objectives=`` / ``objectives = {...}`` when given, else the
task's declaration (a task class's ``objectives`` / ``reference_point`` attributes, a
user task file's or function task's class, an OpenEvolve directory's config;
:func:`task_objectives`).

Why the initial program is evaluated *before* the run is stored: an objective the
evaluation does not report (a typo, an OpenEvolve evaluator's metric named otherwise),
one that is NaN or infinite, or a reference point the initial program is already worse
than, is a mistake in the declaration, and the run must stop with one line (exit 2)
before anything is written -- the store file absent or unchanged.  The evaluation made
here is handed to the engine as the initial program's (it is not run twice: a measured
objective such as CPU seconds would differ), and the reference point derived from it
(:func:`basevolve.objectives.derive_reference_point`) is stored in the run's config, so
a resume measures every front against the same point.
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
from collections.abc import Callable, Mapping
from typing import Any

from basevolve.config import RunConfig
from basevolve.errors import ConfigError, TaskError
from basevolve.objectives import Objectives, derive_reference_point, parse_objectives
from basevolve.records import Evaluation


def task_objectives(cfg: RunConfig, task: Any) -> RunConfig:
    """``cfg`` with the task's declared objectives (and reference point) where the run
    gives none; the run's own declaration wins."""
    if cfg.objectives:
        return cfg
    declared = getattr(task, "objectives", None)
    if not declared:
        for given, flag in ((cfg.reference_point, "--reference-point"),
                            (cfg.reward_front != "trajectory", "--reward-front")):
            if given:
                raise ConfigError(f"{flag} needs --objectives (two or more), or a task that "
                                  f"declares objectives")
        return cfg
    name = getattr(task, "name", "the task")
    objs = parse_objectives(declared, what=f"task {name!r} objectives")
    assert objs is not None
    changes: dict[str, Any] = {"objectives": objs.as_dict()}
    point = getattr(task, "reference_point", None)
    if point and not cfg.reference_point:
        changes["reference_point"] = tuple(point) if not isinstance(point, str) else point
    return dataclasses.replace(cfg, **changes)


def _what(arg: str, name: str) -> str:
    return f"{arg}: objective {name!r}"


def check_initial(objs: Objectives, ev: Evaluation, *, arg: str = "--objectives") -> tuple[float, ...]:
    """The initial program's objective vector, or one line naming what is wrong."""
    metrics: Mapping[str, Any] = ev.metrics or {}
    missing = objs.missing(metrics)
    if missing:
        reported = ", ".join(sorted(str(k) for k in metrics)[:20]) or "no metrics"
        why = f" (its evaluation failed: {str(ev.error)[:120]})" if ev.error else ""
        raise ConfigError(f"{_what(arg, missing[0])} is not a metric the initial program's "
                          f"evaluation reports{why}; it reports: {reported}; declare "
                          f"objectives among those")
    for name in objs.names:
        v = metrics[name]
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise ConfigError(f"{_what(arg, name)} of the initial program is "
                              f"{type(v).__name__}, not a number; an objective must be a "
                              f"finite number")
        if not math.isfinite(float(v)):
            raise ConfigError(f"{_what(arg, name)} of the initial program is {float(v)}; an "
                              f"objective must be a finite number (fix the evaluator or the "
                              f"initial program)")
    vec = objs.vector(metrics)
    assert vec is not None
    return vec


def check_reference(objs: Objectives, initial: tuple[float, ...], point: tuple[float, ...],
                    *, arg: str = "--reference-point") -> None:
    """A declared reference point must be no better than the initial program in any
    objective: otherwise the initial program and every child like it add no hypervolume,
    and the reward's unit (engine/front_credit.py) is undefined."""
    for name, v, r, m in zip(objs.names, initial, point, objs.maximise, strict=True):
        if (m and r > v) or (not m and r < v):
            worse = "above" if m else "below"
            raise ConfigError(
                f"{arg}: {name} = {r:g} is {worse} the initial program's {v:g} "
                f"({'max' if m else 'min'}imised), so no program like it would count; give "
                f"a point no better than the initial program in every objective, or leave "
                f"it out to derive one")


async def objectives_at_start(cfg: RunConfig, evaluator: Any, task: Any
                              ) -> tuple[RunConfig, Evaluation | None]:
    """Evaluate the initial program and check the objectives against it; ``cfg`` with its
    reference point fixed, and the evaluation for the engine.  A single-objective run:
    ``(cfg, None)``, nothing evaluated here."""
    objs = parse_objectives(cfg.objectives or None)
    if objs is None:
        return cfg, None
    ev = await evaluator.evaluate(task.initial_program)
    if (stop := task.start_failure(ev)) is not None:
        raise TaskError(stop)  # as the engine would (issue 31, item 9), before storing
    initial = check_initial(objs, ev)
    if cfg.reference_point:
        check_reference(objs, initial, tuple(cfg.reference_point))
        return cfg, ev
    return dataclasses.replace(cfg, reference_point=derive_reference_point(initial, objs)), ev


async def checked_async(cfg: RunConfig, task: Any, make_evaluator: Callable[[RunConfig], Any]
                        ) -> tuple[RunConfig, Evaluation | None]:
    """The task's objectives applied and checked (:func:`objectives_at_start`) with an
    evaluator of its own, closed here; a single-objective run builds none."""
    cfg = task_objectives(cfg, task)
    if not cfg.objectives:
        return cfg, None
    evaluator = make_evaluator(cfg)
    try:
        return await objectives_at_start(cfg, evaluator, task)
    finally:
        await evaluator.aclose()


def checked(cfg: RunConfig, task: Any, make_evaluator: Callable[[RunConfig], Any]
            ) -> tuple[RunConfig, Evaluation | None]:
    """:func:`checked_async` for a caller without a running loop (``start_run``)."""
    cfg = task_objectives(cfg, task)
    if not cfg.objectives:
        return cfg, None
    return asyncio.run(checked_async(cfg, task, make_evaluator))


__all__ = ["check_initial", "check_reference", "checked", "checked_async",
           "objectives_at_start", "task_objectives"]
