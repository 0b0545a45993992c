"""``basevolve.run`` / ``resume`` (and their async twins): the CLI's run, from Python.

Same guarantees as ``basevolve run`` because it is the same code path: the arguments
become a :class:`~basevolve.config.RunConfig` (validated once, same messages), the store
is checked before anything is written, and :func:`basevolve.engine.runner.start_run` /
``resume_run`` spend exactly C LLM calls (paper Section 3: C = T x N for greedy; Section
5, Algorithm 2: the K initial calls of BaSE count towards C), also across a resume.
Where the engine's loop runs (this thread or a worker): :mod:`basevolve.api.loop`.
"""

from __future__ import annotations

import json
import os
import typing
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path
from typing import Any, TypeAlias

from basevolve.api.checks import check_type
from basevolve.api.loop import Progress, call_async, call_blocking
from basevolve.api.result import RunResult
from basevolve.config import RunConfig, depth_from_breadth
from basevolve.engine.run_checks import checked_run
from basevolve.errors import ConfigError, TaskError
from basevolve.tasks.base import TASKS, Task

#: Default store file, the CLI's ``--store`` default.
DEFAULT_STORE = "basevolve.sqlite"

TaskSpec: TypeAlias = str | os.PathLike[str] | Task | type[Task]
ProgressArg: TypeAlias = bool | Callable[[dict[str, Any]], None]

def build_config(task: str, budget: int, depth: int | None, breadth: int | None,
                 **values: Any) -> RunConfig:
    """A validated :class:`RunConfig` from keyword arguments (unknown ones refused).

    Fields RunConfig gains later (e.g. protocol parameters) are accepted as they come:
    every field except ``task``/``budget``/``depth``/``breadth`` is a keyword here.
    """
    hints = typing.get_type_hints(RunConfig)
    known = [f.name for f in fields(RunConfig)]
    unknown = sorted(set(values) - set(known))
    if unknown:
        options = ", ".join(n for n in known if n not in ("task", "budget", "depth"))
        raise ConfigError(f"unknown option {unknown[0]!r} for basevolve.run; known: breadth, "
                          f"{options}")
    if values.get("params") is not None:  # "8B" as --params takes it (issue 24, item 2)
        from basevolve.llm.catalog import parse_params

        values["params"] = parse_params(values["params"], "params=")
    for name, value in {"budget": budget, "depth": depth, "breadth": breadth, **values}.items():
        check_type(name, value, hints.get(name, int | None))
    depth = depth_from_breadth(budget, depth, breadth)
    return checked_run(RunConfig(task=task, budget=budget, depth=depth, **values))


def resolve_task(task: Any) -> tuple[str, Task | None]:
    """(name stored in the run, task object or None to load by name/path).

    A task object keeps the trusted/untrusted split of a task file: its scorer runs
    here, in the caller's process; the programs it scores run in the sandbox.
    """
    from basevolve.tasks import check_task

    if isinstance(task, type) and issubclass(task, Task):
        try:
            task = task()
        except Exception as exc:
            raise TaskError(f"task class {task.__name__} cannot be built with no arguments: "
                            f"{type(exc).__name__}: {exc}; pass an instance instead") from exc
    if isinstance(task, Task):
        check_task(task, "given to basevolve.run")
        if task.name in TASKS and type(task) is not TASKS.get(task.name):
            raise TaskError(
                f"task name {task.name!r} is a built-in task's; give your task class another "
                "`name` (the store records tasks by name, so resume and analysis would "
                "mix them up)")
        return task.name, task
    if isinstance(task, str | os.PathLike):
        return os.fspath(task), None
    raise TaskError(f"task must be a task name, the path of a .py task file or a "
                    f"basevolve.Task instance, got {type(task).__name__} {task!r}")


def _check_progress(progress: ProgressArg) -> Callable[[str], None]:
    """Refuse a bad ``progress``; the notifier for status lines (model load, run start)."""
    if progress is True:
        from basevolve.cli.progress import say

        return say
    if progress is False or progress is None or callable(progress):
        return _quiet
    raise ConfigError(f"progress must be True, False or a callable taking a dict, got {progress!r}")


def _quiet(message: str) -> None:
    """Status lines are dropped when ``progress`` is not True."""


def _progress(progress: ProgressArg) -> tuple[Progress | None, Callable[[], None]]:
    """The CLI's live display (progress=True), the caller's callable, or nothing."""
    if progress is True:
        from basevolve.cli.progress import make_progress

        display = make_progress()
        return display, display.done
    if callable(progress):
        return progress, lambda: None
    return None, lambda: None


def _paths(store: str | os.PathLike[str], out: str | os.PathLike[str] | None
           ) -> tuple[Path, Path | None]:
    from basevolve.cli.run_cmd import check_out_dir
    from basevolve.store.schema import inspect_file

    for name, value in (("store", store), ("out", out)):
        if value is not None and not isinstance(value, str | os.PathLike):
            raise ConfigError(f"{name}= must be a file path (str or Path), got {value!r}")
    store_path = Path(store)
    inspect_file(store_path)  # refuse a foreign store before any other work (as the CLI)
    out_path = None if out is None else Path(out)
    if out_path is not None:
        check_out_dir(out_path)
    return store_path, out_path


def _note_resumable(exc: BaseException, store: Path, run_id: str) -> None:
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


def _start(task: TaskSpec, budget: int, depth: int | None, breadth: int | None, allocator: str,
           arms: int, protocol: str, model: str | None, base_url: str | None,
           store: str | os.PathLike[str], seed: int, run_id: str,
           out: str | os.PathLike[str] | None, progress: ProgressArg, options: dict[str, Any]
           ) -> tuple[Callable[[Progress], dict[str, Any]], Path, str]:
    from basevolve.engine.runner import start_run

    notify = _check_progress(progress)
    store_path, out_path = _paths(store, out)
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
        cfg = _named_by_task(cfg)       # absolute path, the run named by the task's name
    cfg = _resolve_model(cfg, model)
    if task_obj is None:  # an OpenEvolve directory's run settings, as the CLI (issue 31);
        from basevolve.engine.task_config import configure_run  # seed=0 is "not set"

        cfg = configure_run(cfg, set(options) | ({"seed"} if seed else set()), notify)

    def job(hook: Progress) -> dict[str, Any]:
        return start_run(cfg, store_path, progress=hook, out_dir=out_path, notify=notify,
                         task=task_obj)

    return job, store_path, cfg.run_id


def _resolve_model(cfg: RunConfig, model: str | None) -> RunConfig:
    """The model exactly as ``basevolve run`` resolves it (issue 24, item 1): with
    ``base_url`` and no ``model``, the one the server serves (not ``"embedded"``), after
    the names the CLI checks first; messages name this API's keywords."""
    from basevolve.allocators import ALLOCATORS
    from basevolve.argnames import PYTHON_NAMES
    from basevolve.engine.endpoints import run_model
    from basevolve.protocols import PROTOCOLS

    ALLOCATORS.get(cfg.allocator)  # unknown names before a server is asked, as the CLI
    PROTOCOLS.get(cfg.protocol)
    resolved = run_model(model, cfg.base_url, cfg.params, PYTHON_NAMES)
    return cfg if resolved == cfg.model else cfg.with_(model=resolved)


def _named_by_task(cfg: RunConfig) -> RunConfig:
    """The run id the CLI gives a run of a named task or task file (its declared name)."""
    from basevolve.config import generate_run_id
    from basevolve.tasks import load_task
    from basevolve.tasks.identity import resolve_task_spec

    spec = resolve_task_spec(cfg.task)
    return cfg.with_(task=spec, run_id=generate_run_id(load_task(spec, cfg.task_params).name))


def _resume(run_id: str, store: str | os.PathLike[str], task: TaskSpec | None,
            out: str | os.PathLike[str] | None, allow_task_change: bool, progress: ProgressArg
            ) -> tuple[Callable[[Progress], dict[str, Any]], Path]:
    from basevolve.engine.runner import resume_run

    notify = _check_progress(progress)
    check_type("allow_task_change", allow_task_change, bool)
    if not isinstance(run_id, str) or not run_id:
        raise ConfigError(f"run_id must be the non-empty name of a stored run, got {run_id!r}")
    store_path, out_path = _paths(store, out)
    task_obj = None if task is None else resolve_task(task)[1]
    if task_obj is None:
        _check_task_loadable(store_path, run_id)

    def job(hook: Progress) -> dict[str, Any]:
        return resume_run(run_id, store_path, progress=hook, out_dir=out_path,
                          allow_task_change=allow_task_change, notify=notify, task=task_obj)

    return job, store_path


def _check_task_loadable(store: Path, run_id: str) -> None:
    """A run made with a task object can only be resumed with that object again."""
    from basevolve.store import RunStore

    if not store.is_file():
        return  # resume_run says the store does not exist
    with RunStore(store, create=False) as st:
        row = st.get_run(run_id)
    if row is None or row["status"] == "finished":
        return
    name = json.loads(row["config_json"])["task"]
    path = Path(name).expanduser()
    if name not in TASKS and not (path.is_file() or path.is_dir()):
        raise TaskError(
            f"run {run_id!r} was made with the task {name!r}, which is neither a built-in "
            f"task nor a task file or directory; pass the same task again: "
            f"basevolve.resume({run_id!r}, store={str(store)!r}, task=...)")


def _finish(job: Callable[[Progress], dict[str, Any]], store: Path, run_id: str | None,
            progress: ProgressArg, blocking: bool) -> Any:
    hook, done = _progress(progress)

    def finish(summary: dict[str, Any]) -> RunResult:
        done()
        return RunResult.from_summary(summary)

    def noted(exc: BaseException) -> None:
        done()
        if run_id is not None:
            _note_resumable(exc, store, run_id)

    if blocking:
        try:
            return finish(call_blocking(job, hook))
        except BaseException as exc:
            noted(exc)
            raise

    async def wait() -> RunResult:
        try:
            return finish(await call_async(job, hook))
        except BaseException as exc:
            noted(exc)
            raise

    return wait()


def run(task: TaskSpec, budget: int, *, depth: int | None = None, breadth: int | None = None,
        allocator: str = "single", arms: int = 1, protocol: str = "greedy",
        model: str | None = None, base_url: str | None = None,
        store: str | os.PathLike[str] = DEFAULT_STORE, seed: int = 0, run_id: str = "",
        out: str | os.PathLike[str] | None = None, progress: ProgressArg = True,
        **options: Any) -> RunResult:
    """Run one fixed-budget evolution to exactly ``budget`` LLM calls; block until done.

    The Python form of ``basevolve run``: the same validation and messages, the same
    store, the same exact budget (paper Section 3, C = T x N; Section 5 for BaSE).

    Args:
        task: A built-in task name (``"circle_packing"``), the path of a ``.py`` task
            file or of an OpenEvolve task directory (docs/tasks.md), or a
            :class:`basevolve.Task` instance (or subclass) defined in code.
            Its scorer runs in this process; the programs it scores run in the sandbox.
        budget: C, the total number of LLM calls (retries and the K initial calls of
            BaSE included).
        depth: T, generations of the greedy protocol (N = C / T). Default T = C.
        breadth: N, children per generation, instead of ``depth`` (T = C / N).
        allocator: ``"single"`` (one trajectory) or a BaSE bandit (``"ucb"``,
            ``"exp3p"``, ``"thompson_plain"`` (the paper's Thompson sampling;
            ``"thompson"`` is our discounted variant), ``"random"``, ``"round_robin"``).
        arms: K, the trajectories the allocator chooses among.
        protocol: The within-trajectory protocol (``"greedy"``).
        model: Model name (FLOPs use its active parameter count).  Default: with
            ``base_url``, the one model the server lists (``GET /v1/models``), as
            ``basevolve run --base-url`` does; without, ``"embedded"`` (the offline model).
        base_url: An OpenAI-compatible endpoint, e.g. ``http://127.0.0.1:8000/v1``.
        store: The SQLite run store (created if missing).
        seed: Seed of the run (every call's seed derives from it); 0 lets an OpenEvolve
            task directory's random_seed apply.
        run_id: Name of the run; generated when empty.
        out: Folder for ``best_program.py`` and ``best.png``; nothing is written when None.
        progress: True prints a progress line on stderr; a callable receives a dict
            after every completed call (from the thread running the engine).
        **options: Any other :class:`~basevolve.config.RunConfig` field, by the CLI
            flag's name (``max_in_flight``, ``max_tokens``, ``pull``, ``cap``,
            ``reward``, ``params``, ``count_failed_attempts``, ``feedback``, ...);
            ``params`` takes the forms ``--params`` takes (``8e9``, ``"8B"``, ``"700M"``);
            ``feedback="artifacts"`` shows each parent's evaluator feedback in the next
            prompt (``--feedback artifacts``, docs/running.md); ``deterministic=True``
            tells results in the order the calls were issued, so a seeded server gives
            the same run at any ``max_in_flight`` and across :func:`resume`
            (``--deterministic``, docs/running.md); ``models=["weak,params=1.7e9",
            "strong,base_url=URL,weight=0.2"]`` (or dicts with the same keys) runs
            several models, ``model_allocator="ucb"`` chooses each call's model with a
            bandit (``--model`` repeated, docs/models.md).

    Returns:
        The finished run (:class:`RunResult`).

    Raises:
        ConfigError: A bad or inconsistent value (same message as the CLI).
        TaskError: The task cannot be loaded or does not meet the Task contract.
        StoreError: The store is foreign, or the run id exists already.
        LLMError: The endpoint does not answer.
        KeyboardInterrupt: The run was interrupted; it is stored as ``interrupted``
            and :func:`basevolve.resume` continues it (the exception's note says how).

    Inside a running event loop (Jupyter) the engine runs in a worker thread while this
    call blocks; see :func:`run_async` to await it instead.
    """
    job, store_path, rid = _start(task, budget, depth, breadth, allocator, arms, protocol,
                                  model, base_url, store, seed, run_id, out, progress, options)
    return _finish(job, store_path, rid, progress, blocking=True)


async def run_async(task: TaskSpec, budget: int, *, depth: int | None = None,
                    breadth: int | None = None, allocator: str = "single", arms: int = 1,
                    protocol: str = "greedy", model: str | None = None,
                    base_url: str | None = None, store: str | os.PathLike[str] = DEFAULT_STORE,
                    seed: int = 0, run_id: str = "", out: str | os.PathLike[str] | None = None,
                    progress: ProgressArg = False, **options: Any) -> RunResult:
    """:func:`run` as a coroutine: the engine runs in a worker thread, the caller's loop
    stays free (``await basevolve.run_async(...)`` in a notebook cell).

    Arguments, result and errors are those of :func:`run` (``progress`` defaults to
    False here).  Cancelling the awaiting task stops the run after its next completed
    call, records it as ``interrupted`` (resumable) and raises
    :class:`asyncio.CancelledError`.
    """
    job, store_path, rid = _start(task, budget, depth, breadth, allocator, arms, protocol,
                                  model, base_url, store, seed, run_id, out, progress, options)
    return await _finish(job, store_path, rid, progress, blocking=False)


def resume(run_id: str, store: str | os.PathLike[str] = DEFAULT_STORE, *,
           task: TaskSpec | None = None, out: str | os.PathLike[str] | None = None,
           allow_task_change: bool = False, progress: ProgressArg = True) -> RunResult:
    """Continue a stored run (killed, failed or interrupted) to exactly its budget.

    The Python form of ``basevolve run --resume RUN_ID``: calls that were in flight
    are re-issued once, the allocator and protocol state is replayed from the store, and
    the run ends with exactly C charged calls.  A finished run is returned as it is,
    with nothing spent.

    Args:
        run_id: The run's name (``RunResult.run_id``, or ``basevolve runs --store F``).
        store: The store holding the run.
        task: Only for a run started with a task object: the same task again (the store
            keeps the task's name, not its code).
        out: Folder for ``best_program.py`` and ``best.png``; nothing is written when None.
        allow_task_change: Continue although the task changed since the run started
            (``--allow-task-change``; the change is recorded in the store).
        progress: As for :func:`run`.

    Returns:
        The finished run; ``resumed`` is True when calls were spent now.

    Raises:
        ConfigError: The run is not in the store (the message lists the known ones).
        StoreError: The store does not exist, is foreign, or another process drives the run.
        TaskError: The run was made with a task object and ``task`` was not given.
    """
    job, store_path = _resume(run_id, store, task, out, allow_task_change, progress)
    return _finish(job, store_path, run_id, progress, blocking=True)


async def resume_async(run_id: str, store: str | os.PathLike[str] = DEFAULT_STORE, *,
                       task: TaskSpec | None = None, out: str | os.PathLike[str] | None = None,
                       allow_task_change: bool = False,
                       progress: ProgressArg = False) -> RunResult:
    """:func:`resume` as a coroutine (the engine runs in a worker thread); see :func:`run_async`."""
    job, store_path = _resume(run_id, store, task, out, allow_task_change, progress)
    return await _finish(job, store_path, run_id, progress, blocking=False)
