"""The LLM slot is freed when the reply arrives (issue 23, part 3).

Before, a slot was held until the child was told, so while children were scored the
server idled.  Now a reply frees its slot at once, and the untold pulls (calls in flight
plus children awaiting evaluation) are bounded by ``max_in_flight`` plus the sandbox
workers plus a margin (:func:`basevolve.engine.ordering.evaluation_places`).  Here
evaluation is the bottleneck (each program sleeps 0.15 s on one sandbox worker, the
server answers in 0.05 s), so the allocator's untold pulls at a decision exceed what
``--max-in-flight`` alone allowed (proof that slots were freed before the tells) and
never exceed the new bound.
"""

from __future__ import annotations

import sqlite3

import numpy as np

from basevolve.config import RunConfig
from basevolve.engine import start_run
from basevolve.engine.ordering import EVAL_MARGIN, evaluation_places
from basevolve.testing import LLMTestServer

MIF = 4


def slow_reply(body: dict, index: int) -> str:
    points = np.random.default_rng(index).uniform(0, 1, size=(16, 2))
    return ("```python\nimport time\nimport numpy as np\n\n\ndef min_max_dist_dim2_16():\n"
            f"    time.sleep(0.15)\n    return np.array({points.tolist()!r})\n```\n")


def untold_at_decisions(store) -> list[int]:
    """For each allocator decision: the pulls (calls) sent before it and told after it."""
    con = sqlite3.connect(store)
    try:
        return [n for (n,) in con.execute(
            "SELECT (SELECT count(*) FROM calls c LEFT JOIN programs p USING (call_id) "
            "WHERE c.seq < a.seq AND coalesce(p.seq, c.told_seq, 1e18) > a.seq) "
            "FROM allocations a WHERE a.kind = 'ask' ORDER BY a.seq")]
    finally:
        con.close()


def test_reply_frees_the_slot_and_evaluations_are_bounded(pool, tmp_path):
    assert pool.workers == 1
    store = tmp_path / "slots.sqlite"
    with LLMTestServer(slow_reply, latency_s=0.05) as srv:
        cfg = RunConfig(task="min_max_distance", budget=32, model="test-model", params=1e9,
                        base_url=srv.base_url, allocator="random", arms=4, seed=1,
                        max_in_flight=MIF, run_id="slots")
        s = start_run(cfg, store, pool=pool)
        assert 2 <= srv.peak_in_flight <= MIF  # calls overlapped, never beyond the slots
    assert s["calls_completed"] == 32 and s["children"] == 32
    places = 1 + EVAL_MARGIN
    untold = untold_at_decisions(store)
    assert len(untold) == 32 - 4
    # a decision needs a free LLM slot and fewer than MIF + places untold pulls
    assert max(untold) <= MIF + places - 1
    # held until told, a slot allowed at most MIF - 1 untold pulls at a decision
    assert max(untold) > MIF - 1


def test_evaluation_places_follow_the_sandbox_workers(pool):
    from basevolve.engine.evaluator import SandboxEvaluator
    from basevolve.tasks import load_task

    task = load_task("min_max_distance")
    assert evaluation_places(SandboxEvaluator(task, pool)) == 1 + EVAL_MARGIN
    assert evaluation_places(object()) >= 1 + EVAL_MARGIN  # an evaluator without workers
