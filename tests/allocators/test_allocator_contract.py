"""Contract suite run against every registered allocator (docs/design.md, style rule 9)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from basevolve.allocators import ALLOCATORS, Allocator, AllocEvent, EventKind
from basevolve.errors import ConfigError

NAMES = ALLOCATORS.names()


def make(name: str, k: int = 4, seed: int = 0, horizon: int = 40, **kw) -> Allocator:
    if name == "single":
        k = 1
    return ALLOCATORS.get(name)(n_arms=k, rng=np.random.default_rng(seed), horizon=horizon, **kw)


def drive(alloc: Allocator, steps: int, seed: int = 7) -> list[int]:
    """A fixed, mask-varying call sequence with some concurrency and a cancel."""
    src = np.random.default_rng(seed)
    k = alloc.n_arms
    arms = []
    for t in range(steps):
        mask = src.random(k) < 0.7
        mask[src.integers(k)] = True
        a = alloc.ask(mask if t % 3 else None)
        arms.append(a)
        if t % 5 == 4:
            alloc.cancel(a)
        elif t % 4 != 3:  # leave every 4th pull pending until the next round
            alloc.tell(a, float(src.random() * 1.2))
        for i in range(k):
            while alloc.pending[i] > 1:
                alloc.tell(i, 0.5)
    return arms


def test_registry_has_every_policy():
    assert set(NAMES) == {"single", "random", "round_robin", "ucb", "exp3p", "thompson",
                          "thompson_plain", "successive_halving", "successive_rejects",
                          "sw_ucb", "d_ucb", "adaptive_ucb"}
    for name in NAMES:
        assert issubclass(ALLOCATORS.get(name), Allocator)
        assert ALLOCATORS.get(name).name == name


def test_unknown_allocator_is_config_error():
    with pytest.raises(ConfigError, match=r"unknown allocator 'ucbb'; known: adaptive_ucb, d_ucb, exp3p"):
        ALLOCATORS.get("ucbb")


@pytest.mark.parametrize("name", NAMES)
def test_seeded_reproducibility(name):
    a, b = make(name, seed=3), make(name, seed=3)
    assert drive(a, 60) == drive(b, 60)
    assert a.events == b.events
    assert a.summary() == b.summary()


@pytest.mark.parametrize("name", NAMES)
def test_replay_of_events_rebuilds_the_same_state(name):
    a = make(name, seed=5)
    drive(a, 45)
    stored = json.loads(json.dumps([e.as_dict() for e in a.events]))
    b = make(name, seed=5)
    b.replay(stored)
    assert b.events == a.events
    assert b.summary() == a.summary()
    assert b.ask() == a.ask()  # and it continues identically


@pytest.mark.parametrize("name", NAMES)
def test_only_eligible_arms_are_chosen_and_bookkeeping_adds_up(name):
    alloc = make(name, k=5)
    src = np.random.default_rng(1)
    for _ in range(80):
        mask = src.random(alloc.n_arms) < 0.4
        mask[src.integers(alloc.n_arms)] = True
        arm = alloc.ask(mask)
        assert mask[arm]
        alloc.tell(arm, src.random())
    assert alloc.pulls.sum() == 80 and alloc.pending.sum() == 0
    kinds = [e.kind for e in alloc.events]
    assert kinds == [EventKind.ASK, EventKind.TELL] * 80
    assert all(isinstance(e, AllocEvent) for e in alloc.events)
    assert [e.index for e in alloc.events] == list(range(160))


@pytest.mark.parametrize("name", NAMES)
def test_rewards_above_one_and_summary_is_json(name):
    alloc = make(name)
    for r in (1.7, 0.0, 1.02, 5.0, -0.1):
        alloc.tell(alloc.ask(), r)
    s = json.loads(json.dumps(alloc.summary()))
    assert s["allocator"] == name
    assert sum(s["pulls"]) == 5
    assert s["best_arm"] == alloc.best_arm
    assert math.isclose(max(v for v in s["best_reward"] if v is not None), 5.0)
    assert alloc.ask() in range(alloc.n_arms)  # still works after out-of-range rewards


@pytest.mark.parametrize("name", NAMES)
def test_assign_and_cancel(name):
    alloc = make(name)
    for i in range(alloc.n_arms):
        assert alloc.assign(i) == i
    assert alloc.pending.tolist() == [1] * alloc.n_arms
    alloc.cancel(0)
    for i in range(1, alloc.n_arms):
        alloc.tell(i, 0.5)
    assert alloc.pending.sum() == 0
    assert alloc.pulls.tolist() == [0] + [1] * (alloc.n_arms - 1)
    assert alloc.events[-1].kind is (EventKind.TELL if alloc.n_arms > 1 else EventKind.CANCEL)
    assert alloc.events[alloc.n_arms].kind is EventKind.CANCEL


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize(
    "eligible, msg",
    [([True, True], "length"), ([False] * 4, "no True"), ([[True] * 4], "length"),
     ([2, 0, 0, 1], "booleans")],
)
def test_bad_eligible_masks(name, eligible, msg):
    alloc = make(name)
    if name == "single":
        eligible = {"no True": [False], "booleans": [2]}.get(msg, eligible)
    with pytest.raises(ConfigError, match=msg):
        alloc.ask(eligible)
    assert alloc.events == [] and alloc.pending.sum() == 0


@pytest.mark.parametrize("name", NAMES)
def test_bad_tell_cancel_and_construction(name):
    alloc = make(name)
    with pytest.raises(ConfigError, match="without a pending"):
        alloc.tell(0, 0.5)
    with pytest.raises(ConfigError, match="without a pending"):
        alloc.cancel(0)
    arm = alloc.ask()
    with pytest.raises(ConfigError, match="finite"):
        alloc.tell(arm, float("nan"))
    with pytest.raises(ConfigError, match="out of range"):
        alloc.tell(alloc.n_arms, 0.5)
    with pytest.raises(ConfigError, match="integer"):
        alloc.tell(True, 0.5)
    alloc.tell(arm, 0.5)  # the failed tells consumed nothing
    cls = ALLOCATORS.get(name)
    with pytest.raises(ConfigError, match="n_arms"):
        cls(n_arms=0, rng=np.random.default_rng(0), horizon=10)
    with pytest.raises(ConfigError, match="reward_mode"):
        cls(n_arms=1, rng=np.random.default_rng(0), horizon=10, reward_mode="delta")
    with pytest.raises(TypeError):
        cls(n_arms=1, rng=np.random.default_rng(0), horizon=10, no_such_param=1)
