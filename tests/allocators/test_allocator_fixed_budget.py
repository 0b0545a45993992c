"""Hand-checked first decisions of the issue-16 allocators: successive halving and
successive rejects (fixed-budget best-arm identification), SW-UCB and D-UCB
(non-stationary UCB)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from basevolve.allocators import ALLOCATORS
from basevolve.allocators.d_ucb import default_discount
from basevolve.allocators.successive_halving import round_quota
from basevolve.allocators.successive_rejects import sr_schedule
from basevolve.allocators.sw_ucb import default_window
from basevolve.errors import ConfigError


def make(name, k, horizon, **kw):
    return ALLOCATORS.get(name)(n_arms=k, rng=np.random.default_rng(0), horizon=horizon,
                                reward_max=1.0, **kw)


def run(alloc, means, asks):
    """Sequential ask/tell with a fixed reward per arm; returns the arms chosen."""
    got = []
    for _ in range(asks):
        arm = alloc.ask()
        got.append(arm)
        alloc.tell(arm, means[arm])
    return got


def test_successive_halving_rounds_spend_the_budget_exactly_by_hand():
    # K = 4, horizon 20: round 0 gets floor(20 / ceil(log2 4)) = 10 calls -> 3, 3, 2, 2
    assert round_quota(20, np.ones(4, bool)).tolist() == [3, 3, 2, 2]
    sh = make("successive_halving", 4, 20)
    means = [0.2, 0.8, 0.5, 0.6]
    # most-owed first (lowest index on ties): 0 1 0 1 2 3 0 1 2 3
    assert run(sh, means, 10) == [0, 1, 0, 1, 2, 3, 0, 1, 2, 3]
    # round 1: arms 1 and 3 survive (means 0.8, 0.6) and share the remaining 10
    assert run(sh, means, 10) == [1, 3] * 5
    assert sh.survivors.tolist() == [False, True, False, True] and sh.asked == 20
    # the budget is spent; the next ask closes the last round and keeps arm 1
    assert sh.ask() == 1 and sh.survivors.tolist() == [False, True, False, False]
    # Karnin et al.'s floors would have left calls unspent: 13 calls over 4 arms
    assert round_quota(13, np.ones(4, bool)).sum() == 6  # floor(13 / 2) now, 7 in round 1
    assert round_quota(7, np.array([True, True, False, False])).tolist() == [4, 3, 0, 0]


def test_successive_halving_concurrency_and_eligibility():
    sh = make("successive_halving", 4, 20)
    assert sh.ask([False, True, True, True]) == 1  # quota [3,3,2,2]; arm 0 not eligible
    # two more asks in flight, nothing told yet: the owed counts interleave
    assert sh.ask() == 0 and sh.ask() == 0
    assert sh.quota.tolist() == [1, 2, 2, 2]
    sh.cancel(0)  # a lost pull gives its call back to the round
    assert sh.quota.tolist() == [2, 2, 2, 2] and sh.asked == 2
    # quota left only on ineligible arms: the best eligible survivor by mean is asked
    # (never told: ties -> lowest index) and the call is taken from the arm owed most
    assert [sh.ask([True, True, False, False]) for _ in range(4)] == [0, 1, 0, 1]
    assert sh.quota.tolist() == [0, 0, 2, 2]
    assert sh.ask([True, False, False, False]) == 0
    assert sh.quota.tolist() == [0, 0, 1, 2]
    with pytest.raises(ConfigError, match="horizon"):
        ALLOCATORS.get("successive_halving")(n_arms=3, rng=np.random.default_rng(0))


def test_successive_rejects_schedule_and_first_decisions_by_hand():
    # K = 3, n = horizon + K = 20: logbar = 1/2 + 1/2 + 1/3 = 4/3;
    # n_1 = ceil(17 / (4/3 * 3)) = ceil(4.25) = 5, n_2 = ceil(17 / (4/3 * 2)) = ceil(6.375) = 7
    assert sr_schedule(3, 20) == [5, 7]
    sr = make("successive_rejects", 3, 17)
    means = [0.3, 0.9, 0.6]
    for arm in range(3):  # Algorithm 2's initial pulls are every arm's first
        sr.tell(sr.assign(arm), means[arm])
    assert run(sr, means, 12) == [0, 1, 2] * 4  # phase 1: up to 5 pulls each
    assert run(sr, means, 4) == [1, 2, 1, 2]  # arm 0 rejected; phase 2: up to 7
    assert sr.active.tolist() == [False, True, True] and sr.phase == 2
    # phase 2 closes at the next ask: arm 2 (0.6) is rejected, arm 1 takes the rest
    assert run(sr, means, 1) == [1]
    assert sr.active.tolist() == [False, True, False] and sr.pulls.sum() == 20
    # 5 + 7 + 7 = 19 <= 20 pulls: SR's leftover call went to its recommendation
    assert sr.pulls.tolist() == [5, 8, 7]


def test_successive_rejects_counts_pending_pulls_towards_the_phase():
    sr = make("successive_rejects", 3, 17)
    for arm in range(3):
        sr.assign(arm)  # pending, not told
    first = [sr.ask() for _ in range(12)]  # nothing told: targets count pending pulls
    assert first == [0, 1, 2] * 4 and sr.pending.tolist() == [5, 5, 5]
    # phase 1 is fully asked; no rewards yet, so nobody can be ranked below another:
    # ties reject the higher index, and untold arms are never preferred for rejection
    assert sr.ask() in (0, 1)
    assert sr.active.tolist() == [True, True, False]


def test_sw_ucb_first_decisions_and_the_window_by_hand():
    assert default_window(90, 10) == math.ceil(2 * math.sqrt(100 * math.log(100)))
    sw = make("sw_ucb", 2, 10, window=3, xi=0.6)
    sw.tell(sw.assign(0), 0.2)
    sw.tell(sw.assign(1), 0.8)
    # t = min(2, 3): index = mean + sqrt(0.6 ln 2 / 1)
    b = math.sqrt(0.6 * math.log(2))
    assert sw.indices().tolist() == pytest.approx([0.2 + b, 0.8 + b])
    assert sw.ask() == 1
    sw.tell(1, 0.8)
    # window (0, .2), (1, .8), (1, .8); t = 3
    assert sw.indices().tolist() == pytest.approx(
        [0.2 + math.sqrt(0.6 * math.log(3)), 0.8 + math.sqrt(0.6 * math.log(3) / 2)])
    assert sw.ask() == 1
    sw.tell(1, 0.8)
    # arm 0 has left the 3-play window: index +inf, it is played again
    assert math.isinf(sw.indices()[0]) and sw.ask() == 0
    # its pending pull counts in N_0 with the window's mean 0.8 (it has no reward in
    # the window): 0.8 + sqrt(0.6 ln 3 / 1) = 1.61 > arm 1's 0.8 + sqrt(0.6 ln 3 / 3)
    assert sw.indices().tolist() == pytest.approx(
        [0.8 + math.sqrt(0.6 * math.log(3)), 0.8 + math.sqrt(0.6 * math.log(3) / 3)])


def test_d_ucb_first_decisions_by_hand():
    assert default_discount(90, 10) == pytest.approx(1 - 0.25 / 10)
    d = make("d_ucb", 2, 10, gamma=0.5, xi=0.6)
    d.tell(d.assign(0), 0.2)
    d.tell(d.assign(1), 0.8)  # N = [0.5, 1], S = [0.1, 0.8], n = 1.5
    assert (d.N.tolist(), d.S.tolist()) == ([0.5, 1.0], pytest.approx([0.1, 0.8]))
    ln = math.log(1.5)
    assert d.indices().tolist() == pytest.approx(
        [0.2 + 2 * math.sqrt(0.6 * ln / 0.5), 0.8 + 2 * math.sqrt(0.6 * ln / 1.0)])
    assert d.ask() == 1  # 1.786 > 1.595
    # a second ask while it is pending: N_eff = [0.5, 2], n = 2.5 -> arm 0 (2.297 > 1.847)
    assert d.ask() == 0
    d.tell(1, 0.8)
    d.tell(0, 0.2)
    d2 = make("d_ucb", 2, 10, gamma=0.5, xi=0.6)
    d2.tell(d2.assign(0), 0.2)
    d2.tell(d2.assign(1), 0.8)
    d2.tell(d2.ask(), 0.8)  # N = [0.25, 1.5], n = 1.75: the old arm's bonus has grown
    assert d2.ask() == 0
    with pytest.raises(ConfigError, match="gamma"):
        make("d_ucb", 2, 10, gamma=1.5)
    with pytest.raises(ConfigError, match="window"):
        make("sw_ucb", 2, 10, window=0)


@pytest.mark.parametrize("name", ["successive_halving", "successive_rejects", "sw_ucb", "d_ucb"])
def test_best_arm_gets_most_of_the_budget_on_a_stationary_bandit(name):
    k, horizon = 5, 400
    alloc = make(name, k, horizon)
    src = np.random.default_rng(3)
    means = np.array([0.3, 0.35, 0.8, 0.3, 0.4])
    for arm in range(k):
        alloc.tell(alloc.assign(arm), float(np.clip(means[arm] + 0.05 * src.standard_normal(), 0, 1)))
    for _ in range(horizon):
        arm = alloc.ask()
        alloc.tell(arm, float(np.clip(means[arm] + 0.05 * src.standard_normal(), 0, 1)))
    assert alloc.pulls.sum() == horizon + k
    assert alloc.pulls[2] == alloc.pulls.max()
    if name.startswith("successive"):
        # best-arm identification: its last round/phase may split the budget between
        # the finalists, but the arm it keeps (and asks from now on) is the best one
        assert alloc.ask() == 2
    else:
        assert alloc.pulls[2] > 0.4 * alloc.pulls.sum()
