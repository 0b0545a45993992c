"""The engine's evaluator: a failing sandbox scores a child 0 with a reason, and a
sandbox that keeps failing fails the run instead of wasting the rest of the budget."""

from __future__ import annotations

import asyncio

import pytest

from basevolve.engine.evaluator import MAX_SANDBOX_FAILURES_IN_ROW, SandboxEvaluator
from basevolve.errors import SandboxError
from basevolve.records import ExecStatus
from basevolve.sandbox import SandboxConfig, SandboxPool
from basevolve.tasks import load_task


def test_sandbox_failures_score_zero_then_fail_the_run() -> None:
    task = load_task("min_max_distance")
    pool = SandboxPool(SandboxConfig(workers=1))
    evaluator = SandboxEvaluator(task, pool)
    ok = asyncio.run(evaluator.evaluate(task.initial_program))
    assert ok.valid and ok.score > 0
    pool.close()  # a real, dead sandbox: arun raises SandboxError

    for _ in range(MAX_SANDBOX_FAILURES_IN_ROW - 1):
        r = asyncio.run(evaluator.execute(task.initial_program))
        assert r.status is ExecStatus.CRASHED and r.error.startswith("sandbox failure:")
        ev = task.evaluate(r)
        assert ev.score == 0 and not ev.valid and "sandbox failure" in ev.error
    with pytest.raises(SandboxError, match="failed 3 evaluations in a row"):
        asyncio.run(evaluator.execute(task.initial_program))
