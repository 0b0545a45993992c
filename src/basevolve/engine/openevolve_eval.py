"""The engine's evaluator for OpenEvolve task directories (issue 21, part 2).

An OpenEvolve ``evaluator.py`` imports the candidate program itself, so it runs in the
sandbox next to the program.  :class:`OpenEvolveEvaluator` opens one sandbox session per
program whose *sandboxed code is basevolve's harness*
(:mod:`basevolve.tasks.openevolve_harness`, standard library only); the candidate's
source travels as data in the harness's ``setup`` call, and the cascade, thresholds,
fitness rule and time limits are applied here, in the basevolve process
(:mod:`basevolve.tasks.openevolve_cascade`).  Every evaluation is recorded at trust level
``evaluator-in-sandbox``: the program can tamper with the evaluator beside it, never
with anything outside the sandbox.

Failures are sorted as for function tasks (:mod:`basevolve.engine.function_eval`): what
the program (or the evaluator it runs in) does wrong scores the child 0 with the reason;
an ``evaluator.py`` that cannot even be imported is a scorer error (three in a row stop
the run); the sandbox failing counts towards ``MAX_SANDBOX_FAILURES_IN_ROW``.
"""

from __future__ import annotations

from typing import Any

from basevolve.engine.function_eval import FunctionEvaluator
from basevolve.records import Evaluation, Trust
from basevolve.tasks.openevolve_cascade import harness_source, session_timeout


class OpenEvolveEvaluator(FunctionEvaluator):
    """Evaluates programs of an OpenEvolve task directory (see the module docstring)."""

    trust = Trust.IN_SANDBOX
    method = "evaluate_candidate"

    def limits(self, timeout_s: float | None) -> tuple[float, float]:
        """Each ``evaluate``/stage call gets the directory's ``evaluator.timeout`` (or
        ``basevolve evaluate --timeout``); the session, room for every stage."""
        stage_s = float(timeout_s or self.task.timeout_s)
        return session_timeout(stage_s, len(self.task.settings.stages)), stage_s

    def session_code(self, code: str) -> str:
        """The session imports basevolve's harness; the candidate travels as data."""
        return harness_source()

    def score(self, program: Any, code: str, call_timeout_s: float) -> Evaluation:
        """The harness imports evaluator.py and runs the cascade's stages on ``code``."""
        return self.task.evaluate_candidate(program, code, call_timeout_s)


__all__ = ["OpenEvolveEvaluator"]
