"""The engine's evaluator for function tasks: trusted calls into a sandboxed program.

:class:`FunctionEvaluator` scores a :class:`~basevolve.tasks.function.FunctionTask`
(issue 21): each child program is imported once in a sandbox worker
(:meth:`basevolve.sandbox.SandboxPool.session`) and the task's trusted
``evaluate_program`` calls its functions.  The evaluator code is the user's and may be
slow or blocking, so it runs in a thread of its own (one per sandbox worker: a session
holds its worker throughout), while the engine's loop keeps LLM calls in flight.

Failures are sorted as everywhere else: the program's faults score the child 0 with
the reason (did not import, or whatever the evaluator decides about failed calls);
the evaluator raising is a scorer error (one line naming the task file, traceback in
the run's log, three in a row stop the run); the sandbox failing is counted by
:meth:`~basevolve.engine.evaluator.SandboxEvaluator.sandbox_failure`.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from basevolve.engine.evaluator import SandboxEvaluator, sandbox_source
from basevolve.errors import SandboxError
from basevolve.records import Evaluation, ExecResult, ExecStatus, Trust
from basevolve.tasks.function import not_imported


class FunctionEvaluator(SandboxEvaluator):
    """Evaluates programs of a FunctionTask by calling them (see the module docstring)."""

    trust = Trust.EVALUATOR
    method = "evaluate_program"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._threads: ThreadPoolExecutor | None = None

    async def evaluate(self, code: str) -> Evaluation:
        if self._threads is None:
            self._threads = ThreadPoolExecutor(self.pool.workers, thread_name_prefix="evaluator")
        errors_before = self.scorer.in_row
        loop = asyncio.get_running_loop()
        seed = self.seeds.next(code)  # on the loop: the counts follow the evaluations' order
        evaluation = await loop.run_in_executor(self._threads, self.evaluate_sync, code, None,
                                                seed)
        if self.scorer.in_row > errors_before:
            self.notify(str(evaluation.error))
        return evaluation

    def evaluate_sync(self, code: str, timeout_s: float | None = None,
                      seed: int | None = None) -> Evaluation:
        """Open a session, let the task score the program, close it (blocking).

        ``timeout_s`` overrides the task's limit (``basevolve evaluate --timeout``); what
        it limits, what runs in the session and how it is scored are the hooks below,
        which a subclass (an OpenEvolve task directory) replaces."""
        total, per_call = self.limits(timeout_s)
        try:
            with self.pool.session(self.session_code(code), timeout_s=total,
                                   call_timeout_s=per_call, seed=seed) as program:
                if not program.alive:
                    evaluation = not_imported(program, self.trust)
                else:
                    evaluation = self.scorer.guarded(
                        lambda: self.score(program, code, per_call), method=self.method,
                        isolation=program.isolation, stdout=program.stdout,
                        stderr=program.stderr, trust=self.trust,
                        seconds=program.timeout_s - program.remaining_s)
        except (SandboxError, OSError) as exc:
            failed = self.sandbox_failure(exc)
            return Evaluation(score=0.0, valid=False, error=f"crashed: {failed.error}",
                              isolation=failed.isolation, trust=self.trust)
        self._failures_in_row = 0
        return evaluation

    def limits(self, timeout_s: float | None) -> tuple[float, float]:
        """(the session's whole limit, one call's default limit)."""
        call = float(getattr(self.task, "call_timeout_s", self.task.timeout_s))
        return float(timeout_s or self.task.timeout_s), call

    def session_code(self, code: str) -> str:
        """What the session imports: the program itself (or the task's bootstrap of a
        program of several files, :func:`~basevolve.engine.evaluator.sandbox_source`)."""
        return sandbox_source(self.task, code)

    def score(self, program: Any, code: str, call_timeout_s: float) -> Evaluation:
        """The trusted Evaluation of an imported program (the task's evaluator)."""
        return self.task.evaluate_calls(program)

    async def execute(self, code: str) -> ExecResult:
        """No single value to keep or draw: a function task's program is called, not run."""
        return ExecResult(ExecStatus.ERROR, error="a function task's program has no single "
                          "value (it is scored by calling it)")

    async def aclose(self) -> None:
        if self._threads is not None:
            self._threads.shutdown(wait=False, cancel_futures=True)  # the pool kills its workers
            self._threads = None
        await super().aclose()


__all__ = ["FunctionEvaluator"]
