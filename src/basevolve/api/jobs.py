"""A run or resume of the Python API as a job: built from checked arguments, run in
this thread or a worker (:mod:`basevolve.api.loop`), its result or its error told.

:func:`start_job` / :func:`resume_job` check everything before anything is written (the
arguments: :mod:`basevolve.api.arguments`) and return the job that calls
:func:`basevolve.engine.runner.start_run` / ``resume_run``; :func:`finish` runs it,
blocking or awaited, with the progress display, and notes on an error how to resume.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from basevolve.api.arguments import (
    ProgressArg,
    TaskSpec,
    build_config,
    check_task_loadable,
    named_by_task,
    notifier,
    resolve_model,
    resolve_task,
    store_paths,
)
from basevolve.api.checks import check_type
from basevolve.api.loop import Progress, call_async, call_blocking
from basevolve.api.result import RunResult
from basevolve.errors import ConfigError

Job = Callable[[Progress], dict[str, Any]]


def start_job(task: TaskSpec, budget: int, depth: int | None, breadth: int | None,
              allocator: str, arms: int, protocol: str, model: str | None,
              base_url: str | None, store: str | os.PathLike[str], seed: int, run_id: str,
              out: str | os.PathLike[str] | None, progress: ProgressArg,
              options: dict[str, Any]) -> tuple[Job, Path, str]:
    """``basevolve.run``'s arguments checked (nothing written yet); the job that starts
    the run, its store and its run id."""
    from basevolve.engine.runner import start_run

    notify = notifier(progress)
    store_path, out_path = store_paths(store, out)
    name, task_obj = resolve_task(task)
    if model is not None and not isinstance(model, str):
        raise ConfigError(f"model must be a model name (str) or None, got {model!r}")
    if options.get("models"):  # several models (issue 25): the first is the run's model
        from basevolve.llm.ensemble import parse_models

        if isinstance(options["models"], str) or not isinstance(options["models"], list | tuple):
            raise ConfigError("models must be a list of models (\"NAME,key=value\" strings or "
                              f"dicts with a name), got {options['models']!r}")
        entries = parse_models(options["models"])
        options = {**options, "models": tuple(e.to_dict() for e in entries)}
        model = entries[0].name if model is None else model
    cfg = build_config(name, budget, depth, breadth, allocator=allocator, arms=arms,
                       protocol=protocol, model=model or "embedded", base_url=base_url,
                       seed=seed, run_id=run_id, **options)
    if not run_id and task_obj is None:  # as the CLI: a task file is stored by its
        cfg = named_by_task(cfg)       # absolute path, the run named by the task's name
    cfg = resolve_model(cfg, model)
    if task_obj is None:  # an OpenEvolve directory's run settings, as the CLI (issue 31);
        from basevolve.engine.task_config import configure_run  # seed=0 is "not set"

        cfg = configure_run(cfg, set(options) | ({"seed"} if seed else set()), notify)

    def job(hook: Progress) -> dict[str, Any]:
        return start_run(cfg, store_path, progress=hook, out_dir=out_path, notify=notify,
                         task=task_obj)

    return job, store_path, cfg.run_id


def resume_job(run_id: str, store: str | os.PathLike[str], task: TaskSpec | None,
               out: str | os.PathLike[str] | None, allow_task_change: bool,
               progress: ProgressArg) -> tuple[Job, Path]:
    """``basevolve.resume``'s arguments checked; the job that resumes the run, its store."""
    from basevolve.engine.runner import resume_run

    notify = notifier(progress)
    check_type("allow_task_change", allow_task_change, bool)
    if not isinstance(run_id, str) or not run_id:
        raise ConfigError(f"run_id must be the non-empty name of a stored run, got {run_id!r}")
    store_path, out_path = store_paths(store, out)
    task_obj = None if task is None else resolve_task(task)[1]
    if task_obj is None:
        check_task_loadable(store_path, run_id)

    def job(hook: Progress) -> dict[str, Any]:
        return resume_run(run_id, store_path, progress=hook, out_dir=out_path,
                          allow_task_change=allow_task_change, notify=notify, task=task_obj)

    return job, store_path


def finish(job: Job, store: Path, run_id: str | None, progress: ProgressArg,
           blocking: bool) -> Any:
    """Run ``job`` with the progress display: its :class:`RunResult` (blocking), or a
    coroutine that awaits it; an error carries a note on how to resume the run."""
    hook, done = progress_hook(progress)

    def result(summary: dict[str, Any]) -> RunResult:
        done()
        return RunResult.from_summary(summary)

    def noted(exc: BaseException) -> None:
        done()
        if run_id is not None:
            note_resumable(exc, store, run_id)

    if blocking:
        try:
            return result(call_blocking(job, hook))
        except BaseException as exc:
            noted(exc)
            raise

    async def wait() -> RunResult:
        try:
            return result(await call_async(job, hook))
        except BaseException as exc:
            noted(exc)
            raise

    return wait()


def progress_hook(progress: ProgressArg) -> tuple[Progress | None, Callable[[], None]]:
    """The CLI's live display (progress=True), the caller's callable, or nothing."""
    if progress is True:
        from basevolve.cli.progress import make_progress

        display = make_progress()
        return display, display.done
    if callable(progress):
        return progress, lambda: None
    return None, lambda: None


def note_resumable(exc: BaseException, store: Path, run_id: str) -> None:
    """Tell the caller how to continue a run that stopped part-way (exception note)."""
    from basevolve.store import RunStore

    try:
        if not store.is_file():
            return
        with RunStore(store, create=False) as st:
            row = st.get_run(run_id)
            if row is not None and row["status"] != "finished":
                from basevolve.engine.lost_calls import lost_words

                policy = json.loads(row["config_json"]).get("charge_unanswered", "worst")
                lost = lost_words(st.totals(run_id), policy)
                if lost:  # the calls in flight, charged as documented (issue 24, item 3)
                    exc.add_note(lost)
    except Exception:  # the note is a courtesy; never mask the real error
        return
    if row is not None and row["status"] != "finished":
        exc.add_note(f"run {run_id!r} is {row['status']}; continue it to its budget with "
                     f"basevolve.resume({run_id!r}, store={str(store)!r})")


__all__ = ["Job", "finish", "note_resumable", "progress_hook", "resume_job", "start_job"]
