"""A tiny fake Task for protocol tests (the real tasks are written elsewhere)."""

from __future__ import annotations

from typing import Any

from basevolve.tasks.base import ScoreResult, Task

INITIAL = "def make():\n    return 1.0\n"


class FakeTask(Task):
    name = "fake"
    entry = "make"
    timeout_s = 5.0

    @property
    def initial_program(self) -> str:
        return INITIAL

    @property
    def system_message(self) -> str:
        return "You are a fake-task expert. Maximise the value returned by make()."

    def score_value(self, value: Any, *, tol: float = 1e-6) -> ScoreResult:
        return ScoreResult(score=float(value), valid=True)


def program(value: float) -> str:
    return f"def make():\n    return {value!r}\n"


ISLAND_INITIAL = (
    "import math\n\n# EVOLVE-BLOCK-START\ndef make():\n    return 0.5\n# EVOLVE-BLOCK-END\n"
)


class IslandTask(FakeTask):
    """A fake task whose program has an EVOLVE block (island protocols edit inside it)."""

    name = "fake_islands"

    @property
    def initial_program(self) -> str:
        return ISLAND_INITIAL
