"""Calling a task's trusted scorer when the scorer itself may be broken (issue 12, item 4).

A built-in scorer never raises (it returns "score 0 with a reason" for any bad data).  A
*user's* scorer is ordinary Python and may: that is a bug of the task author, not of
the evolved program and not of basevolve.  What the user needs then is one line that
names the task file, the function and the exception, and the full traceback somewhere
to read, not a traceback that buries the message and kills a run.  So:

* :func:`score_or_raise` (for ``basevolve evaluate``) raises :class:`ScorerError` with
  that one line and writes the traceback to a log file whose path the line prints;
* :class:`ScorerGuard` (for a run) turns each failure into an Evaluation with score 0
  and the reason ``"scorer error: ..."`` (the child is recorded, the budget call is not
  lost), and after ``max_in_row`` failures in a row raises :class:`ScorerError`: a
  scorer that fails every time would turn the rest of the budget into zeros, so the run
  stops cleanly and can be resumed after the fix (``--resume``, with
  ``--allow-task-change`` since the task file changed).
"""

from __future__ import annotations

import inspect
import tempfile
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from basevolve.errors import TaskError
from basevolve.records import Evaluation, ExecResult
from basevolve.tasks.base import Task

MAX_SCORER_ERRORS_IN_ROW = 3


class ScorerError(TaskError):
    """The task's scorer raised (a bug in the task file)."""


def _where(task: Task, exc: BaseException, method: str) -> tuple[str, str]:
    """(task file, function) where ``exc`` was raised inside the task's own file."""
    try:
        source = inspect.getfile(type(task))
    except (TypeError, OSError):
        source = type(task).__module__
    function = f"{type(task).__name__}.{method}"
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename == source:
            function = f"{frame.name} (line {frame.lineno})"
    return source, function


def default_log_path() -> Path:
    """Where ``basevolve evaluate`` writes a scorer traceback (no store to put it next to)."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    return Path(tempfile.gettempdir()) / "basevolve" / f"scorer-error-{stamp}.log"


def describe_failure(task: Task, exc: BaseException, log_path: Path,
                     method: str = "score_value") -> str:
    """Append the traceback to ``log_path``; return the one-line description.

    ``method``: the task's scoring method that raised (``score_value``, or
    ``evaluate_program`` of a :class:`~basevolve.tasks.function.FunctionTask`).
    """
    source, function = _where(task, exc, method)
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    try:
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with log_path.open("a", encoding="utf-8") as fh:
            fh.write(f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} task {task.name!r} "
                     f"({source}), {function}\n{text}\n")
        where = f"traceback in {log_path}"
    except OSError as err:
        where = f"traceback could not be written to {log_path}: {err.strerror or err}"
    message = str(exc).splitlines()[0][:200] if str(exc) else ""
    role = "scorer" if method == "score_value" else "evaluator"
    return (f"the {role} of task {task.name!r} ({source}) raised in {function}: "
            f"{type(exc).__name__}{': ' + message if message else ''} ({where})")


def score_or_raise(task: Task, result: ExecResult, log_path: Path | None = None) -> Evaluation:
    """``task.evaluate(result)``; a raising scorer becomes one :class:`ScorerError` line."""
    try:
        return task.evaluate(result)
    except Exception as exc:
        raise ScorerError(describe_failure(task, exc, log_path or default_log_path())) from None


class ScorerGuard:
    """Scores for a run: a raising scorer scores the child 0; ``max_in_row`` stop the run."""

    def __init__(self, task: Task, log_path: Path,
                 max_in_row: int = MAX_SCORER_ERRORS_IN_ROW) -> None:
        self.task = task
        self.log_path = log_path
        self.max_in_row = max_in_row
        self.in_row = 0
        self._lock = threading.Lock()  # function tasks score in several threads at once

    def evaluate(self, result: ExecResult) -> Evaluation:
        return self.guarded(lambda: self.task.evaluate(result), isolation=result.isolation,
                            seconds=result.seconds, stdout=result.stdout, stderr=result.stderr)

    def guarded(self, score: Callable[[], Evaluation], *, method: str = "score_value",
                **record: Any) -> Evaluation:
        """``score()``, or score 0 with the reason when the task's code raised.

        ``record``: the Evaluation fields kept for a failed score (isolation, seconds,
        output, trust) so the child's record still says how its program ran.
        """
        try:
            evaluation = score()
        except Exception as exc:
            line = describe_failure(self.task, exc, self.log_path, method)
            with self._lock:
                self.in_row += 1
                in_row = self.in_row
            if in_row >= self.max_in_row:
                raise ScorerError(
                    f"{line}; {in_row} scorer errors in a row, so the run stopped: fix "
                    "the task file, then continue with --resume (and --allow-task-change)"
                ) from None
            return Evaluation(score=0.0, valid=False, error=f"scorer error: {line}", **record)
        with self._lock:
            self.in_row = 0
        return evaluation


__all__ = ["MAX_SCORER_ERRORS_IN_ROW", "ScorerError", "ScorerGuard", "default_log_path",
           "describe_failure", "score_or_raise"]
