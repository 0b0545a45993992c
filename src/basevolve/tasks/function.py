"""Function tasks: a trusted evaluator calls the sandboxed program's functions (issue 21).

An ``entry()`` task (:class:`~basevolve.tasks.base.Task`) is scored from the one value
its program returns.  Most problems researchers bring are not like that: a FunSearch
heuristic is scored by how well it packs several instances, a kernel by its speed and
correctness on fresh inputs, a regression model by its error on a data set.  Writing
those as ``entry()`` tasks would put the instances, the timing and the checks inside
the evolved program, where an LLM rewriting the program can rewrite them too.

A :class:`FunctionTask` keeps the harness in the basevolve process instead
(docs/design.md, "Untrusted code runs; trusted code scores"):

* the program is imported **once** in the sandbox (:mod:`basevolve.sandbox.session`);
* :meth:`FunctionTask.evaluate_program` -- your trusted code -- receives a handle and
  calls the program's functions with plain-data arguments, as often as it likes, each
  call with its own time limit (``call_timeout_s`` by default, all of them within
  ``timeout_s``);
* each :class:`~basevolve.records.CallResult` carries the plain-data value, or the
  error as text, what the call printed, and its wall and CPU seconds as measured by the
  sandbox worker, out of the program's reach;
* it returns a :class:`~basevolve.tasks.base.ScoreResult`, which may carry ``artifacts``
  (failing cases, notes) for the LLM's next prompt (``--feedback artifacts``).

An ``entry()`` task is the special case of one call with no arguments, scored by
``score_value`` (its one-shot path is kept because it costs one fork, not a session).
"""

from __future__ import annotations

import math
from abc import abstractmethod
from numbers import Real
from typing import Any, ClassVar

from basevolve.errors import TaskError
from basevolve.records import Evaluation, ExecResult, Isolation, Trust
from basevolve.sandbox.session import ProgramSession
from basevolve.tasks.base import REFERENCE_TOL, ScoreResult, Task

MAX_ARTIFACT_CHARS = 20_000  # per artifact, when stored (the prompt has its own, smaller cap)


class FunctionTask(Task):
    """A task whose trusted :meth:`evaluate_program` calls the program's functions.

    Class attributes as for :class:`~basevolve.tasks.base.Task` (``entry`` names the
    function the LLM must keep; it is shown to the LLM's parser, and your evaluator
    calls it), plus ``call_timeout_s``: the default limit of one call (``timeout_s``
    bounds the import and all calls together)::

        class Squares(basevolve.FunctionTask):
            name, entry = "squares", "square"
            timeout_s, call_timeout_s = 30.0, 1.0
            initial_program = "def square(x):\\n    return x * x\\n"
            system_message = "Write square(x)."

            def evaluate_program(self, program):
                ok = sum(program.call("square", x).value == x * x for x in range(10))
                return basevolve.ScoreResult(score=ok / 10, valid=ok > 0)
    """

    evaluation: ClassVar[str] = "calls"
    call_timeout_s: ClassVar[float] = 10.0

    @abstractmethod
    def evaluate_program(self, program: ProgramSession) -> ScoreResult:
        """Score the program by calling it (``program.call(fn, *args, timeout_s=...)``).

        Runs in the basevolve process, in a worker thread: it may take its time, read
        files and generate instances; it only ever sees plain data from the program.
        Only called when the program imported; return ``valid=False`` with a reason
        for a program that fails your checks.
        """

    def identity_parts(self) -> tuple[str, ...]:
        """The call limit shapes every score, so a resume with another one is a task change
        (:mod:`basevolve.tasks.identity`)."""
        return (*super().identity_parts(), f"call_timeout_s={self.call_timeout_s!r}")

    def score_value(self, value: Any, *, tol: float = REFERENCE_TOL) -> ScoreResult:
        """Not used: a function task is scored by :meth:`evaluate_program`."""
        return ScoreResult(0.0, False, error=f"task {self.name!r} is scored by calling its "
                           "program (evaluate_program), not from a returned value")

    def evaluate(self, result: ExecResult) -> Evaluation:
        """Not used (a function task has no single result); total for the base contract."""
        return Evaluation(score=0.0, valid=False, isolation=result.isolation,
                          trust=Trust.EVALUATOR, error=f"task {self.name!r} is scored by "
                          "calling its program, not from a returned value")

    def evaluate_calls(self, program: ProgramSession) -> Evaluation:
        """The trusted Evaluation of an imported program (raises for evaluator bugs).

        ``score`` must be a finite number and ``artifacts`` a dict of str -> str: anything
        else is the evaluator's mistake, reported (by the engine's guard) as a scorer
        error with the task file named.
        """
        result = self.evaluate_program(program)
        return evaluation_from(self, result, program)


def check_score(task: Task, result: Any, method: str) -> ScoreResult:
    """``result`` as a ScoreResult with a finite score and str artifacts, or a TaskError."""
    if not isinstance(result, ScoreResult):
        raise TaskError(f"{type(task).__name__}.{method} must return a ScoreResult, got "
                        f"{type(result).__name__}")
    if isinstance(result.score, bool) or not isinstance(result.score, Real) or not math.isfinite(
            float(result.score)):
        raise TaskError(f"{type(task).__name__}.{method} returned score={result.score!r}; "
                        "it must be a finite number")
    if not isinstance(result.artifacts, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in result.artifacts.items()):
        raise TaskError(f"{type(task).__name__}.{method} returned artifacts that are not a "
                        "dict of str -> str")
    return result


def evaluation_from(task: Task, result: Any, program: ProgramSession, *,
                    trust: Trust = Trust.EVALUATOR,
                    method: str = "evaluate_program") -> Evaluation:
    """A checked ScoreResult of a session -> the stored Evaluation (no tolerance modes:
    the strict score is the score)."""
    r = check_score(task, result, method)
    score = float(r.score)
    return Evaluation(
        score=score, valid=bool(r.valid), metrics=dict(r.metrics), error=r.error,
        strict_score=score, strict_valid=bool(r.valid), isolation=program.isolation,
        seconds=program.timeout_s - program.remaining_s, stdout=program.stdout,
        stderr=program.stderr, trust=trust,
        artifacts={k: v[:MAX_ARTIFACT_CHARS] for k, v in r.artifacts.items()})


def not_imported(program: ProgramSession, trust: Trust = Trust.EVALUATOR) -> Evaluation:
    """Score 0 for a program that did not import (syntax error, raised, timed out)."""
    imported = program.imported
    status = imported.status.value if imported is not None else "crashed"
    reason = imported.error if imported is not None else "the program was not started"
    return Evaluation(score=0.0, valid=False, error=f"{status}: {reason}",
                      isolation=program.isolation if imported else Isolation.BWRAP,
                      seconds=program.timeout_s - program.remaining_s, stdout=program.stdout,
                      stderr=program.stderr, trust=trust)


__all__ = [
    "MAX_ARTIFACT_CHARS",
    "FunctionTask",
    "check_score",
    "evaluation_from",
    "not_imported",
]
