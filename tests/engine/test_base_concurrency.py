"""BaSE under concurrency (issue 9): the bandit really chooses while the server is full.

Before issue 9, with 16 slots and K <= 16 every trajectory held its one call in flight
and the only eligible arm at each decision was the one whose call had just returned, so
every allocator degenerated into a latency-driven round robin.  These tests use replies
whose quality depends on the trajectory (:class:`ArmMarkedReplies`: arm 0 is clearly
best) and check that, with K = 10 arms sharing 16 slots, UCB and Thompson concentrate
calls on the best arm, random spreads them, and almost every decision has a choice.
The sequential path (``max_in_flight = 1``) must still give exactly the allocation
sequence recorded from the engine before the change (commit 2d784cf).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from basevolve.config import RunConfig
from basevolve.engine import start_run
from basevolve.testing import LLMTestServer
from basevolve.testing.replies import ArmMarkedReplies, seeded_packing_reply

K, C, SEED = 10, 256, 3
RECORDED = Path(__file__).parent / "data" / "sequential_allocations_2d784cf.json"
#: The server's latency.  0.5 s keeps these runs LLM-bound (16 slots / 0.5 s = 32 calls/s
#: against one sandbox worker) on a slow or loaded machine.  At 0.2 s, CI once gave plain
#: Thompson's arm 0 only 56 calls against a median arm of 26 (2.2x).  Here that happened
#: only when evaluation was made slow (a 40 ms sleep in the reply program: 1 seed in 4 at
#: 2.8x at 0.2 s; at 0.5 s >= 7x on 6 of 6 seeds), i.e. when slots waited on the sandbox.
LATENCY_S = 0.5


def _base(pool, tmp_path: Path, allocator: str, **kw) -> tuple[dict, list[int]]:
    replies = ArmMarkedReplies(arms=K, run_seed=SEED, budget=C)
    store = tmp_path / f"{allocator}.sqlite"
    with LLMTestServer(replies, latency_s=LATENCY_S) as srv:
        cfg = RunConfig(task="circle_packing", budget=C, model="test-model", params=1e9,
                        base_url=srv.base_url, allocator=allocator, arms=K, seed=SEED,
                        max_in_flight=16, run_id=allocator, **kw)
        s = start_run(cfg, store, pool=pool, out_dir=None)
        peak = srv.peak_in_flight
        assert len(srv.requests) == C
    con = sqlite3.connect(store)
    per_arm = [n for (n,) in con.execute(
        "SELECT count(*) FROM calls WHERE counted=1 GROUP BY trajectory ORDER BY trajectory")]
    n_elig = [n for (n,) in con.execute(
        "SELECT n_eligible FROM allocations WHERE kind='ask' ORDER BY seq")]
    con.close()
    assert s["calls_completed"] == C and sum(per_arm) == C and peak == 16
    assert len(n_elig) == C - K and s["bandit_decisions"] == C - K
    assert s["decisions_with_choice"] == pytest.approx(np.mean(np.array(n_elig) >= 2))
    return s, per_arm


@pytest.mark.parametrize("allocator", ["ucb", "thompson_plain"])
def test_bandits_concentrate_on_the_best_trajectory(pool, tmp_path, allocator):
    """UCB1 and the paper's (undiscounted) Thompson sampling; the discounted default
    ``thompson`` forgets too fast to reach 3x here even when sequential (issue 9 note,
    ``benchmarks/base_concurrency.py``).

    Run with ``--deterministic`` (issue 23, part 2): 16 calls are still in flight, but the
    results are told in issue order, so the allocation is a function of the seed and not
    of the machine's load.  In arrival order a loaded CI box once gave plain Thompson's arm
    0 only 44 calls against a median arm of 28 (1.6x) where a quiet box gives 9-23x; the
    arrival-order run is checked below with bounds that hold under load."""
    s, per_arm = _base(pool, tmp_path, allocator, deterministic=True)
    assert s["best_arm"] == 0
    assert per_arm[0] >= 3 * np.median(per_arm), per_arm
    assert s["decisions_with_choice"] >= 0.9


@pytest.mark.parametrize("allocator", ["ucb", "thompson_plain"])
def test_bandits_choose_in_arrival_order(pool, tmp_path, allocator):
    """The default arrival order: every decision still has a choice while 16 calls are in
    flight, and the best program is found on the best arm.  Where the calls concentrate
    depends on when replies arrive, so it is pinned by the issue-order test above and
    measured in ``benchmarks/base_concurrency.py``; here only UCB's, which does not vary
    (70-71 of 256 calls on arm 0 in every run).

    Plain Thompson sampling, with this test's one sandbox worker, put fewer calls on arm 0
    than on the median arm in 2 of 16 runs of the code before 2026-11-26 and 3 of 16 after
    (quiet box; arm 0 got 3-17 calls there): its early draws favour an arm whose first
    children happened to improve, and the best-so-far reward reinforces it.  So its
    concentration is not asserted in arrival order (a stricter form of that check failed
    CI once)."""
    s, per_arm = _base(pool, tmp_path, allocator)
    assert s["best_arm"] == 0  # the best program was found on the best arm
    assert s["decisions_with_choice"] >= 0.9
    if allocator == "ucb":
        assert per_arm[0] > np.median(per_arm), per_arm


def test_random_spreads_calls_evenly(pool, tmp_path):
    s, per_arm = _base(pool, tmp_path, "random")
    assert s["decisions_with_choice"] >= 0.9
    # C/K = 25.6 per arm; a binomial(246, 1/10) + 1 count stays within about +-3.5 sd
    assert min(per_arm) >= 10 and max(per_arm) <= 42, per_arm
    assert per_arm[0] < 2 * np.median(per_arm), per_arm


def test_sequential_allocation_sequence_is_unchanged(tmp_path):
    """--max-in-flight 1 is exactly sequential Algorithm 2, as before issue 9: the same
    (kind, arm, reward) sequence as recorded from the engine at commit 2d784cf."""
    recorded = json.loads(RECORDED.read_text())
    with LLMTestServer(seeded_packing_reply) as srv:
        for allocator, expected in recorded.items():
            store = tmp_path / f"{allocator}.sqlite"
            cfg = RunConfig(task="circle_packing", budget=20, model="test-model", params=1e9,
                            base_url=srv.base_url, allocator=allocator, arms=4, seed=7,
                            max_in_flight=1, run_id=allocator)
            start_run(cfg, store, out_dir=None)
            con = sqlite3.connect(store)
            got = [list(r) for r in con.execute(
                "SELECT kind, trajectory, reward FROM allocations WHERE run_id=? ORDER BY seq",
                (allocator,))]
            con.close()
            assert got == expected, allocator
