"""Fresh randomness per evaluation (issue 31, item 8).

The worker pre-imports numpy and forks once per evaluation; CPython reseeds ``random``
after a fork, numpy does not.  Before ``_prepare.reseed`` every evaluation of a program
drawing from ``np.random`` without a seed saw the same numbers.
"""

from __future__ import annotations

import asyncio

from basevolve.engine.eval_seeds import EVALUATION_KEY, EvaluationSeeds, keyed
from basevolve.engine.evaluator import SandboxEvaluator
from basevolve.tasks.base import ScoreResult, Task

DRAW = ("import random\nimport numpy as np\n\n\ndef main():\n"
        "    return [float(np.random.rand()), random.random()]\n")


def test_each_evaluation_draws_afresh_without_a_seed(pool):
    draws = [pool.run(DRAW, "main", timeout_s=30).value for _ in range(3)]
    assert len({d[0] for d in draws}) == 3, draws  # numpy: the same three times before
    assert len({d[1] for d in draws}) == 3, draws


def test_a_given_seed_replicates_in_runs_and_sessions(pool):
    one = pool.run(DRAW, "main", timeout_s=30, seed=12345).value
    assert pool.run(DRAW, "main", timeout_s=30, seed=12345).value == one
    assert pool.run(DRAW, "main", timeout_s=30, seed=54321).value != one
    with pool.session(DRAW, timeout_s=30, seed=12345) as program:
        assert program.call("main").value == one  # a session starts from the same state


class Noisy(Task):
    """Scores the program's first numpy draw: the score *is* the evaluation's randomness."""

    name = "noisy_draw"
    entry = "main"
    timeout_s = 30.0
    initial_program = DRAW
    system_message = "Draw a number."

    def score_value(self, value, *, tol=1e-6):
        return ScoreResult(score=float(value[0]), valid=True)


def _scores(pool, seed: int | None) -> list[float]:
    evaluator = SandboxEvaluator(Noisy(), pool, seed=seed)

    async def go() -> list[float]:
        return [(await evaluator.evaluate(DRAW)).score for _ in range(3)]

    return asyncio.run(go())


def test_evaluator_seeds_differ_per_evaluation_and_replicate_per_run(pool):
    first = _scores(pool, seed=7)
    assert len(set(first)) == 3, first  # one program, three evaluations, three draws
    assert _scores(pool, seed=7) == first  # the same run seed: the same draws
    assert _scores(pool, seed=8) != first


def test_seeds_depend_on_identity_not_order():
    a, b = EvaluationSeeds(3), EvaluationSeeds(3)
    x1, y1, x2 = a.next("x"), a.next("y"), a.next("x")
    assert b.next("y") == y1 and b.next("x") == x1 and b.next("x") == x2
    assert len({x1, x2, y1}) == 3 and EvaluationSeeds(None).next("x") is None


def test_engine_evaluations_are_seeded_by_their_call_key():
    seeds: dict[str, list[int | None]] = {"a": [], "b": []}

    async def evaluate(name: str, evaluator: EvaluationSeeds) -> None:
        seeds[name].append(evaluator.next("same program"))

    async def go(name: str, keys: list[int]) -> None:
        evaluator = EvaluationSeeds(5)
        await asyncio.gather(*(keyed(k, lambda: evaluate(name, evaluator)) for k in keys))

    asyncio.run(go("a", [3, 1, 2]))
    asyncio.run(go("b", [2, 3, 1]))  # replies arrived in another order
    by_key_a = dict(zip([3, 1, 2], seeds["a"], strict=True))
    by_key_b = dict(zip([2, 3, 1], seeds["b"], strict=True))
    assert by_key_a == by_key_b and len(set(seeds["a"])) == 3
    assert EVALUATION_KEY.get() is None  # keyed() leaves the caller's context alone
