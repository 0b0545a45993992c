"""The Task abstraction: untrusted execution + trusted scoring.

A task is (initial program, entry-function name, system message, time limit, scorer).
The split matters for safety (docs/design.md, "Untrusted code runs; trusted code scores"):

* the **sandbox** runs the candidate program and calls its entry function; what comes
  back is plain data (:class:`~basevolve.records.ExecResult`, ``value`` built from JSON /
  ``.npy`` bytes by the parent);
* :meth:`Task.score_value` is a **pure function of that data**, run in the parent.  It
  must never trust derived numbers the program reports (e.g. circle packing recomputes
  the sum of radii).

Tolerance: the reference evaluators of the paper (Section "Experiment Setup") check
containment / non-overlap with tolerance 1e-6; ``strict`` mode uses 0.  Both are
computed for every evaluation and stored.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from basevolve.params import Param
from basevolve.records import Evaluation, ExecResult, ExecStatus
from basevolve.registry import Registry

REFERENCE_TOL = 1e-6
STRICT_TOL = 0.0


@dataclass(frozen=True, slots=True)
class ScoreResult:
    """Output of a trusted scorer: normalised fitness, validity, raw metrics, reason."""

    score: float
    valid: bool
    metrics: dict[str, float] = field(default_factory=dict)
    error: str | None = None
    # Feedback for the LLM (failing cases, notes), by name; stored with the program and
    # shown in the next prompt of this parent with --feedback artifacts (issue 21).
    artifacts: dict[str, str] = field(default_factory=dict)



#: How a task's programs are scored (``Task.evaluation``): ``entry`` (one call of
#: ``entry()``, its value scored here), ``calls`` (a trusted evaluator calls the program,
#: :class:`basevolve.tasks.function.FunctionTask`) or ``openevolve`` (a task directory's
#: evaluator, sandboxed).  The vocabulary lives with the task (issue 33): the engine
#: registers one evaluator per kind (:mod:`basevolve.engine.evaluators`), and a task is
#: checked against these names without importing the engine.
EVALUATION_KINDS: tuple[str, ...] = ("entry", "calls", "openevolve")

class Task(ABC):
    """A problem basevolve can evolve programs for: subclass it to write your own.

    A task is an initial program, the name of its entry function, a system message and
    a scorer.  The split is the safety boundary: every program (the initial one and
    each LLM-written child) runs in the **sandbox**, which calls ``entry()`` with no
    arguments and sends back only plain data (numbers, lists, dicts, numpy arrays);
    :meth:`score_value` then scores that data **in your process** and must recompute
    anything it relies on rather than trust numbers the program reports.

    Define one in a notebook cell and pass the object, or put the class in a ``.py``
    file and pass its path (``basevolve run --task my_task.py``)::

        import basevolve

        class Squares(basevolve.Task):
            name = "squares"            # stored with the run; not a built-in's name
            entry = "solve"             # called in the sandbox, no arguments
            timeout_s = 10.0            # per evaluation, at most the sandbox's limit
            initial_program = (
                "# EVOLVE-BLOCK-START\n"
                "def solve():\n    return [1, 2, 3]\n"
                "# EVOLVE-BLOCK-END\n")
            system_message = "Return a list of at most 10 distinct small integers."

            def score_value(self, value, *, tol=1e-6):
                ok = isinstance(value, list) and len(value) <= 10
                score = len(set(value)) / 10 if ok else 0.0
                return basevolve.ScoreResult(score=score, valid=ok)

        result = basevolve.run(task=Squares(), budget=8, base_url=...)

    Class attributes: ``name`` and ``entry`` (required, non-empty), ``description``,
    ``timeout_s`` (seconds per evaluation, default 60) and ``language``.  ``artifact`` is
    ``"program"`` here; text tasks (a prompt template evolved instead of code, issue 15)
    derive from ``basevolve.tasks.text.TextTask``.  ``PARAMS`` declares the task's
    ``--task-param`` keys (none by default); a task that declares any is built with them
    as keyword arguments.  Plain class
    attributes may stand in for the ``initial_program`` / ``system_message``
    properties.  :meth:`draw` is optional (a PNG of a solution, used for ``best.png``).
    Scores are normalised fitness: 1.0 is the best published value for the paper's
    tasks, and the analysis (capability gate, thresholds) reads them on that scale.
    """

    name: ClassVar[str]
    entry: ClassVar[str]  # the function the sandbox calls, with no arguments
    description: ClassVar[str] = ""
    timeout_s: ClassVar[float] = 60.0
    language: ClassVar[str] = "python"
    artifact: ClassVar[str] = "program"  # or "text" (basevolve.tasks.text.TextTask)
    # How a program is scored: one of EVALUATION_KINDS; the engine's evaluator for each
    # is registered in basevolve.engine.evaluators.EVALUATORS.
    evaluation: ClassVar[str] = "entry"
    PARAMS: ClassVar[tuple[Param, ...]] = ()  # declared --task-param keys
    # Several objectives (issue 36; docs/tasks.md): metric names of score_value's
    # ``metrics`` with "max" or "min", e.g. {"accuracy": "max", "seconds": "min"}; a
    # run then searches their Pareto front (--objectives overrides).  The hypervolume's
    # reference point, one number per objective; () derives it from the initial program.
    objectives: ClassVar[dict[str, str]] = {}
    reference_point: ClassVar[tuple[float, ...]] = ()

    def identity_parts(self) -> tuple[str, ...]:
        """Extra text the task's stored identity hashes (besides its source, initial
        program and system message): e.g. a dataset's digest and the task parameters, so
        that a resume with other data is noticed (:mod:`basevolve.tasks.identity`)."""
        return ()

    def start_failure(self, evaluation: Evaluation) -> str | None:
        """Why a run must stop before its first LLM call, given the initial program's
        evaluation; None to go on (the default: an initial program that fails is just a
        poor parent).  An OpenEvolve task directory stops when its evaluator cannot score
        the initial program (issue 31, item 9)."""
        return None

    @property
    @abstractmethod
    def initial_program(self) -> str:
        """Source of the initial program (with EVOLVE-BLOCK markers)."""

    @property
    @abstractmethod
    def system_message(self) -> str:
        """Per-task system message (OpenEvolve's, verbatim from the paper's appendix)."""

    @abstractmethod
    def score_value(self, value: Any, *, tol: float = REFERENCE_TOL) -> ScoreResult:
        """Score the plain data the entry function returned.  Pure; never raises."""

    def evaluate(self, result: ExecResult) -> Evaluation:
        """Turn a sandbox result into a trusted Evaluation (reference + strict score)."""
        common = {
            "isolation": result.isolation,
            "seconds": result.seconds,
            "stdout": result.stdout,
            "stderr": result.stderr,
        }
        if result.status is not ExecStatus.OK:
            reason = result.error or result.status.value
            return Evaluation(score=0.0, valid=False, error=f"{result.status.value}: {reason}", **common)
        ref = self.score_value(result.value, tol=REFERENCE_TOL)
        strict = self.score_value(result.value, tol=STRICT_TOL)
        return Evaluation(
            score=ref.score,
            valid=ref.valid,
            metrics=dict(ref.metrics),
            error=ref.error,
            artifacts=dict(ref.artifacts),
            strict_score=strict.score,
            strict_valid=strict.valid,
            **common,
        )

    def draw(self, value: Any, path: Path) -> None:  # pragma: no cover - optional
        """Write a PNG picture of a solution (optional per task)."""
        raise NotImplementedError(f"task {self.name!r} has no picture")


TASKS: Registry[type[Task]] = Registry("task")
