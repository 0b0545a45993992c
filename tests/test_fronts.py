"""Dominance, hypervolume and crowding checked against fronts computed by hand (issue 36)."""

from __future__ import annotations

import math

import pytest

from basevolve.errors import ConfigError
from basevolve.fronts import Front, crowding_distances, hypervolume, nondominated_mask, pareto_ranks
from basevolve.objectives import derive_reference_point, parse_objectives, parse_reference_point

MAXMIN = parse_objectives("acc:max,sec:min")
MINMIN = parse_objectives({"a": "min", "b": "min"})


def test_parse_forms_and_order() -> None:
    assert MAXMIN.names == ("acc", "sec") and MAXMIN.directions == ("max", "min")
    assert MAXMIN.as_dict() == {"acc": "max", "sec": "min"}
    assert parse_objectives(None) is None and parse_objectives("") is None
    assert MAXMIN.describe() == "acc (higher is better), sec (lower is better)"


@pytest.mark.parametrize("spec, words", [
    ("acc:up,sec:min", "direction 'up'"),
    ("acc,sec:min", "no direction"),
    ("acc:max", "declare two or more"),
    ("acc:max,acc:min", "named twice"),
    ("9x:max,sec:min", "not a metric name"),
    (42, "expected"),
])
def test_bad_declarations_are_one_line(spec, words) -> None:
    with pytest.raises(ConfigError) as e:
        parse_objectives(spec)
    assert words in str(e.value) and "\n" not in str(e.value)
    assert str(e.value).startswith("--objectives")


@pytest.mark.parametrize("spec", ["1,nan", "1", "1,x", [1.0, float("inf")]])
def test_bad_reference_points(spec) -> None:
    with pytest.raises(ConfigError):
        parse_reference_point(spec, MAXMIN)
    assert parse_reference_point("0, 10", MAXMIN) == (0.0, 10.0)


def test_vector_reads_metrics_in_declaration_order() -> None:
    assert MAXMIN.vector({"sec": 2, "acc": 0.5, "x": 1}) == (0.5, 2.0)
    assert MAXMIN.vector({"acc": 0.5}) is None
    assert MAXMIN.vector({"acc": float("nan"), "sec": 1}) is None
    assert MAXMIN.vector({"acc": True, "sec": 1}) is None
    assert MAXMIN.missing({"acc": 1}) == ["sec"]
    assert MAXMIN.minimised((0.5, 2.0)) == (-0.5, 2.0)


def test_nondominated_and_ranks_by_hand() -> None:
    # minimise both: (1,3) (2,2) (3,1) are the front, (2.5,2.5) is dominated by (2,2),
    # (4,4) by everything.
    pts = [(1, 3), (2, 2), (3, 1), (2.5, 2.5), (4, 4)]
    assert nondominated_mask(pts, MINMIN) == [True, True, True, False, False]
    assert pareto_ranks(pts, MINMIN) == [1, 1, 1, 2, 3]


def test_hypervolume_by_hand() -> None:
    # staircase of (1,3),(2,2),(3,1) up to (4,4): 3 + 2 + 1 = 6
    assert hypervolume([(1, 3), (2, 2), (3, 1)], (4, 4), MINMIN) == pytest.approx(6.0)
    # max/min: acc 0.5 sec 3 against reference acc 0 sec 4 -> 0.5 * 1
    assert hypervolume([(0.5, 3.0)], (0.0, 4.0), MAXMIN) == pytest.approx(0.5)
    # a point outside the reference box adds nothing
    assert hypervolume([(5, 5)], (4, 4), MINMIN) == 0.0


def test_front_keeps_members_and_returns_gains() -> None:
    f = Front(MINMIN, (4, 4))
    assert f.add("a", (2, 2)) == pytest.approx(4.0)
    assert f.add("b", (3, 3)) == 0.0  # dominated
    assert f.add("c", (2, 2)) == 0.0  # equal adds nothing
    assert f.add("d", (1, 3)) == pytest.approx(1.0)  # adds the strip x in [1,2], y in [3,4]
    assert f.add("e", (1, 1)) == pytest.approx(9.0 - 5.0)  # dominates both
    assert [k for k, _ in f.members()] == ["e"]
    assert f.hypervolume == pytest.approx(9.0)
    assert f.add("bad", None) == 0.0


def test_crowding_by_hand() -> None:
    d = crowding_distances([(0, 4), (1, 2), (2, 1), (4, 0)])
    assert math.isinf(d[0]) and math.isinf(d[3])
    # (1,2): neighbours (0,4),(2,1): 2/4 + 3/4 ; (2,1): neighbours (1,2),(4,0): 3/4 + 2/4
    assert d[1] == pytest.approx(1.25) and d[2] == pytest.approx(1.25)


def test_derived_reference_point_is_worse_in_every_objective() -> None:
    ref = derive_reference_point((0.3, 0.02), MAXMIN)
    assert ref == (pytest.approx(-0.7), pytest.approx(1.02))
    assert hypervolume([(0.3, 0.02)], ref, MAXMIN) > 0
