"""Parents drawn from the Pareto front in runs with several objectives (issue 36, item 3):
greedy's parent is a front member, the island protocols' ``parent_selection=front``.

Fronts here are small enough to check by hand; objectives are ``a`` (max) and ``b`` (min).
"""

from __future__ import annotations

import pytest
from protocol_fakes import IslandTask, program

from basevolve.errors import ConfigError
from basevolve.objectives import parse_objectives
from basevolve.protocols import PROTOCOLS, Child
from basevolve.protocols.front_parents import ParentFront, front_choice, pick_index

OBJS = parse_objectives("a:max,b:min")
assert OBJS is not None


def kid(pid: int, a: float, b: float, score: float) -> Child:
    return Child(pid, program(float(pid)), score, True, None, metrics={"a": a, "b": b})


def test_parent_front_keeps_the_non_dominated_and_turns_by_use_then_crowding():
    f: ParentFront[str] = ParentFront(OBJS)
    assert f.choose() is None
    assert f.offer("x", (1.0, 1.0), "x")
    assert not f.offer("y", (0.5, 2.0), "y")  # worse in both
    assert not f.offer("x2", (1.0, 1.0), "x2")  # equal adds nothing
    assert not f.offer("z", None, "z")
    assert f.offer("p", (3.0, 3.0), "p") and f.offer("m", (2.0, 2.0), "m")
    assert [k for k, _, _ in f.members()] == ["x", "p", "m"]
    # unused: m's crowding is finite, x and p are extremes (inf): x joined first
    assert f.choose() == ("x", "x")
    assert f.choose() == ("p", "p")
    assert f.choose() == ("m", "m")
    assert f.choose() == ("x", "x")  # a new turn
    f.release("x")
    assert f.choose() == ("x", "x")  # a cancelled choice is made again
    assert f.offer("d", (4.0, 0.5), "d")  # dominates every member
    assert [k for k, _, _ in f.members()] == ["d"]


def test_pick_index_uses_crowding_within_a_turn():
    vecs = [(0.0, 0.0), (1.0, 1.0), (1.2, 1.2), (3.0, 3.0)]
    # interior distances: (1.2-0)/3 * 2 = 0.8 for index 1, (3-1)/3 * 2 = 1.333 for index 2
    assert pick_index(vecs, [1, 0, 0, 1], OBJS) == 2
    assert pick_index(vecs, [1, 0, 1, 1], OBJS) == 1
    assert pick_index(vecs, [0, 0, 0, 0], OBJS) == 0  # both extremes inf: join order
    with pytest.raises(ValueError):
        pick_index([], [], OBJS)


def test_front_choice_skips_members_without_vector_and_copies():
    items = ["i0", "i1", "i2", "i3", "i4"]
    vec = {"i0": None, "i1": (1.0, 1.0), "i2": (1.0, 1.0), "i3": (0.0, 5.0), "i4": (2.0, 2.0)}
    uses = {"i1": 1}
    got = front_choice(items, vec.get, lambda it: uses.get(it, 0), OBJS)
    assert got == "i4"  # i1 used once; i2 copies i1; i3 dominated
    assert front_choice(["i0"], vec.get, lambda it: 0, OBJS) is None


def _greedy(breadth: int = 1, **kw):
    task = IslandTask()
    proto = PROTOCOLS.get("greedy")(task=task, breadth=breadth, objectives=OBJS, **kw)
    proto.set_initial(Child(0, task.initial_program, 1.0, True, None,
                            metrics={"a": 1.0, "b": 1.0}))
    return proto


def test_greedy_parent_is_a_front_member_not_the_best_score():
    proto = _greedy()
    children = [kid(1, 3, 3, 3.0), kid(2, 2, 2, 0.1), kid(3, 0.5, 5, 10.0), kid(4, 0, 9, 0.0)]
    parents, texts = [], []
    for c in children:
        p = proto.ask()
        parents.append(p.parent_id)
        texts.append(p.messages[-1]["content"])
        proto.tell(p, c)
    parents.append(proto.ask().parent_id)
    # by hand: 0 (alone), 1 (unused), 2 (unused; the best score is 1), 0 (all used once:
    # the extremes 0 and 1 are loneliest, 0 joined first; 3 has the best score but is
    # dominated by 0), 1
    assert parents == [0, 1, 2, 0, 1]
    assert proto.best.program_id == 3  # the scalar best is still kept for the engine
    assert "a (higher is better), b (lower is better)" in texts[1]
    assert "objective vector: a=3, b=3." in texts[1]
    # the best's trend is not told about another parent: c2 is not "unchanged for 1 generation"
    assert "Improve the fitness score" in texts[2] and "unchanged" not in texts[2]
    assert proto.state_summary()["front_size"] == 3


def test_greedy_asynchronous_cancel_reasks_the_same_parent():
    proto = _greedy(asynchronous=True)
    first = proto.ask()
    proto.tell(first, kid(1, 3, 3, 3.0))
    a = proto.ask()
    proto.cancel(a)
    b = proto.ask()
    assert a.parent_id == b.parent_id == 1 and a.messages == b.messages
    c = proto.ask()  # b in flight: 1 used, 0 used once too -> the extremes' join order
    assert c.parent_id == 0


def test_greedy_without_objectives_keeps_the_best_as_parent(task):
    proto = PROTOCOLS.get("greedy")(task=task, breadth=1)
    proto.set_initial(Child(0, task.initial_program, 1.0, True, None,
                            metrics={"a": 1.0, "b": 1.0}))
    p = proto.ask()
    proto.tell(p, kid(1, 0.1, 9, 0.5))  # lower score: not the parent
    q = proto.ask()
    assert q.parent_id == 0 and "## Objectives" not in q.messages[-1]["content"]


@pytest.mark.parametrize("name", ["openevolve", "shinkaevolve", "adaevolve", "codeevolve"])
def test_island_parent_selection_front_is_declared_and_needs_objectives(name):
    cls = PROTOCOLS.get(name)
    assert cls.parse_params({"parent_selection": "front"}) == {"parent_selection": "front"}
    with pytest.raises(ConfigError, match="needs two or more objectives"):
        cls(task=IslandTask(), parent_selection="front")
    with pytest.raises(ConfigError, match="parent_selection"):
        cls.parse_params({"parent_selection": "pareto"})


def _island(name: str, **params):
    task = IslandTask()
    proto = PROTOCOLS.get(name)(task=task, objectives=OBJS, parent_selection="front",
                                num_islands=1, **params)
    proto.set_initial(Child(0, task.initial_program, 1.0, True, None,
                            metrics={"a": 1.0, "b": 1.0}))
    return proto


@pytest.mark.parametrize("name", ["openevolve", "adaevolve", "shinkaevolve"])
def test_island_front_parents_through_ask_and_tell(name):
    proto = _island(name)
    kids = iter([kid(1, 3, 3, 3.0), kid(2, 2, 2, 0.1), kid(3, 0.5, 5, 10.0)])
    parents = []
    while len(parents) < 4:
        p = proto.ask()
        if p.is_text:  # e.g. AdaEvolve's paradigm call: no parent choice
            proto.tell_text(p, "")
            continue
        assert p.purpose == "mutation" and "## Objectives" in p.messages[-1]["content"]
        parents.append(p.parent_id)
        c = next(kids, None)
        proto.tell(p, c or Child(None, None, 0.0, False, "no program"))
    # by hand: 0 alone, 1 unused, 2 unused (not the best score), then all used once and
    # 3 dominated by 0: the extremes 0 and 1 are loneliest, 0 is first on the island
    assert parents == [0, 1, 2, 0]


def test_greedy_generation_of_siblings_shares_one_front_parent():
    proto = _greedy(breadth=2)
    a, b = proto.ask(), proto.ask()
    assert a.parent_id == b.parent_id == 0 and a.messages == b.messages
    proto.tell(a, kid(1, 3, 3, 3.0))
    proto.tell(b, kid(2, 0.5, 0.5, 0.1))  # a trade-off too: front {0, 1, 2}
    c, d = proto.ask(), proto.ask()
    # 0 was used once; 1 and 2 are unused extremes (0 is in between): 1 joined first
    assert c.parent_id == d.parent_id == 1 and c.messages == d.messages
    assert "objective vector: a=3, b=3." in c.messages[-1]["content"]


def _count_sections(messages) -> int:
    return sum(m["content"].count("## Objectives\nThis task has 2 objectives") for m in messages)


def test_fix_calls_name_the_objectives_once():
    task = IslandTask()
    initial = Child(1, task.initial_program, 0.5, True, None, metrics={"a": 1.0, "b": 1.0})
    shinka = PROTOCOLS.get("shinkaevolve")(task=task, objectives=OBJS, novelty="off",
                                           max_patch_attempts=2)
    shinka.set_initial(initial)
    p = shinka.ask()
    shinka.observe_reply(p, "I cannot do it")
    shinka.tell(p, Child(2, None, 0.0, False, "no program"))
    fix = shinka.ask()  # the same conversation continued: the section is already in it
    assert fix.purpose == "fix" and _count_sections(p.messages) == 1
    assert _count_sections(fix.messages) == 1
    ada = PROTOCOLS.get("adaevolve")(task=task, objectives=OBJS, paradigm=False)
    ada.set_initial(initial)
    q = ada.ask()
    ada.tell(q, Child(2, None, 0.0, False, "no program"))
    retry = ada.ask()  # AdaEvolve writes a fresh prompt for its retry
    assert retry.purpose == "fix" and _count_sections(retry.messages) == 1
    assert "objective vector: a=1, b=1." in retry.messages[-1]["content"]
