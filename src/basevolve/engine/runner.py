"""From a validated :class:`RunConfig` to a finished run: the library entry point.

Order matters for "bad input leaves the store untouched" (issue 4): the config is
validated, the task loaded and the endpoint probed *before* the store file is opened;
only then is the run row created.  ``resume_run`` rebuilds everything from the store.

The run's parts live below this module: what it needs before its row is written
(:mod:`basevolve.engine.prepare`), driving it to exactly C calls
(:mod:`basevolve.engine.drive`) and the lock a process holds on it
(:mod:`basevolve.store.run_lock`); here are the checks, the store rows and the lines a
start or resume tells.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from basevolve.config import RunConfig
from basevolve.engine.budget import plan_cost_budget
from basevolve.engine.drive import execute, execute_async
from basevolve.engine.finished import finished_summary, finished_summary_async
from basevolve.engine.models import model_costs
from basevolve.engine.objective_start import checked, checked_async
from basevolve.engine.prepare import (
    Notify,
    Progress,
    active_params,
    answer_params,
    llm_settings,
    make_evaluator,
    prepared,
    quiet,
)
from basevolve.engine.resumable import check_resumable
from basevolve.engine.run_checks import checked_run
from basevolve.engine.text_eval import answer_setup, answered_by_llm
from basevolve.errors import ConfigError, StoreError
from basevolve.store import RunStore
from basevolve.store.run_lock import run_lock

#: the names other layers import from here (the run's settings, the run lock)
__all__ = ["budget_words", "initial_phase", "llm_settings", "model_words", "resume_run",
           "resume_run_async", "run_lock", "show_phase", "start_run", "start_run_async"]


def budget_words(cfg: RunConfig) -> str:
    """The run's budget in words, for the start/resume lines."""
    if cfg.budget_kind == "calls":
        return f"{cfg.budget} LLM calls (T={cfg.depth} x N={cfg.breadth})"
    if cfg.budget_kind == "usd":  # issue 32: was "a budget of 1 tokens"
        return f"a budget of ${cfg.budget_limit:.4g} (USD; generations of N={cfg.breadth})"
    unit = "effective FLOPs" if cfg.budget_kind == "flops" else "tokens"
    return f"a budget of {cfg.budget_limit:.4g} {unit} (generations of N={cfg.breadth})"


def model_words(cfg: RunConfig, first: str) -> str:
    """``model NAME`` or, for several models (issue 25), ``models A, B`` (issue 32: the
    start line named only the first)."""
    names = [str(m.get("name")) for m in cfg.models if m.get("name")]
    return f"models {', '.join(names)}" if len(names) > 1 else f"model {first}"


def initial_phase(task: Any) -> str:
    """What a new run does before its first LLM call (issue 24, item 9): it scores the
    initial program; a text task's template costs one answering call per question, and
    with the embedded model those take minutes on a CPU."""
    if answered_by_llm(task):
        from basevolve.engine.text_eval import worst_case_eval_units

        return f"evaluating the initial program ({worst_case_eval_units(task)} answering calls)"
    return "evaluating the initial program"


def show_phase(progress: Progress | None, text: str) -> None:
    """Tell a live display (one with a ``phase`` method, :mod:`basevolve.cli.progress`)
    what the run does until its first snapshot; a plain callable is left alone."""
    phase = getattr(progress, "phase", None)
    if callable(phase):
        phase(text)


def start_run(cfg: RunConfig, store_path: str | Path, *, progress: Progress | None = None,
              out_dir: Path | None = None, pool: Any | None = None,
              notify: Notify = quiet, task: Any | None = None) -> dict[str, Any]:
    """Create run ``cfg.run_id`` in the store and run it to exactly C calls.

    ``notify`` receives one-line messages about slow steps (model load, run start).
    ``task``: an already built task instance named ``cfg.task`` (a task defined in code,
    :func:`basevolve.run`); by default the task is loaded from ``cfg.task``.
    """
    from basevolve.tasks.identity import object_identity, resolve_task_spec, task_identity

    cfg = checked_run(cfg)  # a config built by hand is checked as the CLI's is
    if task is None and resolve_task_spec(cfg.task) != cfg.task:  # a file: absolute path
        cfg = dataclasses.replace(cfg, task=resolve_task_spec(cfg.task))
    task_obj = task
    with prepared(cfg, notify, task_obj, pool) as prep:
        task, client, settings, answers = prep.task, prep.client, prep.settings, prep.answers
        cfg = plan_cost_budget(cfg, task, float(client.model_spec.active_params),
                               cfg.max_tokens or settings.max_tokens, answer_params(answers),
                               model_costs(cfg))
        identity = task_identity(cfg.task, task) if task_obj is None else object_identity(task)
        # several objectives (issue 36): checked on the initial program before anything
        # is stored, the reference point fixed; that evaluation is the engine's
        cfg, initial = checked(cfg, task, lambda c: make_evaluator(task, c, prep.pool, answers))
        with RunStore(store_path) as store, run_lock(store_path, cfg.run_id):
            store.create_run(cfg.run_id, cfg.to_dict(),
                             active_params=float(client.model_spec.active_params),
                             task=identity.to_dict())
            notify(f"run {cfg.run_id} started: {budget_words(cfg)}, task {identity.name}, "
                   f"{model_words(cfg, client.model_spec.name)}; store {store.path}")
            show_phase(progress, initial_phase(task))
            return execute(cfg, store, task, client, settings, resume=False,
                            progress=progress, out_dir=out_dir, pool=prep.pool,
                            notify=notify, answers=answers, initial=initial)


def resume_run(run_id: str, store_path: str | Path, *, progress: Progress | None = None,
               out_dir: Path | None = None, pool: Any | None = None,
               allow_task_change: bool = False, notify: Notify = quiet,
               task: Any | None = None) -> dict[str, Any]:
    """Continue a stored run (killed, failed or interrupted) to exactly C calls.

    The task must be the one the run started with (:mod:`basevolve.tasks.identity`);
    ``allow_task_change`` continues with a changed one and records the change.
    ``task``: the task instance of a run started with a task defined in code (the store
    keeps its identity, not its code); by default the task is loaded from the stored name.
    """
    from basevolve.tasks.identity import check_resume, object_identity, task_identity

    if not Path(store_path).exists():
        raise StoreError(f"store {str(store_path)!r} does not exist; nothing to resume")
    with RunStore(store_path, create=False) as store:
        if store.get_run(run_id) is None:
            known = ", ".join(r["run_id"] for r in store.list_runs()) or "(none)"
            raise ConfigError(f"run {run_id!r} is not in {str(store_path)!r}; known runs: {known}")
    with RunStore(store_path, create=False) as store, run_lock(store_path, run_id):
        row = store.get_run(run_id)
        assert row is not None  # checked above; runs are never deleted
        cfg = checked_run(RunConfig.from_dict(json.loads(row["config_json"])))
        if row["status"] == "finished":  # outputs a killed process never wrote: now
            return finished_summary(
                store, cfg, lambda t: make_evaluator(t, cfg, pool, None, store),
                out_dir=out_dir, task=task, notify=notify) | {"resumed": False}
        if task is not None and task.name != cfg.task:
            raise ConfigError(f"run {run_id!r} was made with task {cfg.task!r}; the task "
                              f"given to resume it is named {task.name!r}")
        check_resumable(store, run_id, cfg)
        task_obj = task
        with prepared(cfg, notify, task_obj, pool) as prep:
            task = prep.task
            identity = (task_identity(cfg.task, task) if task_obj is None
                        else object_identity(task))
            if check_resume(run_id, row.get("task_sha256"), identity,
                            allow_change=allow_task_change):
                store.record_task_change(run_id, identity.to_dict())
                notify(f"{identity.label} changed since the run started; continuing as "
                       "--allow-task-change asks (recorded in the store)")
            done = store.totals(run_id)["calls_completed"]
            of = (f"{done} of {cfg.budget} LLM calls already done"
                  if cfg.budget_kind == "calls"
                  else f"{done} LLM calls already done of {budget_words(cfg)}")
            notify(f"run {run_id} resumed: {of}; store {store.path}")
            return execute(cfg, store, task, prep.client, prep.settings, resume=True,
                            progress=progress, out_dir=out_dir, pool=prep.pool,
                            notify=notify, answers=prep.answers) | {"resumed": True}


async def start_run_async(cfg: RunConfig, store: RunStore, *, task: Any | None = None,
                          client: Any | None = None, pool: Any | None = None,
                          progress: Progress | None = None,
                          labels: dict[str, Any] | None = None) -> dict[str, Any]:
    """:func:`start_run` inside a running event loop, for many runs in one process.

    Why: a sweep (issue 11) drives many runs on one loop so they share one client per
    endpoint (one in-flight limit) and one sandbox pool.  The caller has validated the
    config, probed the endpoint, opened ``store`` and holds the run's lock; ``client``
    (e.g. a limiter-wrapped shared client) and ``pool`` are borrowed, not closed.  The
    task's identity is stored as :func:`start_run` stores it.  ``labels`` (e.g.
    ``{"sweep": NAME}``, which the dashboard groups by) are stored next to the config;
    they are not run options, so a resume ignores them.
    """
    from basevolve.tasks import load_task
    from basevolve.tasks.identity import task_identity

    cfg = checked_run(cfg)
    task = task if task is not None else load_task(cfg.task, cfg.task_params)
    answers = None if client is None else answer_setup(task, cfg, client, probe=False)
    cfg = plan_cost_budget(cfg, task, active_params(cfg, client),
                           cfg.max_tokens or llm_settings(cfg).max_tokens, answer_params(answers),
                           model_costs(cfg))
    cfg, initial = await checked_async(  # several objectives (issue 36), before storing
        cfg, task, lambda c: make_evaluator(task, c, pool, answers))
    store.create_run(cfg.run_id, {**(labels or {}), **cfg.to_dict()},
                     active_params=active_params(cfg, client),
                     task=task_identity(cfg.task, task).to_dict())
    return await execute_async(cfg, store, resume=False, task=task, client=client, pool=pool,
                                progress=progress, answers=answers, initial=initial)


async def resume_run_async(run_id: str, store: RunStore, *, task: Any | None = None,
                           client: Any | None = None, pool: Any | None = None,
                           progress: Progress | None = None) -> dict[str, Any]:
    """:func:`resume_run` inside a running event loop (see :func:`start_run_async`).

    A changed task is refused as :func:`resume_run` refuses it (no override here).
    """
    from basevolve.tasks import load_task
    from basevolve.tasks.identity import check_resume, task_identity

    row = store.get_run(run_id)
    if row is None:
        raise ConfigError(f"run {run_id!r} is not in {str(store.path)!r}")
    cfg = checked_run(RunConfig.from_dict(json.loads(row["config_json"])))
    if row["status"] == "finished":  # outputs a killed process never wrote: now
        return await finished_summary_async(
            store, cfg, lambda t: make_evaluator(t, cfg, pool, None, store),
            task=task) | {"resumed": False}
    check_resumable(store, run_id, cfg)
    task = task if task is not None else load_task(cfg.task, cfg.task_params)
    check_resume(run_id, row.get("task_sha256"), task_identity(cfg.task, task),
                 allow_change=False)
    return await execute_async(cfg, store, resume=True, task=task, client=client, pool=pool,
                                progress=progress) | {"resumed": True}
