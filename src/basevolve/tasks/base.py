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


class Task(ABC):
    """A problem basevolve can evolve programs for."""

    name: ClassVar[str]
    entry: ClassVar[str]  # the function the sandbox calls, with no arguments
    description: ClassVar[str] = ""
    timeout_s: ClassVar[float] = 60.0
    language: ClassVar[str] = "python"

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
            strict_score=strict.score,
            strict_valid=strict.valid,
            **common,
        )

    def draw(self, value: Any, path: Path) -> None:  # pragma: no cover - optional
        """Write a PNG picture of a solution (optional per task)."""
        raise NotImplementedError(f"task {self.name!r} has no picture")


TASKS: Registry[type[Task]] = Registry("task")
