"""FunctionTask + FunctionEvaluator (issue 21): the trusted evaluator's contract, its
mistakes reported as scorer errors, programs that do not import scored 0 with a reason."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterator
from pathlib import Path

import pytest

from basevolve.engine.evaluators import EVALUATORS, evaluator_for
from basevolve.engine.function_eval import FunctionEvaluator
from basevolve.errors import TaskError
from basevolve.records import Trust
from basevolve.sandbox import SandboxConfig, SandboxPool
from basevolve.tasks import check_task
from basevolve.tasks.base import ScoreResult
from basevolve.tasks.function import FunctionTask
from basevolve.tasks.identity import object_identity
from basevolve.tasks.scoring import ScorerError

GOOD = "def square(x):\n    return x * x\n"


class Squares(FunctionTask):
    """Scores how many of 0..9 the program squares correctly."""

    name = "squares"
    entry = "square"
    timeout_s = 30.0
    call_timeout_s = 2.0
    initial_program = GOOD
    system_message = "Write square(x)."
    calls_made = 0

    def evaluate_program(self, program) -> ScoreResult:
        ok = 0
        for x in range(10):
            r = program.call("square", x)
            type(self).calls_made += 1
            ok += r.ok and r.value == x * x
        failing = [] if ok == 10 else ["square(x) != x * x for some x"]
        return ScoreResult(ok / 10, ok > 0, metrics={"correct": float(ok)},
                           artifacts={"failing": failing[0]} if failing else {})


class Raising(Squares):
    def evaluate_program(self, program) -> ScoreResult:
        program.call("square", 1)
        raise KeyError("the evaluator's own bug")


class WrongType(Squares):
    def evaluate_program(self, program):
        return 0.5


class NotFinite(Squares):
    def evaluate_program(self, program) -> ScoreResult:
        return ScoreResult(math.nan, True)


@pytest.fixture(scope="module")
def pool() -> Iterator[SandboxPool]:
    with SandboxPool(SandboxConfig(workers=2, memory_mb=768)) as p:
        yield p


def _evaluate(task: FunctionTask, pool: SandboxPool, code: str, log: Path):
    evaluator = evaluator_for(task, pool, scorer_log=log)
    try:
        return evaluator, asyncio.run(evaluator.evaluate(code))
    finally:
        asyncio.run(evaluator.aclose())


def test_the_registry_picks_the_function_evaluator(pool: SandboxPool, tmp_path: Path) -> None:
    assert EVALUATORS.get("calls") is FunctionEvaluator
    evaluator, ev = _evaluate(Squares(), pool, GOOD, tmp_path / "log")
    assert isinstance(evaluator, FunctionEvaluator)
    assert ev.score == 1.0 and ev.valid and ev.metrics == {"correct": 10.0}
    assert ev.trust is Trust.EVALUATOR and ev.strict_score == ev.score
    assert ev.artifacts == {}


def test_a_wrong_program_gets_its_artifacts(pool: SandboxPool, tmp_path: Path) -> None:
    code = "def square(x):\n    return x + x\n"  # right for 0 and 2 only
    _, ev = _evaluate(Squares(), pool, code, tmp_path / "log")
    assert ev.score == pytest.approx(0.2) and ev.artifacts == {
        "failing": "square(x) != x * x for some x"}


def test_a_program_that_does_not_import_is_never_handed_to_the_evaluator(
        pool: SandboxPool, tmp_path: Path) -> None:
    Squares.calls_made = 0
    _, ev = _evaluate(Squares(), pool, "def square(x:\n", tmp_path / "log")
    assert not ev.valid and ev.score == 0.0 and ev.error.startswith("error: SyntaxError")
    assert Squares.calls_made == 0 and ev.trust is Trust.EVALUATOR


@pytest.mark.parametrize(("cls", "why"), [
    (Raising, "KeyError: \"the evaluator's own bug\""),
    (WrongType, "must return a ScoreResult, got float"),
    (NotFinite, "returned score=nan"),
])
def test_evaluator_bugs_are_scorer_errors_naming_the_task_file(
        pool: SandboxPool, tmp_path: Path, cls: type[FunctionTask], why: str) -> None:
    log = tmp_path / "scorer.log"
    _, ev = _evaluate(cls(), pool, GOOD, log)
    assert ev.score == 0.0 and not ev.valid
    assert ev.error.startswith(f"scorer error: the evaluator of task 'squares' ({__file__})")
    assert "evaluate_program" in ev.error and why in ev.error
    assert "Traceback" in log.read_text()


def test_three_evaluator_errors_in_a_row_stop_the_run(pool: SandboxPool, tmp_path: Path) -> None:
    evaluator = FunctionEvaluator(Raising(), pool, scorer_log=tmp_path / "log")
    try:
        for _ in range(2):
            assert asyncio.run(evaluator.evaluate(GOOD)).error.startswith("scorer error")
        with pytest.raises(ScorerError, match="3 scorer errors in a row"):
            asyncio.run(evaluator.evaluate(GOOD))
    finally:
        asyncio.run(evaluator.aclose())


def test_the_task_contract_is_checked_and_the_call_limit_is_part_of_the_identity() -> None:
    class TooLong(Squares):
        call_timeout_s = 60.0

    with pytest.raises(TaskError, match="call_timeout_s must be a positive number"):
        check_task(TooLong())

    class Unknown(Squares):
        evaluation = "telepathy"

    with pytest.raises(TaskError, match="evaluation='telepathy' is not a kind"):
        check_task(Unknown())
    assert check_task(Squares()).name == "squares"

    quicker = Squares()
    quicker.call_timeout_s = 1.0  # same class source, another limit: another task
    assert object_identity(Squares()).sha256 != object_identity(quicker).sha256
