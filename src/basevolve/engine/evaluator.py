"""Program evaluation for the engine: sandbox execution + trusted task scoring.

Untrusted code runs in the sandbox pool (``await pool.arun``) so evaluations overlap
with LLM calls still in flight (issue 4: "overlap evaluation with generation"); the
task's scorer then runs in this process on the plain data that came back (docs/design.md,
"Untrusted code runs; trusted code scores").
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from basevolve.engine.eval_seeds import EvaluationSeeds
from basevolve.errors import SandboxError
from basevolve.records import Evaluation, ExecResult, ExecStatus, Isolation, Trust
from basevolve.tasks.base import Task
from basevolve.tasks.scoring import ScorerGuard, default_log_path
from basevolve.tasks.text import answered_by_llm

log = logging.getLogger("basevolve.tasks")

MAX_SANDBOX_FAILURES_IN_ROW = 3


def sandbox_config(task: Task, cfg: Any | None = None, **limits: Any) -> Any:
    """The sandbox settings a run of ``task`` needs (issue 31, items 2 and 6).

    A program in another language than Python sees the host's toolchains read-only
    (:mod:`basevolve.sandbox.passthrough`); the run's ``--env`` / ``--env-secret``
    variables and ``--data`` folder are resolved here, at the start and at every resume
    (a secret not exported, a folder gone: one ConfigError line).
    """
    from basevolve.passenv import resolve
    from basevolve.sandbox import SandboxConfig

    env: tuple[tuple[str, str], ...] = ()
    data = None
    if cfg is not None:
        env, data = resolve(cfg.env, cfg.env_secret, cfg.data, cfg.run_id)
    toolchains = getattr(task, "language", "python") not in ("python", "text")
    return SandboxConfig(toolchains=toolchains, env=env, data_dir=data, **limits)


def open_pool(task: Task, **limits: Any) -> Any:
    """A started sandbox pool for ``task`` outside a run (``basevolve evaluate``)."""
    from basevolve.sandbox import SandboxPool

    return SandboxPool(sandbox_config(task, **limits))


def needs_own_pool(task: Task, cfg: Any) -> bool:
    """Whether a run cannot share a plain pool (it passes toolchains, variables or data)."""
    return sandbox_config(task, cfg) != sandbox_config(task)


def start_pool(task: Task, cfg: Any | None = None) -> Any | None:
    """A sandbox pool for ``task``, starting in the background (None for a text task).

    Why start it before the run row is written: its workers import numpy/scipy (~0.5 s on
    two cores) and the first calls wait for the initial program's score, so the start-up
    overlaps building the client, probing the endpoint and writing the store instead of
    following them (:class:`basevolve.sandbox.SandboxPool`, ``background=True``).
    ``cfg``: the run's config (its ``--env`` / ``--data``; :func:`sandbox_config`).
    """
    if answered_by_llm(task):
        return None
    from basevolve.sandbox import SandboxPool

    return SandboxPool(sandbox_config(task, cfg), background=True)


def sandbox_source(task: Any, code: str) -> str:
    """What the sandbox runs for ``code``: the program itself, or what the task makes of
    it (a program of several files writes its folder first, issue 31:
    :meth:`basevolve.tasks.folder_program.FolderTask.sandbox_source`)."""
    make = getattr(task, "sandbox_source", None)
    return code if make is None else make(code)


class SandboxEvaluator:
    """Evaluates programs of one task on a :class:`basevolve.sandbox.SandboxPool`.

    ``pool``: None makes one on the first evaluation (closed by :meth:`aclose`); a pool
    passed in is the caller's and left open.
    """

    trust = Trust.SCORER  # where its scores are computed (recorded with every program)

    def __init__(self, task: Task, pool: Any | None = None,
                 scorer_log: Path | None = None,
                 notify: Callable[[str], None] | None = None,
                 seed: int | None = None) -> None:
        self.task = task
        # random and numpy.random of each evaluation: run seed + identity (issue 31, item 8)
        self.seeds = EvaluationSeeds(seed)
        self._pool = pool
        self._owns_pool = pool is None
        self._failures_in_row = 0
        # A raising (user) scorer scores the child 0 with "scorer error"; three in a row
        # stop the run (basevolve.tasks.scoring).
        self.scorer = ScorerGuard(task, scorer_log or default_log_path())
        self.notify = notify or (lambda line: log.warning("%s", line))

    @property
    def concurrency(self) -> int:
        """Evaluations that run at once: the pool's workers.  The engine lets this many
        answered children, plus a small margin, await evaluation while the LLM slots are
        already busy with the next calls (:mod:`basevolve.engine.ordering`)."""
        workers = getattr(self._pool, "workers", None)
        if workers is None:
            from basevolve.sandbox import SandboxConfig

            return SandboxConfig().n_workers
        return int(workers)

    @property
    def pool(self) -> Any:
        if self._pool is None:
            from basevolve.sandbox import SandboxPool

            self._pool = SandboxPool()
        return self._pool

    async def execute(self, code: str) -> ExecResult:
        """Run ``code``; a failure of the sandbox itself scores this child 0 with the reason.

        Why not let it propagate: one odd failure (a worker that could not be restarted
        in time, an OS error) should not end a run that has spent most of its budget.  But
        a sandbox that keeps failing would turn every remaining call into a wasted 0, so
        after ``MAX_SANDBOX_FAILURES_IN_ROW`` in a row the run fails cleanly (resumable).
        """
        try:
            result = await self.pool.arun(sandbox_source(self.task, code), self.task.entry,
                                          timeout_s=self.task.timeout_s,
                                          seed=self.seeds.next(code))
        except (SandboxError, OSError) as exc:  # the sandbox's own failures; anything
            # else (a bug, a crash) propagates and the run stays resumable
            return self.sandbox_failure(exc)
        self._failures_in_row = 0
        return result

    def sandbox_failure(self, exc: Exception) -> ExecResult:
        """Count one failure of the sandbox itself; the child's result, or stop the run
        after ``MAX_SANDBOX_FAILURES_IN_ROW`` in a row (see :meth:`execute`)."""
        self._failures_in_row += 1
        if self._failures_in_row >= MAX_SANDBOX_FAILURES_IN_ROW:
            raise SandboxError(
                f"the sandbox failed {self._failures_in_row} evaluations in a row "
                f"(last: {type(exc).__name__}: {exc}); fix it, then continue with --resume"
            ) from exc
        isolation = getattr(self._pool, "isolation", None) or Isolation.BWRAP
        return ExecResult(ExecStatus.CRASHED, error=f"sandbox failure: {exc}",
                          isolation=isolation)

    async def evaluate(self, code: str) -> Evaluation:
        result = await self.execute(code)
        errors_before = self.scorer.in_row
        evaluation = self.scorer.evaluate(result)
        if self.scorer.in_row > errors_before:
            self.notify(str(evaluation.error))
        return evaluation

    async def aclose(self) -> None:
        if self._owns_pool and self._pool is not None:
            close = getattr(self._pool, "aclose", None) or getattr(self._pool, "close", None)
            if close is not None:
                result = close()
                if hasattr(result, "__await__"):
                    await result
            self._pool = None
