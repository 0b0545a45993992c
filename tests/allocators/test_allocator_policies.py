"""Hand-checked decisions and learning behaviour of each policy."""

from __future__ import annotations

import math

import numpy as np
import pytest

from basevolve.allocators import ALLOCATORS, pull_reward, unit_reward
from basevolve.allocators.exp3p import exp3p_defaults
from basevolve.errors import ConfigError


def make(name, k=4, seed=0, horizon=100, **kw):
    return ALLOCATORS.get(name)(n_arms=k, rng=np.random.default_rng(seed), horizon=horizon, **kw)


def test_reward_helpers():
    assert pull_reward(0.5, 0.7, "best") == 0.7
    assert math.isclose(pull_reward(0.5, 0.7, "improvement"), 0.2)
    assert pull_reward(0.7, 0.7, "improvement") == 0.0
    assert make("ucb", reward_mode="improvement").reward_of(0.5, 0.75) == 0.25
    assert unit_reward(1.05, 1.05) == 1.0
    assert unit_reward(2.0, 1.05) == 1.0  # a record beyond the cap saturates
    assert unit_reward(-1.0, 1.05) == 0.0
    assert math.isclose(unit_reward(0.525, 1.05), 0.5)
    with pytest.raises(ConfigError, match="reward_mode"):
        pull_reward(0, 1, "gain")


def test_single_refuses_more_than_one_arm():
    with pytest.raises(ConfigError, match=r"single.*<= 1, got 3"):
        make("single", k=3)
    alloc = make("single", k=1)
    assert [alloc.ask() for _ in range(3)] == [0, 0, 0]


def test_round_robin_order_and_skipping():
    rr = make("round_robin", k=4)
    got = []
    for _ in range(6):
        got.append(rr.ask())
        rr.tell(got[-1], 0.1)
    assert got == [0, 1, 2, 3, 0, 1]
    assert rr.ask([True, False, False, True]) == 3  # 2 is ineligible: skipped
    assert rr.ask([True, True, False, False]) == 0  # wraps around
    assert rr.ask() == 1


def test_random_is_uniform_over_eligible():
    alloc = make("random", k=4, seed=1)
    mask = [True, False, True, True]
    counts = np.bincount([alloc.ask(mask) for _ in range(3000)], minlength=4)
    assert counts[1] == 0
    assert np.all(np.abs(counts[[0, 2, 3]] / 3000 - 1 / 3) < 0.04)
    assert alloc.events[0].prob == pytest.approx(1 / 3)


def test_ucb_pulls_each_arm_once_then_highest_index():
    alloc = make("ucb", k=3, c=1.0, reward_max=1.0)
    first = []
    for r in (0.2, 0.8, 0.5):
        first.append(alloc.ask())
        alloc.tell(first[-1], r)
    assert first == [0, 1, 2]
    # n = 3, n_i = 1: index = mean + sqrt(2 ln 3) -> arm 1 (0.8) is highest
    bonus = math.sqrt(2 * math.log(3))
    assert alloc.indices() == pytest.approx([0.2 + bonus, 0.8 + bonus, 0.5 + bonus])
    assert alloc.ask() == 1
    alloc.tell(1, 0.8)
    # n = 4: arm 1 has n_1 = 2 -> 0.8 + sqrt(2 ln4 / 2) = 1.977 < 0.5 + sqrt(2 ln 4) = 2.165
    assert alloc.ask() == 2
    # the eligible mask is respected and unseen arms still come first
    fresh = make("ucb", k=3)
    assert fresh.ask([False, True, True]) == 1


def test_ucb_pending_pulls_spread_concurrent_asks():
    alloc = make("ucb", k=5)
    assert sorted(alloc.ask() for _ in range(5)) == [0, 1, 2, 3, 4]
    for i in range(5):
        alloc.tell(i, 0.9 if i == 2 else 0.5)
    # the best arm is chosen next, but a second concurrent ask moves on: its bonus shrank
    a1, a2 = alloc.ask(), alloc.ask()
    assert a1 == 2 and a2 != 2
    assert alloc.pending.tolist() == [int(i in (a1, a2)) for i in range(5)]


def test_exp3p_defaults_probabilities_and_floor():
    k, t = 10, 118
    alpha, gamma = exp3p_defaults(k, t, delta=0.05)
    assert alpha == pytest.approx(2 * math.sqrt(math.log(k * t / 0.05)))
    assert gamma == pytest.approx(min(0.6, 2 * math.sqrt(0.6 * k * math.log(k) / t)))
    assert gamma == 0.6  # small T: the 3/5 cap binds
    alloc = make("exp3p", k=k, horizon=t)
    assert alloc.probabilities() == pytest.approx(np.full(k, 0.1))
    src = np.random.default_rng(0)
    for _ in range(200):
        arm = alloc.ask()
        alloc.tell(arm, 1.3 if arm == 4 else src.random() * 0.3)
        p = alloc.probabilities()
        assert p.sum() == pytest.approx(1.0)
        assert np.all(p >= gamma / k - 1e-12)
    assert np.argmax(alloc.probabilities()) == 4
    big = make("exp3p", k=4, horizon=100_000)
    assert big.gamma == pytest.approx(2 * math.sqrt(0.6 * 4 * math.log(4) / 100_000))


def test_exp3p_importance_weight_uses_renormalised_ask_probability():
    alloc = make("exp3p", k=4, horizon=50, gamma=0.5, alpha=0.0)
    arm = alloc.ask([False, True, False, True])
    assert alloc.events[-1].prob == pytest.approx(0.5)  # uniform p over 2 eligible arms
    before = alloc.log_w.copy()
    alloc.tell(arm, 1.05)  # unit reward 1.0
    delta = alloc.log_w - before
    eta = 0.5 / (3 * 4)
    expected = np.zeros(4)
    expected[arm] = eta * 1.0 / 0.5
    assert delta == pytest.approx(expected)


def test_exp3p_out_of_order_tell_uses_its_own_asks_probability():
    """Issue 23, item 3: two pulls of one arm asked with different probabilities (1/4
    over four arms, then 1 as the only eligible arm); the later one is told first.  Each
    reward is weighted by the probability of the ask that made its pull, not by the
    arm's oldest pending ask."""
    alloc = make("exp3p", k=4, horizon=50, gamma=0.5, alpha=0.0)
    eta = 0.5 / (3 * 4)
    arm = alloc.ask(ticket=10)
    assert alloc.events[-1].prob == pytest.approx(0.25)
    assert alloc.ask([i == arm for i in range(4)], ticket=11) == arm
    assert alloc.events[-1].prob == 1.0
    w0 = alloc.log_w.copy()
    alloc.tell(arm, 1.05, ticket=11)  # unit reward 1 over its own probability 1
    assert (alloc.log_w - w0)[arm] == pytest.approx(eta * 1.0 / 1.0)
    w1 = alloc.log_w.copy()
    alloc.tell(arm, 1.05, ticket=10)  # ... and this one over 1/4
    assert (alloc.log_w - w1)[arm] == pytest.approx(eta * 1.0 / 0.25)
    tells = [(e.ticket, e.prob) for e in alloc.events if e.kind == "tell"]
    assert tells == [(11, 1.0), (10, pytest.approx(0.25))]
    # without tickets a tell takes the arm's oldest pull (a caller telling in ask order)
    fifo = make("exp3p", k=4, horizon=50, gamma=0.5, alpha=0.0)
    a = fifo.ask()
    fifo.ask([i == a for i in range(4)])
    fifo.tell(a, 1.05)
    assert fifo.events[-1].prob == pytest.approx(0.25)
    # a wrong or repeated ticket is refused, nothing changes
    with pytest.raises(ConfigError, match="ticket=99"):
        fifo.tell(a, 0.5, ticket=99)
    b = alloc.ask(ticket=12)
    with pytest.raises(ConfigError, match="ticket 12 is already pending"):
        alloc.ask(ticket=12)
    assert alloc.pending.sum() == 1 and alloc.pending[b] == 1
    alloc.cancel(b, ticket=12)
    # a stored log with tickets replays to the same state
    again = make("exp3p", k=4, horizon=50, gamma=0.5, alpha=0.0)
    again.replay([e.as_dict() for e in alloc.events])
    assert np.array_equal(again.log_w, alloc.log_w) and again.events == alloc.events


def test_exp3p_assigned_pulls_do_not_move_weights():
    alloc = make("exp3p", k=3, horizon=30)
    w = alloc.log_w.copy()
    for i in range(3):
        alloc.assign(i)
        alloc.tell(i, 0.9)
    assert np.array_equal(alloc.log_w, w)
    assert alloc.pulls.tolist() == [1, 1, 1]
    with pytest.raises(ConfigError, match="horizon"):
        ALLOCATORS.get("exp3p")(n_arms=3, rng=np.random.default_rng(0))
    with pytest.raises(ConfigError, match="gamma"):
        make("exp3p", gamma=1.5)


def test_thompson_posterior_and_discount():
    alloc = make("thompson", k=2, discount=0.5, bernoulli=False, reward_max=1.0)
    arm = alloc.ask()
    alloc.tell(arm, 0.75)
    assert alloc.S[arm] == pytest.approx(0.75) and alloc.F[arm] == pytest.approx(0.25)
    other = 1 - arm
    alloc.tell(alloc.assign(other), 1.0)
    assert alloc.S[arm] == pytest.approx(0.375)  # discounted once
    assert alloc.posterior_mean()[other] == pytest.approx(2 / 3)
    with pytest.raises(ConfigError, match="discount"):
        make("thompson", discount=0.0)


def test_thompson_plain_is_the_undiscounted_posterior_by_hand():
    """Issue 9, 5e: the paper's plain Thompson sampling (no discount) next to the default."""
    plain = make("thompson_plain", k=2, bernoulli=False, reward_max=1.0)
    assert plain.discount == 1.0 and plain.summary()["discount"] == 1.0
    assert make("thompson").discount == 0.95  # the default is unchanged
    plain.tell(plain.assign(0), 0.75)
    plain.tell(plain.assign(1), 1.0)
    plain.tell(plain.assign(0), 0.25)
    # S_0 = 0.75 + 0.25 = 1.0, F_0 = 0.25 + 0.75 = 1.0: nothing fades
    assert (plain.S.tolist(), plain.F.tolist()) == ([1.0, 1.0], [1.0, 0.0])
    assert plain.posterior_mean().tolist() == [0.5, 2 / 3]
    # decision for decision the same as thompson(discount=1) on the same seed
    a, b = make("thompson_plain", k=5, seed=4), make("thompson", k=5, seed=4, discount=1.0)
    src = np.random.default_rng(1)
    for _ in range(60):
        arm = a.ask()
        assert b.ask() == arm
        r = float(src.random())
        a.tell(arm, r)
        b.tell(arm, r)
    with pytest.raises(TypeError):
        make("thompson_plain", discount=0.9)  # the plain policy has no discount knob


def test_thompson_concurrent_asks_spread_before_data():
    alloc = make("thompson", k=6, seed=2)
    assert len({alloc.ask() for _ in range(6)}) >= 3


@pytest.mark.parametrize("name, rounds, factor", [("ucb", 600, 5), ("thompson", 600, 5),
                                                  ("thompson_plain", 600, 5),
                                                  ("exp3p", 2000, 3)])
def test_best_arm_is_pulled_far_more_on_a_stationary_bandit(name, rounds, factor):
    alloc = make(name, k=4, seed=11, horizon=rounds)
    src = np.random.default_rng(0)
    means = np.array([0.3, 0.35, 0.9, 0.3])
    for _ in range(rounds):
        arm = alloc.ask()
        alloc.tell(arm, float(np.clip(means[arm] + 0.05 * src.standard_normal(), 0, 1)))
    others = np.delete(alloc.pulls, 2)
    assert alloc.pulls[2] > factor * others.max(), alloc.pulls
    assert alloc.best_arm == 2


def test_exp3p_one_round_by_hand_with_the_confidence_bonus():
    """Auer et al. (2002), Fig. Exp3.P, one round: init w_i = exp(alpha gamma/3 sqrt(T/K)),
    p = (1-gamma) w/sum w + gamma/K, then *every* arm j gets
    w_j *= exp(gamma/(3K) (xhat_j + alpha / (p_j sqrt(K T)))) with xhat_j = x/p_j on the
    pulled arm only.  (The other EXP3.P tests use alpha = 0, so the bonus term was
    unchecked.)"""
    k, t, gamma, alpha = 3, 12, 0.3, 0.5
    alloc = make("exp3p", k=k, horizon=t, gamma=gamma, alpha=alpha)
    init = alpha * gamma / 3 * math.sqrt(t / k)  # = 0.1
    assert alloc.log_w == pytest.approx(np.full(k, init))
    arm = alloc.ask()
    assert alloc.events[-1].prob == pytest.approx(1 / 3)
    alloc.tell(arm, 0.63)  # x = 0.63 / 1.05 = 0.6 (default reward_max 1.05)
    eta = gamma / (3 * k)
    bonus = alpha / ((1 / 3) * math.sqrt(k * t))  # 0.25 for every arm
    expected = np.full(k, init + eta * bonus)
    expected[arm] += eta * 0.6 / (1 / 3)
    assert alloc.log_w == pytest.approx(expected)
    w = np.exp(expected)
    assert alloc.probabilities() == pytest.approx((1 - gamma) * w / w.sum() + gamma / k)
