"""Loading a task: a registered name, a user's ``my_task.py`` file or an OpenEvolve task
directory (:mod:`basevolve.tasks.openevolve_dir`).

Contract for a user task file (kept deliberately small):

* it is ordinary Python, imported **in the parent process** (it is the user's own
  trusted scorer, not an evolved program);
* it defines **exactly one** concrete subclass of :class:`basevolve.tasks.base.Task`
  (imported from ``basevolve.tasks.base``) that can be built with no arguments, with
  class attributes ``name`` and ``entry`` (and optionally ``description``,
  ``timeout_s``), the properties ``initial_program`` and ``system_message`` and the
  pure scorer ``score_value(value, *, tol) -> ScoreResult``; ``draw`` is optional;
* it is *not* added to :data:`~basevolve.tasks.base.TASKS` (so loading the same file
  twice, or a file whose ``name`` clashes with a built-in, is harmless).

Every failure (missing file, syntax error, exception at import, zero or several Task
subclasses, missing attributes) is a :class:`~basevolve.errors.TaskError` naming the
file and the fix.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from basevolve.errors import ConfigError, TaskError
from basevolve.params import parse_params
from basevolve.sandbox.config import MAX_TIMEOUT_S
from basevolve.tasks.base import EVALUATION_KINDS, TASKS, Task


def load_task(spec: str | Path, params: Mapping[str, Any] | None = None) -> Task:
    """A ready task instance for ``spec``: a registered task name, a ``.py`` file path or
    the path of an OpenEvolve task directory.

    ``params``: the run's ``--task-param`` values, checked against the task's declared
    ``PARAMS`` (a task that declares none refuses any).
    """
    text = str(spec)
    if text in TASKS:
        return build_task(TASKS.get(text), params)
    path = Path(text).expanduser()
    if path.is_dir():  # an OpenEvolve task directory (issue 21, part 2)
        from basevolve.tasks.openevolve_layouts import load_task_directory

        # its task_params name its program, evaluator and config (issue 31, item 1)
        return check_task(load_task_directory(path, dict(params or {})), f"in {text!r}")
    if path.suffix == ".py" or path.exists():
        return load_task_file(path, params)
    known = ", ".join(TASKS.names())
    raise TaskError(
        f"unknown task {text!r}; known: {known} (or give the path of a .py file defining"
        " a Task subclass, or of an OpenEvolve task directory)"
    )


def build_task(cls: type[Task], params: Mapping[str, Any] | None = None,
               where: str = "") -> Task:
    """``cls(**params)`` for a task that declares ``PARAMS``, else ``cls()``.

    Why refuse parameters a task does not declare: a ``--task-param`` that silently did
    nothing would leave the user believing it took effect.
    """
    if params and not cls.PARAMS:
        raise ConfigError(f"task {getattr(cls, 'name', cls.__name__)!r}{where} takes no "
                          f"--task-param; got {', '.join(sorted(params))}")
    return cls(**dict(params or {})) if cls.PARAMS else cls()


def task_params_of(spec: str, params: Mapping[str, Any] | None) -> dict[str, Any]:
    """The typed ``--task-param`` values of the task ``spec`` names (built-in tasks; a
    task file's values are checked when it is loaded).  Empty for no params."""
    if not params:
        return {}
    if spec in TASKS:
        cls = TASKS.get(spec)
        if not cls.PARAMS:
            build_task(cls, params)  # raises the "takes no --task-param" error
        return parse_params(cls.PARAMS, params, spec, flag="--task-param", what="task")
    directory = Path(spec).expanduser()
    if directory.is_dir():  # a task directory's file names, stored as absolute paths
        from basevolve.tasks.openevolve_files import absolute_naming

        return absolute_naming(directory.resolve(), params)
    return dict(params)


def load_task_file(path: Path, params: Mapping[str, Any] | None = None) -> Task:
    """Import a user task file and instantiate its single Task subclass."""
    if not path.is_file():
        raise TaskError(f"task file {str(path)!r} does not exist")
    if path.suffix != ".py":
        raise TaskError(f"task file {str(path)!r} must be a Python file ending in .py")
    resolved = path.resolve()
    digest = hashlib.sha1(str(resolved).encode()).hexdigest()[:12]
    module_name = f"basevolve_user_task_{digest}"
    spec = importlib.util.spec_from_file_location(module_name, resolved)
    if spec is None or spec.loader is None:  # pragma: no cover - .py files always load
        raise TaskError(f"cannot import task file {str(path)!r}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # dataclasses & co. look their module up here
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        sys.modules.pop(module_name, None)
        raise TaskError(
            f"task file {str(path)!r} failed to import: {type(exc).__name__}: {exc}"
        ) from exc
    classes = [
        obj
        for obj in vars(module).values()
        if inspect.isclass(obj)
        and issubclass(obj, Task)
        and obj.__module__ == module_name
        and not inspect.isabstract(obj)
    ]
    if len(classes) != 1:
        found = ", ".join(c.__name__ for c in classes) or "none"
        raise TaskError(
            f"task file {str(path)!r} must define exactly one concrete subclass of"
            f" basevolve.tasks.base.Task; found {found}"
        )
    cls = classes[0]
    try:
        task = build_task(cls, params, f" in {str(path)!r}")
    except (ConfigError, TaskError):
        raise
    except Exception as exc:
        raise TaskError(
            f"task class {cls.__name__} in {str(path)!r} cannot be built with no"
            f" arguments: {type(exc).__name__}: {exc}"
        ) from exc
    return check_task(task, f"in {str(path)!r}")


def check_task(task: Task, where: str = "") -> Task:
    """Refuse a task instance that the engine could not run; return it unchanged.

    Why one check for files and objects: a task written in a notebook cell
    (``basevolve.run(task=MyTask())``) must meet the same contract as a task file --
    non-empty ``name`` and ``entry`` strings and a bounded ``timeout_s`` -- and fail
    with the same :class:`~basevolve.errors.TaskError` before anything is stored.
    ``where`` says where the task came from in the message (e.g. ``"in 'my_task.py'"``).
    """
    cls = type(task)
    at = f" {where}" if where else ""
    for attr in ("name", "entry"):
        if not isinstance(getattr(task, attr, None), str) or not getattr(task, attr):
            raise TaskError(
                f"task class {cls.__name__}{at} needs a non-empty string"
                f" class attribute {attr!r}"
            )
    timeout = getattr(task, "timeout_s", None)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not (
        0 < timeout <= MAX_TIMEOUT_S
    ):
        raise TaskError(
            f"task {task.name!r}{at}: timeout_s must be a positive number of"
            f" seconds, at most {MAX_TIMEOUT_S:g}, got {timeout!r}"
        )
    kind = getattr(task, "evaluation", "entry")
    if not isinstance(kind, str) or kind not in EVALUATION_KINDS:
        raise TaskError(f"task {task.name!r}{at}: evaluation={kind!r} is not a kind of "
                        f"evaluation; known: {', '.join(sorted(EVALUATION_KINDS))}")
    call = getattr(task, "call_timeout_s", None)
    if kind == "calls" and (isinstance(call, bool) or not isinstance(call, int | float)
                            or not 0 < call <= timeout):
        raise TaskError(f"task {task.name!r}{at}: call_timeout_s must be a positive number "
                        f"of seconds, at most timeout_s ({timeout:g}), got {call!r}")
    return task
