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

from basevolve.engine.function_eval import FunctionEvaluator
from basevolve.errors import SandboxError
from basevolve.records import Evaluation, Trust
from basevolve.tasks.function import not_imported
from basevolve.tasks.openevolve_cascade import harness_source, session_timeout


class OpenEvolveEvaluator(FunctionEvaluator):
    """Evaluates programs of an OpenEvolve task directory (see the module docstring)."""

    trust = Trust.IN_SANDBOX
    method = "evaluate_candidate"

    def evaluate_sync(self, code: str, timeout_s: float | None = None) -> Evaluation:
        """One session: the harness imports evaluator.py, then each stage is called.

        ``timeout_s``: the limit of each ``evaluate``/stage call (default the directory's
        ``evaluator.timeout``; ``basevolve evaluate --timeout`` overrides it).
        """
        task = self.task
        stage_s = float(timeout_s or task.timeout_s)
        total = session_timeout(stage_s, len(task.settings.stages))
        try:
            with self.pool.session(harness_source(), timeout_s=total,
                                   call_timeout_s=stage_s) as session:
                if not session.alive:  # the harness itself did not start: the sandbox's fault
                    evaluation = not_imported(session, self.trust)
                else:
                    evaluation = self.scorer.guarded(
                        lambda: task.evaluate_candidate(session, code, stage_s),
                        method=self.method, isolation=session.isolation,
                        stdout=session.stdout, stderr=session.stderr, trust=self.trust,
                        seconds=session.timeout_s - session.remaining_s)
        except (SandboxError, OSError) as exc:
            failed = self.sandbox_failure(exc)
            return Evaluation(score=0.0, valid=False, error=f"crashed: {failed.error}",
                              isolation=failed.isolation, trust=self.trust)
        self._failures_in_row = 0
        return evaluation


__all__ = ["OpenEvolveEvaluator"]
