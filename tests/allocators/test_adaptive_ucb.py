"""``adaptive_ucb`` (issue 26): AdaEvolve's island-choice rule over trajectories, checked
by hand -- the normalised gain, the per-arm decay of R and V, the min-visits rule, the
1.41 bonus -- plus its seeded reproducibility and its behaviour with 16 calls in flight."""

from __future__ import annotations

import math

import numpy as np
import pytest

from basevolve.allocators import ALLOCATORS
from basevolve.allocators.adaptive_ucb import DecayedUCB, normalised_gain
from basevolve.errors import ConfigError


def make(k: int = 3, seed: int = 0, **kw):
    return ALLOCATORS.get("adaptive_ucb")(n_arms=k, rng=np.random.default_rng(seed),
                                          horizon=100, **kw)


def test_normalised_gain_by_hand():
    assert normalised_gain(0.6, 0.5, 0.8) == pytest.approx(0.1 / (0.8 + 1e-8))
    assert normalised_gain(0.5, 0.5, 0.8) == 0.0  # no gain
    assert normalised_gain(0.4, 0.5, 0.8) == 0.0
    assert normalised_gain(0.3, -math.inf, -math.inf) == 1.0  # first observation
    assert normalised_gain(0.9, 0.1, 0.2) == 1.0  # capped
    assert normalised_gain(0.2, 0.0, 0.0) == 1.0  # a zero global best: capped, not inf


def test_first_three_visits_are_random_then_the_index_decides():
    alloc = make(k=2, seed=1)
    # 3 visits each before the index is compared; the order among them is random
    asks = []
    for r in (0.5, 0.5, 0.5, 0.5, 0.5, 0.5):
        asks.append(alloc.ask())
        alloc.tell(asks[-1], r)
    assert sorted(asks) == [0, 0, 0, 1, 1, 1]
    assert all(e.prob in (0.5, 1.0) for e in alloc.events if e.kind == "ask")
    # every arm's first tell counts as delta = 1, later ones gained nothing:
    # R = 0.9^2 * 1, V = 1 + 0.9 + 0.81
    s = alloc.state
    assert s.rewards == pytest.approx([0.81, 0.81])
    assert s.decayed_visits == pytest.approx([2.71, 2.71])
    # arm 1 now improves: delta = (0.7 - 0.5) / 0.5 = 0.4 (capped at 1)
    alloc.assign(1)
    alloc.tell(1, 0.7)
    assert s.rewards[1] == pytest.approx(0.9 * 0.81 + 0.2 / (0.5 + 1e-8))
    assert s.decayed_visits[1] == pytest.approx(0.9 * 2.71 + 1)
    assert s.global_best == 0.7
    idx = alloc.state.indices()
    t = 7
    want0 = 0.81 / 2.71 + 1.41 * math.sqrt(math.log(t) / 3)
    want1 = s.rewards[1] / s.decayed_visits[1] + 1.41 * math.sqrt(math.log(t) / 4)
    assert idx == pytest.approx([want0, want1])
    assert alloc.ask() == int(np.argmax([want0, want1]))


def test_a_stalled_arm_loses_its_standing_after_a_few_pulls():
    """R/V is a recency-weighted gain per visit: an arm that improved early and then
    stopped falls below one that keeps improving, whatever its fitness level."""
    alloc = make(k=2, c=0.0, min_visits=0)
    alloc.assign(0)
    alloc.tell(0, 0.9)  # arm 0 starts high ...
    alloc.assign(1)
    alloc.tell(1, 0.2)
    level = 0.2
    for _ in range(6):
        alloc.assign(0)
        alloc.tell(0, 0.9)  # ... and stalls
        level += 0.05
        alloc.assign(1)
        alloc.tell(1, level)  # arm 1 keeps climbing, below arm 0
    assert alloc.ask() == 1
    ucb = ALLOCATORS.get("ucb")(n_arms=2, rng=np.random.default_rng(0), horizon=100, c=0.0)
    for r0, r1 in [(0.9, 0.2)] + [(0.9, 0.2 + 0.05 * k) for k in range(1, 7)]:
        ucb.assign(0)
        ucb.tell(0, r0)
        ucb.assign(1)
        ucb.tell(1, r1)
    assert ucb.ask() == 0  # UCB1 on the best fitness keeps the high arm


def test_improvement_mode_takes_the_gain_normalised_by_one():
    alloc = make(k=2, reward_mode="improvement", min_visits=0)
    alloc.assign(0)
    alloc.tell(0, 0.25)
    alloc.assign(1)
    alloc.tell(1, 3.0)  # capped
    assert alloc.state.rewards == pytest.approx([0.25, 1.0])
    assert alloc.reward_of(0.5, 0.75) == 0.25


def test_sixteen_in_flight_spread_and_count_pending_pulls():
    """With 16 asks before any tell, every arm of K = 10 is asked before any gets a
    fourth pull (pending pulls count as visits), and the bookkeeping adds up."""
    alloc = make(k=10, seed=4)
    first = [alloc.ask() for _ in range(16)]
    counts = np.bincount(first, minlength=10)
    assert counts.max() <= 3 and (counts >= 1).sum() >= 6
    assert alloc.pending.sum() == 16
    # steady state: 16 in flight, tells in FIFO order with noisy gains
    src = np.random.default_rng(9)
    flight = list(first)
    level = np.zeros(10)
    for _ in range(200):
        arm = flight.pop(0)
        level[arm] += src.random() * 0.01 * (arm + 1)
        alloc.tell(arm, float(level[arm]))
        flight.append(alloc.ask())
        assert alloc.pending.sum() == 16
    assert alloc.pulls.sum() == 200
    # more pulls went to the arms that improve faster
    assert alloc.pulls[7:].sum() > alloc.pulls[:3].sum()
    assert all(np.isfinite(v) for v in alloc.state.indices(alloc.pending))


def test_seeded_reproducibility_under_concurrency():
    def run(seed: int) -> tuple[list[int], dict]:
        alloc = make(k=6, seed=seed)
        src = np.random.default_rng(2)
        flight = [alloc.ask() for _ in range(16)]
        out = list(flight)
        for _ in range(80):
            arm = flight.pop(int(src.integers(len(flight))))  # out-of-order tells
            alloc.tell(arm, float(src.random()))
            a = alloc.ask()
            flight.append(a)
            out.append(a)
        return out, alloc.summary()

    assert run(3) == run(3)
    assert run(3)[0] != run(4)[0]  # the random min-visits phase follows the seed


def test_bad_parameters_are_config_errors():
    for kw, msg in (({"decay": 1.5}, "decay"), ({"c": -1.0}, "c must"),
                    ({"min_visits": -1}, "min_visits"), ({"min_visits": 2.5}, "min_visits")):
        with pytest.raises(ConfigError, match=msg):
            make(**kw)


def test_decayed_ucb_grows_arms_for_spawned_islands():
    state = DecayedUCB(2)
    assert state.add_arm() == 2 and state.n_arms == 3
    assert state.indices().tolist() == [math.inf] * 3
    arm, prob = state.choose(np.array([True, False, True]), np.random.default_rng(0))
    assert arm in (0, 2) and prob == 0.5
