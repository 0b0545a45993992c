"""engine/front_credit.py against hand-computed hypervolumes (issue 36, item 4): the
reward's unit, the initial program's share, ``best`` and ``improvement``, both scopes."""

from __future__ import annotations

import math

import pytest

from basevolve.engine.front_credit import FrontCredit, reward_scale
from basevolve.objectives import Objectives

OBJS = Objectives(("acc", "sec"), ("max", "min"))


def test_reward_scale_is_the_initial_box_or_the_reference_where_they_tie():
    assert reward_scale((0.5, 2.0), (0.0, 6.0)) == pytest.approx(0.5 * 4.0)
    # a tie on acc: that side is max(|0.5|, 1) = 1; on sec |2 - 6| = 4
    assert reward_scale((0.5, 2.0), (0.5, 6.0)) == pytest.approx(4.0)
    assert reward_scale((0.5, 2.0), (0.5, -3.0 + 5.0)) == pytest.approx(1.0 * 2.0)


def test_gains_levels_and_scopes_by_hand():
    fc = FrontCredit(OBJS, (0.0, 6.0), arms=2)
    fc.set_initial("init", True, {"acc": 0.5, "sec": 2.0})
    assert fc.scale == pytest.approx(2.0) and fc.base == pytest.approx(1.0)  # 0.5 x 4 / 2
    # arm 0: (1.0, 4.0) adds the box [0.5,1] x [4,6] = 0.5 x 2 = 1.0 -> 0.5 units
    assert fc.tell(0, 1, True, {"acc": 1.0, "sec": 4.0}) == pytest.approx(0.5)
    # the same vector on arm 1 grows arm 1's front by as much (its own front)
    assert fc.tell(1, 2, True, {"acc": 1.0, "sec": 4.0}) == pytest.approx(0.5)
    # dominated, invalid, or an objective missing / NaN: no gain
    assert fc.tell(0, 3, True, {"acc": 0.4, "sec": 3.0}) == 0.0
    assert fc.tell(0, 4, False, {"acc": 9.0, "sec": 0.1}) == 0.0
    assert fc.tell(0, 5, True, {"acc": 9.0}) == 0.0
    assert fc.tell(0, 6, True, {"acc": math.nan, "sec": 0.1}) == 0.0
    assert fc.level(0) == pytest.approx(0.5) and fc.level(1) == pytest.approx(0.5)
    assert len(fc.front(None)) == 2 and len(fc.front(0)) == 2


def test_run_scope_reads_the_run_front():
    fc = FrontCredit(OBJS, (0.0, 6.0), arms=2, scope="run")
    fc.set_initial("init", True, {"acc": 0.5, "sec": 2.0})
    assert fc.tell(0, 1, True, {"acc": 1.0, "sec": 4.0}) == pytest.approx(0.5)
    # arm 1 repeats arm 0's vector: its own front grows, the run's does not
    assert fc.tell(1, 2, True, {"acc": 1.0, "sec": 4.0}) == 0.0
    assert fc.level(1) == pytest.approx(0.5)  # the run's front


def test_reference_point_derived_when_none_was_stored():
    fc = FrontCredit(OBJS, (), arms=1)
    fc.set_initial("init", True, {"acc": 0.5, "sec": 2.0})
    assert fc.reference == (-0.5, 4.0) and fc.base == pytest.approx(1.0)
