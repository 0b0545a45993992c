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
import time
import traceback
from pathlib import Path

from basevolve.errors import TaskError
from basevolve.records import Evaluation, ExecResult
from basevolve.tasks.base import Task

MAX_SCORER_ERRORS_IN_ROW = 3


class ScorerError(TaskError):
    """The task's scorer raised (a bug in the task file)."""


def _where(task: Task, exc: BaseException) -> tuple[str, str]:
    """(task file, function) where ``exc`` was raised inside the task's own file."""
    try:
        source = inspect.getfile(type(task))
    except (TypeError, OSError):
        source = type(task).__module__
    function = f"{type(task).__name__}.score_value"
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename == source:
            function = f"{frame.name} (line {frame.lineno})"
    return source, function


def default_log_path() -> Path:
    """Where ``basevolve evaluate`` writes a scorer traceback (no store to put it next to)."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    return Path(tempfile.gettempdir()) / "basevolve" / f"scorer-error-{stamp}.log"


def describe_failure(task: Task, exc: BaseException, log_path: Path) -> str:
    """Append the traceback to ``log_path``; return the one-line description."""
    source, function = _where(task, exc)
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
    return (f"the scorer of task {task.name!r} ({source}) raised in {function}: "
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

    def evaluate(self, result: ExecResult) -> Evaluation:
        try:
            evaluation = self.task.evaluate(result)
        except Exception as exc:
            line = describe_failure(self.task, exc, self.log_path)
            self.in_row += 1
            if self.in_row >= self.max_in_row:
                raise ScorerError(
                    f"{line}; {self.in_row} scorer errors in a row, so the run stopped: fix "
                    "the task file, then continue with --resume (and --allow-task-change)"
                ) from None
            return Evaluation(score=0.0, valid=False, error=f"scorer error: {line}",
                              isolation=result.isolation, seconds=result.seconds,
                              stdout=result.stdout, stderr=result.stderr)
        self.in_row = 0
        return evaluation


__all__ = ["MAX_SCORER_ERRORS_IN_ROW", "ScorerError", "ScorerGuard", "default_log_path",
           "describe_failure", "score_or_raise"]
