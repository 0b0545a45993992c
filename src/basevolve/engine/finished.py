"""A finished run whose outputs were never written is repaired by its resume (issue 22, item 5).

Why: the engine marks a run ``finished`` when its budget is spent, and only then are its
outputs written -- ``best_program.py`` and the picture (the best program is run once
more), the best program's value in ``solutions``, and the ``run_summary`` row.  A
process killed in between (``kill -9``, an OOM kill, a power loss) left a finished run
without them, and a resume only printed the summary computed from the store ("best
program -"), so the store never got its summary row.  Everything missing is derived
from stored rows, so a resume now rebuilds it: the ``run_summary`` row is the marker
(it is written last), and a finished run without one gets the outputs and the row a
finished process would have written.  Nothing already stored is changed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from basevolve.engine.summary import build_summary, write_outputs
from basevolve.records import ExecStatus
from basevolve.store import RunStore


def _quiet(message: str) -> None:
    """The default ``notify``: library callers get no output."""


def summary_written(store: RunStore, run_id: str) -> bool:
    """Whether the run's ``run_summary`` row exists (written last when a run finishes)."""
    return bool(store.query("SELECT 1 FROM run_summary WHERE run_id=?", (run_id,)))


#: Makes the run's evaluator for a task (the runner's ``make_evaluator``, bound to the run).
EvaluatorFactory = Callable[[Any], Any]


def _task_and_evaluator(cfg: Any, task: Any | None,
                        make_evaluator: EvaluatorFactory) -> tuple[Any, Any]:
    """The run's task (loaded from its stored spec unless given) and, for a program task,
    an evaluator to run the best program once more (text artifacts run nothing)."""
    if task is None:
        from basevolve.tasks import load_task

        task = load_task(cfg.task, cfg.task_params)
    if getattr(task, "artifact", "program") != "program":
        return task, None
    return task, make_evaluator(task)


def finished_summary(store: RunStore, cfg: Any, make_evaluator: EvaluatorFactory, *,
                     out_dir: Path | None = None, task: Any | None = None,
                     notify: Callable[[str], None] = _quiet) -> dict[str, Any]:
    """The summary of a finished run; when its outputs were never written (the process
    died after ``finished``), write them and the ``run_summary`` row now.

    The result has ``repaired`` True when something was written.  A task that no longer
    loads costs only the files and picture (``output_error`` says why): the summary row
    is written all the same.
    """
    summary = build_summary(store, cfg, None)
    if summary_written(store, cfg.run_id):
        return summary | {"repaired": False}
    notify(f"run {cfg.run_id} finished but its outputs were not written (the process "
           "stopped first); writing them now")
    try:
        task, evaluator = _task_and_evaluator(cfg, task, make_evaluator)
    except Exception as exc:  # a missing task file must not keep the summary unwritten
        summary.update({"best_program": None, "picture": None,
                        "output_error": f"cannot load task {cfg.task!r}: {exc}"})
    else:
        try:
            summary.update(write_outputs(summary, store, task, evaluator, out_dir))
        finally:
            if evaluator is not None:
                asyncio.run(evaluator.aclose())
    store.write_summary(cfg.run_id, summary)
    return summary | {"repaired": True}


async def finished_summary_async(store: RunStore, cfg: Any, make_evaluator: EvaluatorFactory,
                                 *, task: Any | None = None) -> dict[str, Any]:
    """:func:`finished_summary` inside a running event loop: no output files (as
    ``resume_run_async`` writes none), the best program's value and the summary row."""
    summary = build_summary(store, cfg, None)
    if summary_written(store, cfg.run_id):
        return summary | {"repaired": False}
    summary.update({"best_program": None, "picture": None})
    try:
        task, evaluator = _task_and_evaluator(cfg, task, make_evaluator)
    except Exception as exc:
        summary["output_error"] = f"cannot load task {cfg.task!r}: {exc}"
        evaluator = None
    if evaluator is not None:
        try:
            code = summary.get("best_code")
            ex = await evaluator.execute(code) if code is not None else None
            if ex is not None and ex.status is ExecStatus.OK:
                store.save_solution(cfg.run_id, summary["best_program_id"], ex.value)
        except Exception as exc:  # a missing picture must not lose the summary
            summary["picture_error"] = f"{type(exc).__name__}: {exc}"
        finally:
            await evaluator.aclose()
    store.write_summary(cfg.run_id, summary)
    return summary | {"repaired": True}


__all__ = ["finished_summary", "finished_summary_async", "summary_written"]
