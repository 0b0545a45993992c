"""Program evaluation for the engine: sandbox execution + trusted task scoring.

Untrusted code runs in the sandbox pool (``await pool.arun``) so evaluations overlap
with LLM calls still in flight (issue 4: "overlap evaluation with generation"); the
task's scorer then runs in this process on the plain data that came back (DESIGN.md,
"Untrusted code runs; trusted code scores").
"""

from __future__ import annotations

from typing import Any

from basevolve.records import Evaluation, ExecResult
from basevolve.tasks.base import Task


class SandboxEvaluator:
    """Evaluates programs of one task on a :class:`basevolve.sandbox.SandboxPool`."""

    def __init__(self, task: Task, pool: Any | None = None) -> None:
        self.task = task
        self._pool = pool
        self._owns_pool = pool is None

    @property
    def pool(self) -> Any:
        if self._pool is None:
            from basevolve.sandbox import SandboxPool

            self._pool = SandboxPool()
        return self._pool

    async def execute(self, code: str) -> ExecResult:
        return await self.pool.arun(code, self.task.entry, timeout_s=self.task.timeout_s)

    async def evaluate(self, code: str) -> Evaluation:
        return self.task.evaluate(await self.execute(code))

    async def aclose(self) -> None:
        if self._owns_pool and self._pool is not None:
            close = getattr(self._pool, "aclose", None) or getattr(self._pool, "close", None)
            if close is not None:
                result = close()
                if hasattr(result, "__await__"):
                    await result
            self._pool = None
