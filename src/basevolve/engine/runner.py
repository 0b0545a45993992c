"""From a validated :class:`RunConfig` to a finished run: the library entry point.

Order matters for "bad input leaves the store untouched" (issue 4): the config is
validated, the task loaded and the endpoint probed *before* the store file is opened;
only then is the run row created.  ``resume_run`` rebuilds everything from the store.
"""

from __future__ import annotations

import asyncio
import dataclasses
import errno
import fcntl
import json
import os
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

from basevolve.config import DEFAULT_CALL_TIMEOUT_S, DEFAULT_REQUEST_TIMEOUT_S, RunConfig
from basevolve.engine.budget import plan_cost_budget
from basevolve.engine.core import Engine
from basevolve.engine.endpoints import load_model, probe_endpoint
from basevolve.engine.evaluator import needs_own_pool, start_pool
from basevolve.engine.evaluators import evaluator_for
from basevolve.engine.finished import finished_summary, finished_summary_async
from basevolve.engine.models import check_models, model_costs, model_max_tokens
from basevolve.engine.resumable import check_resumable
from basevolve.engine.run_checks import checked_run
from basevolve.engine.summary import build_summary, write_outputs
from basevolve.engine.text_eval import AnswerSetup, answer_setup, answered_by_llm, text_evaluator
from basevolve.errors import ConfigError, StoreError
from basevolve.llm.ensemble import model_entries
from basevolve.llm.settings import LLMSettings
from basevolve.store import RunStore

Progress = Callable[[dict[str, Any]], None]
Notify = Callable[[str], None]


def _quiet(message: str) -> None:
    """The default ``notify``: library callers get no output."""


def llm_settings(cfg: RunConfig) -> LLMSettings:
    """Settings for this run; with counted failed attempts the engine does the retrying.

    Why: when every attempt costs one unit of C, a client retrying internally could
    spend C+1; with ``max_retries=0`` each call is one attempt and the engine re-issues
    a failed call only while budget remains.
    """
    from basevolve.llm.flops import CHARGE_UNANSWERED

    # --max-tokens, else the model's default in the catalog (Qwen3 thinks: issue 23)
    # (the first model's own max_tokens= key first: each model has its own, issue 34)
    max_tokens = model_max_tokens(cfg, model_entries(cfg)[0])
    timeouts = cfg.llm_timeouts()  # --request-timeout / --call-timeout
    if cfg.base_url is not None:
        # The default request timeout is 4,096 tokens at ~14 tokens/s; a larger cap (a
        # thinking model's 16,000) gets the same rate, and a call three such attempts.
        if cfg.request_timeout is None:
            timeouts["attempt_timeout_s"] = max(
                DEFAULT_REQUEST_TIMEOUT_S, DEFAULT_REQUEST_TIMEOUT_S * max_tokens / 4096)
        if cfg.call_timeout is None:
            timeouts["call_deadline_s"] = max(DEFAULT_CALL_TIMEOUT_S,
                                              3 * float(timeouts["attempt_timeout_s"]))
    s = LLMSettings(count_failed_attempts=cfg.count_failed_attempts,
                    no_usage=CHARGE_UNANSWERED[cfg.charge_unanswered], max_tokens=max_tokens,
                    **timeouts)
    if cfg.count_failed_attempts or cfg.budget_kind != "calls":
        # cost budgets too: each attempt is its own reserved call (engine/budget.py)
        s = dataclasses.replace(s, max_retries=0)
    return s


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


class Prepared(NamedTuple):
    """What a run needs before its store row is written (all checked, nothing stored)."""

    task: Any
    client: Any
    settings: LLMSettings
    answers: AnswerSetup | None  # a text task's answering client
    pool: Any | None  # the sandbox pool the run evaluates on (None for a text task)


@contextmanager
def _prepared(cfg: RunConfig, notify: Notify = _quiet, task: Any | None = None,
              shared_pool: Any | None = None) -> Iterator[Prepared]:
    """Load and check everything a run needs; the pool is ``shared_pool`` (left open) or
    one started here in the background (:func:`start_pool`) and closed on leaving."""
    from basevolve.allocators import ALLOCATORS
    from basevolve.llm import make_client
    from basevolve.protocols import PROTOCOLS
    from basevolve.tasks import load_task

    task = load_task(cfg.task, cfg.task_params) if task is None else task
    ALLOCATORS.get(cfg.allocator)
    PROTOCOLS.get(cfg.protocol)
    if shared_pool is not None and needs_own_pool(task, cfg):
        shared_pool = None  # toolchains, --env or --data: a pool of the run's own (issue 31)
    own = start_pool(task, cfg) if shared_pool is None else None
    try:
        settings = llm_settings(cfg)
        client = make_client(cfg.model, cfg.base_url, params=cfg.params, settings=settings)
        check_models(cfg)  # several models (issue 25): names, endpoints, prices
        if cfg.base_url is not None:
            probe_endpoint(cfg.base_url)
        else:
            load_model(client, notify)
        answers = answer_setup(task, cfg, client, notify=notify)  # text tasks (issue 15)
        yield Prepared(task, client, settings, answers, own or shared_pool)
    finally:
        if own is not None:
            own.close()


def make_evaluator(task: Any, cfg: RunConfig, pool: Any | None, answers: AnswerSetup | None,
                   store: RunStore | None = None, *, resume: bool = False,
                   notify: Notify | None = None) -> Any:
    """The run's evaluator: the sandbox for programs, the answering LLM for text.

    On resume a text task's answer cache is refilled from the run's stored evaluation
    calls, so templates scored before the crash cost nothing when met again.
    """
    if answers is None:
        log = None if store is None else Path(f"{store.path}.scorer-errors.log")
        return evaluator_for(task, pool, scorer_log=log, notify=notify, seed=cfg.seed)
    from basevolve.llm.flops import CHARGE_UNANSWERED

    evaluator = text_evaluator(task, answers, CHARGE_UNANSWERED[cfg.charge_unanswered])
    if resume and store is not None:
        evaluator.preload(store.query(
            "SELECT status, reply, cache_key FROM eval_calls WHERE run_id=?", (cfg.run_id,)))
    return evaluator


async def _drive(cfg: RunConfig, store: RunStore, task: Any, client: Any,
                 settings: LLMSettings, evaluator: Any, *, resume: bool,
                 progress: Progress | None) -> dict[str, Any]:
    """Run the engine inside the caller's event loop; the summary as computed from the store."""
    from basevolve.engine.lost_calls import charge_lost_calls

    engine = Engine(cfg, task=task, client=client, evaluator=evaluator, store=store,
                    settings=settings, progress=progress)
    # calls sent and never answered are charged per --charge-unanswered (issue 24, item 3):
    # those a killed process left pending, and those in flight when this run stops
    if resume:
        charge_lost_calls(store, cfg, engine.active_params, engine.max_tokens,
                          engine.models.params_of(), engine.models.max_tokens_of())
    try:
        await engine.run(resume=resume)
    except BaseException:  # calls still waiting for their turn were never sent (issue 37)
        charge_lost_calls(store, cfg, engine.active_params, engine.max_tokens,
                          engine.models.params_of(), engine.models.max_tokens_of(),
                          unsent=engine.unsent)
        raise
    finally:
        await engine.models.aclose()  # the clients of the second and later models
    return build_summary(store, cfg, engine)


def _execute(cfg: RunConfig, store: RunStore, task: Any, client: Any, settings: LLMSettings,
             *, resume: bool, progress: Progress | None, out_dir: Path | None,
             pool: Any | None, notify: Notify = _quiet,
             answers: AnswerSetup | None = None) -> dict[str, Any]:
    evaluator = make_evaluator(task, cfg, pool, answers, store, resume=resume, notify=notify)

    async def go() -> dict[str, Any]:
        try:
            return await _drive(cfg, store, task, client, settings, evaluator, resume=resume,
                                progress=progress)
        finally:
            await client.aclose()

    try:
        summary = asyncio.run(go())
        summary.update(write_outputs(summary, store, task, evaluator, out_dir))
        store.write_summary(cfg.run_id, summary)
        return summary
    finally:
        asyncio.run(evaluator.aclose())


async def _execute_async(cfg: RunConfig, store: RunStore, *, resume: bool, task: Any | None,
                         client: Any | None, pool: Any | None,
                         progress: Progress | None,
                         answers: AnswerSetup | None = None) -> dict[str, Any]:
    """The async core of :func:`start_run_async` / :func:`resume_run_async`.

    A ``client`` or ``pool`` passed in is shared with other runs and stays open; what is
    created here is closed here.  No output files: ``write_outputs`` re-runs the best
    program with its own loop, which a caller's running loop cannot host.
    """
    from basevolve.tasks import load_task

    task = task if task is not None else load_task(cfg.task, cfg.task_params)
    settings = llm_settings(cfg)
    own_client = client is None
    if own_client:
        from basevolve.llm import make_client

        client = make_client(cfg.model, cfg.base_url, params=cfg.params, settings=settings)
    if answers is None:
        answers = answer_setup(task, cfg, client, probe=False)
    evaluator = make_evaluator(task, cfg, pool, answers, store, resume=resume)
    try:
        summary = await _drive(cfg, store, task, client, settings, evaluator, resume=resume,
                               progress=progress)
        summary.update({"best_program": None, "picture": None})
        await _keep_solution(summary, store, evaluator)
        store.write_summary(cfg.run_id, summary)
        return summary
    finally:
        if own_client:
            await client.aclose()
        await evaluator.aclose()


async def _keep_solution(summary: dict[str, Any], store: RunStore, evaluator: Any) -> None:
    """Store the best program's value (as ``write_outputs`` does) so readers such as the
    dashboard can draw it without running code; a failure only loses the picture.  A
    text artifact has no value to draw."""
    from basevolve.records import ExecStatus

    code = summary.get("best_code")
    task = evaluator.task
    if code is None or getattr(task, "artifact", "program") == "text" or getattr(
            task, "evaluation", "entry") != "entry":
        return
    try:
        ex = await evaluator.execute(code)
        if ex.status is ExecStatus.OK:
            store.save_solution(summary["run_id"], summary["best_program_id"], ex.value)
    except Exception as exc:  # a missing picture must not lose a finished run
        summary["picture_error"] = f"{type(exc).__name__}: {exc}"


@contextmanager
def run_lock(store_path: str | Path, run_id: str) -> Iterator[None]:
    """Hold an exclusive lock on ``run_id`` of this store while a process drives it.

    Why: a ``--resume`` launched while the run is still alive (or two resumes started
    together) would mark the other process's in-flight calls lost and both would spend
    LLM calls until one hit "call N is not pending".  A POSIX byte-range lock (one byte
    per run, at ``crc32(run_id)``) on ``<store>.lock`` lets runs of *different* ids share
    the store concurrently; the kernel drops the lock when the process dies, even by
    SIGKILL, so a killed run can always be resumed.
    """
    lock_path = Path(f"{store_path}.lock")
    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise StoreError(f"cannot create the lock file {str(lock_path)!r}: "
                         f"{exc.strerror or exc}") from None
    try:
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, zlib.crc32(run_id.encode()))
        except OSError as exc:
            if exc.errno in (errno.EACCES, errno.EAGAIN):
                raise StoreError(
                    f"run {run_id!r} in {str(store_path)!r} is being driven by another "
                    "process; wait for it to end (or stop it) before --resume") from None
            # a file system without POSIX locks: run unguarded rather than not at all
        yield
    finally:
        os.close(fd)


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
              notify: Notify = _quiet, task: Any | None = None) -> dict[str, Any]:
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
    with _prepared(cfg, notify, task_obj, pool) as prep:
        task, client, settings, answers = prep.task, prep.client, prep.settings, prep.answers
        cfg = plan_cost_budget(cfg, task, float(client.model_spec.active_params),
                               cfg.max_tokens or settings.max_tokens, _answer_params(answers),
                               model_costs(cfg))
        identity = task_identity(cfg.task, task) if task_obj is None else object_identity(task)
        with RunStore(store_path) as store, run_lock(store_path, cfg.run_id):
            store.create_run(cfg.run_id, cfg.to_dict(),
                             active_params=float(client.model_spec.active_params),
                             task=identity.to_dict())
            notify(f"run {cfg.run_id} started: {budget_words(cfg)}, task {identity.name}, "
                   f"{model_words(cfg, client.model_spec.name)}; store {store.path}")
            show_phase(progress, initial_phase(task))
            return _execute(cfg, store, task, client, settings, resume=False,
                            progress=progress, out_dir=out_dir, pool=prep.pool,
                            notify=notify, answers=answers)


def resume_run(run_id: str, store_path: str | Path, *, progress: Progress | None = None,
               out_dir: Path | None = None, pool: Any | None = None,
               allow_task_change: bool = False, notify: Notify = _quiet,
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
        with _prepared(cfg, notify, task_obj, pool) as prep:
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
            return _execute(cfg, store, task, prep.client, prep.settings, resume=True,
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
    cfg = plan_cost_budget(cfg, task, _active_params(cfg, client),
                           cfg.max_tokens or llm_settings(cfg).max_tokens, _answer_params(answers),
                           model_costs(cfg))
    store.create_run(cfg.run_id, {**(labels or {}), **cfg.to_dict()},
                     active_params=_active_params(cfg, client),
                     task=task_identity(cfg.task, task).to_dict())
    return await _execute_async(cfg, store, resume=False, task=task, client=client, pool=pool,
                                progress=progress, answers=answers)


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
    return await _execute_async(cfg, store, resume=True, task=task, client=client, pool=pool,
                                progress=progress) | {"resumed": True}


def _answer_params(answers: AnswerSetup | None) -> float | None:
    """Active parameters of a text task's answering model (its FLOPs are charged at that
    size under ``--count-eval-calls``); None for program tasks."""
    return None if answers is None else float(answers.client.model_spec.active_params)


def _active_params(cfg: RunConfig, client: Any | None) -> float:
    if client is not None:
        return float(client.model_spec.active_params)
    from basevolve.llm import resolve_model

    return float(resolve_model(cfg.model, cfg.params).active_params)
