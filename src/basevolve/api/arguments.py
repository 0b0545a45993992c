"""The arguments of ``basevolve.run`` / ``resume`` checked as the CLI checks its flags.

Each check gives the CLI's message with this API's keyword names (a bad value is one
line, nothing stored): the options become a validated :class:`RunConfig`
(:func:`build_config`), the task a name or a checked task object (:func:`resolve_task`),
``store=`` / ``out=`` paths (:func:`store_paths`), ``progress=`` a notifier
(:func:`notifier`), and the model is resolved as ``basevolve run`` resolves it
(:func:`resolve_model`).  The jobs these feed: :mod:`basevolve.api.jobs`.
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
from basevolve.config import RunConfig, depth_from_breadth
from basevolve.engine.run_checks import checked_run
from basevolve.errors import ConfigError, TaskError
from basevolve.objectives import parse_objectives
from basevolve.tasks.base import TASKS, Task

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
    if isinstance(values.get("reference_point"), list):  # a list reads as well (issue 36)
        values["reference_point"] = tuple(values["reference_point"])
    if isinstance(values.get("objectives"), str):  # "accuracy:max,seconds:min" as the flag
        objs = parse_objectives(values["objectives"], what="objectives=")
        values["objectives"] = objs.as_dict() if objs is not None else {}
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


def notifier(progress: ProgressArg) -> Callable[[str], None]:
    """Refuse a bad ``progress``; the notifier for status lines (model load, run start)."""
    if progress is True:
        from basevolve.cli.progress import say

        return say
    if progress is False or progress is None or callable(progress):
        return quiet
    raise ConfigError(f"progress must be True, False or a callable taking a dict, got {progress!r}")


def quiet(message: str) -> None:
    """Status lines are dropped when ``progress`` is not True."""


def store_paths(store: str | os.PathLike[str], out: str | os.PathLike[str] | None
           ) -> tuple[Path, Path | None]:
    """``store=`` and ``out=`` as paths, checked as the CLI checks ``--store`` / ``--out``
    (a foreign store refused before any other work)."""
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


def resolve_model(cfg: RunConfig, model: str | None) -> RunConfig:
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


def named_by_task(cfg: RunConfig) -> RunConfig:
    """The run id the CLI gives a run of a named task or task file (its declared name)."""
    from basevolve.config import generate_run_id
    from basevolve.tasks import load_task
    from basevolve.tasks.identity import resolve_task_spec

    spec = resolve_task_spec(cfg.task)
    return cfg.with_(task=spec, run_id=generate_run_id(load_task(spec, cfg.task_params).name))


def check_task_loadable(store: Path, run_id: str) -> None:
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


__all__ = ["ProgressArg", "TaskSpec", "build_config", "check_task_loadable", "named_by_task",
           "notifier", "quiet", "resolve_model", "resolve_task", "store_paths"]
