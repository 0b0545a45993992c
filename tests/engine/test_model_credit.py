"""The model bandit's reward (issue 34, items 1 and 2; engine/model_credit.py): a gain is
credited once, and ``improvement_per_*`` divide it by what the call actually cost.

Router-level tests ask a real :class:`ModelRouter` (real store, clients that are never
contacted) one decision and one reward at a time, in the order the engine does: the
reward when the child is scored, then the child told to its trajectory (``seen``).  The
end-to-end test checks the same rule on a run with 8 calls in flight."""

from __future__ import annotations

import sqlite3

import pytest
from router_support import proposal, router

from basevolve.config import RunConfig
from basevolve.engine import start_run
from basevolve.engine.models import CallCost
from basevolve.errors import ConfigError
from basevolve.testing import LLMTestServer

TWO = ("small,params=1e9", "big,params=8e9")


def _pull(r, key: int, best: float, trajectory: int = 0) -> int:
    arm = r.choose(proposal(trajectory), key=key, call_index=key, best=best,
                   trajectory=trajectory)
    r.answered(key, arm, CallCost(flops=2 * r.models[arm].active_params * 100, tokens=100))
    return arm


def _told(r, key: int, score: float, best_now: float, trajectory: int = 0) -> float:
    reward = r.reward(key, score, best_now)
    r.tell(key, key, reward, live=True)
    r.seen(trajectory, score)
    return reward


def test_concurrent_gains_are_credited_once(tmp_path):
    """Issue 34, item 1: three calls asked at best 0.50 return 0.60, 0.65 and (told last)
    0.55.  Before, each earned its score minus 0.50: 0.10 + 0.15 + 0.05 = 0.30 while the
    best rose by 0.15.  Now the gains add up to the rise: 0.10 + 0.05, and the 0.55
    told after the best reached 0.65 earns 0."""
    r = router(tmp_path, TWO, model_allocator="ucb")
    for key in range(3):
        _pull(r, key, best=0.5)
    # a greedy generation: the protocol's best is still 0.50 while its children are told
    rewards = [_told(r, 0, 0.60, 0.5), _told(r, 1, 0.65, 0.5), _told(r, 2, 0.55, 0.5)]
    assert rewards == pytest.approx([0.10, 0.05, 0.0])
    assert sum(rewards) == pytest.approx(0.65 - 0.5)
    # the mark is per trajectory: another trajectory's child is measured against its own
    _pull(r, 3, best=0.2, trajectory=1)
    assert _told(r, 3, 0.3, 0.2, trajectory=1) == pytest.approx(0.1)
    # and a best raised outside the bandit's calls (the protocol's best now) counts too
    _pull(r, 4, best=0.65)
    assert _told(r, 4, 0.7, 0.72) == 0.0


def test_model_rewards_sum_to_each_trajectorys_rise_with_calls_in_flight(pool, tmp_path,
                                                                         scripted):
    """End to end, 8 calls in flight over 2 trajectories of MinMaxDist: per trajectory
    the model bandit's rewards add up to the rise of the best child over the initial
    program (before issue 34 they added up to more: concurrent calls shared a rise)."""
    store = tmp_path / "c.sqlite"
    with LLMTestServer(scripted(seed=7), latency_s=0.02, latency_jitter=0.9) as srv:
        cfg = RunConfig(task="min_max_distance", budget=40, base_url=srv.base_url, seed=3,
                        model="small", models=("small,params=1e9", "big,params=8e9"),
                        model_allocator="thompson_plain", allocator="ucb", arms=2,
                        max_in_flight=8, deterministic=True, run_id="c")
        start_run(cfg, store, pool=pool, out_dir=None)
    con = sqlite3.connect(store)
    try:
        initial = con.execute("SELECT max(score) FROM programs WHERE is_initial=1").fetchone()[0]
        rows = con.execute(
            "SELECT c.trajectory, sum(e.reward) FROM model_events e JOIN calls c ON "
            "c.run_id=e.run_id AND c.call_index=e.call_index WHERE e.kind='tell' "
            "GROUP BY c.trajectory").fetchall()
        best = dict(con.execute("SELECT trajectory, max(score) FROM programs WHERE "
                                "is_initial=0 AND valid=1 GROUP BY trajectory").fetchall())
        tells = con.execute("SELECT count(*) FROM model_events WHERE kind='tell'").fetchone()[0]
    finally:
        con.close()
    assert tells == 40 and len(rows) == 2
    for t, total in rows:
        assert total == pytest.approx(max(0.0, best[t] - initial)), t
    assert any(total > 0 for _, total in rows)


@pytest.mark.parametrize("mode", ["improvement_per_flop", "improvement_per_token"])
def test_per_cost_rewards_divide_by_the_calls_actual_cost(tmp_path, mode):
    """Issue 34, item 2: the same gain of 0.4 by the same model earns less for a longer
    call; the reference is one full reply (max_tokens = 1,000) of the smallest model:
    a call at or below it earns the whole gain, one of 4,000 tokens a quarter.  Before,
    ``improvement_per_flop`` was the same for both and ``improvement_per_token`` paid
    ``prompt / (prompt + completion)``."""
    r = router(tmp_path, TWO, model_allocator="ucb", model_reward=mode, max_tokens=1000)
    got = []
    for key, tokens in enumerate((300, 4000, 16000)):
        arm = r.choose(proposal(key), key=key, call_index=key, best=0.5, trajectory=key)
        p = r.models[arm].active_params
        r.answered(key, arm, CallCost(flops=2 * p * tokens, tokens=tokens))
        got.append((r.models[arm].name, r.reward(key, 0.9, 0.5)))
    size = {"small": 1, "big": 8}
    want = []
    for (name, _), tokens in zip(got, (300, 4000, 16000), strict=True):
        cost = tokens * (size[name] if mode == "improvement_per_flop" else 1)
        want.append(0.4 * min(1.0, 1000 / cost))
    assert [g for _, g in got] == pytest.approx(want)
    assert got[0][1] > got[2][1]  # 300 tokens earn more than 16,000 for the same gain


def test_improvement_per_usd_divides_by_the_calls_dollars(tmp_path):
    """With prices: the reference is 1,000 completion tokens at the cheapest completion
    rate ($1/M here: $0.001); a call of $0.004 earns a quarter of its gain."""
    r = router(tmp_path, ("small,params=1e9,price=0.5/1", "big,params=8e9,price=4/8"),
               model_allocator="ucb", model_reward="improvement_per_usd", max_tokens=1000)
    got = {}
    for key, usd in enumerate((0.0005, 0.004)):
        arm = r.choose(proposal(key), key=key, call_index=key, best=0.0, trajectory=key)
        r.answered(key, arm, CallCost(flops=1.0, tokens=1.0, usd=usd))
        got[usd] = r.reward(key, 0.8, 0.0)
    assert got == pytest.approx({0.0005: 0.8, 0.004: 0.2})


def test_improvement_per_usd_needs_a_price_for_every_model(tmp_path):
    from basevolve.engine.models import check_models

    cfg = RunConfig(task="circle_packing", budget=10, model="small", base_url="http://127.0."
                    "0.1:9/v1", models=("small,params=1e9,price=1/2", "big,params=8e9"),
                    model_allocator="ucb", model_reward="improvement_per_usd")
    with pytest.raises(ConfigError, match="improvement_per_usd needs a price for every model; "
                                          "'big'"):
        check_models(cfg)
