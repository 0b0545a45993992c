"""Greedy T×N protocol (paper Section 3): barrier, identical prompts, strict improvement."""

from __future__ import annotations

import json
import random
from dataclasses import replace

import pytest
from protocol_fakes import INITIAL, FakeTask, program

from basevolve.errors import ConfigError
from basevolve.protocols import PROTOCOLS, Child, GreedyProtocol, Protocol, ProtocolStateError
from basevolve.protocols.greedy import HistoryOptions


def make(task: FakeTask, breadth: int, init_score: float = 0.3) -> Protocol:
    proto = PROTOCOLS.get("greedy")(task=task, breadth=breadth, trajectory=2)
    proto.set_initial(Child(None, task.initial_program, init_score, True, None))
    return proto


def child(pid: int, value: float, valid: bool = True) -> Child:
    return Child(pid, program(value), value if valid else 0.0, valid, None if valid else "bad")


def test_registry_and_bad_breadth(task):
    assert PROTOCOLS.get("greedy") is GreedyProtocol
    with pytest.raises(ConfigError, match="breadth"):
        GreedyProtocol(task=task, breadth=0)


def test_siblings_get_identical_messages_and_barrier(task):
    proto = make(task, breadth=4)
    assert proto.generation == 1 and proto.generation_size == 4
    props = [proto.ask() for _ in range(4)]
    assert [p.slot for p in props] == [0, 1, 2, 3]
    assert {p.generation for p in props} == {1}
    first = json.dumps(props[0].messages)
    assert all(json.dumps(p.messages) == first for p in props)
    assert props[0].messages[0] == {"role": "system", "content": task.system_message}
    assert INITIAL.rstrip() in props[0].messages[1]["content"]
    assert "- Fitness: 0.3000" in props[0].messages[1]["content"]
    assert props[0].parent_id is None and props[0].parent_code == INITIAL
    assert props[0].trajectory == 2
    assert not proto.can_ask()
    with pytest.raises(ProtocolStateError, match="outstanding"):
        proto.ask()
    for i, p in enumerate(props[:3]):
        proto.tell(p, child(10 + i, 0.1))
        assert not proto.can_ask()
    proto.tell(props[3], child(13, 0.1))
    assert proto.can_ask() and proto.generation == 2


def test_strict_improvement_only(task):
    proto = make(task, breadth=2, init_score=0.5)
    a, b = proto.ask(), proto.ask()
    proto.tell(a, child(1, 0.5))  # equal: not strictly better
    proto.tell(b, Child(2, None, 0.0, False, "no code block"))
    assert proto.best.program_id is None and proto.best.score == 0.5
    a, b = proto.ask(), proto.ask()
    assert a.parent_id is None
    proto.tell(a, child(3, 0.6))
    proto.tell(b, child(4, 0.7, valid=False))  # invalid never accepted
    assert proto.best.program_id == 3 and proto.best.score == 0.6
    c = proto.ask()
    assert c.parent_id == 3 and c.parent_code == program(0.6)
    assert "- Fitness: 0.6000" in c.messages[1]["content"]
    assert "Fitness improved: 0.5000 → 0.6000" in c.messages[1]["content"]


def test_tie_broken_by_lowest_slot_regardless_of_tell_order(task):
    proto = make(task, breadth=3)
    p = [proto.ask() for _ in range(3)]
    proto.tell(p[2], child(30, 0.9))
    proto.tell(p[0], Child(10, program(0.9) + "# a\n", 0.9, True, None))
    proto.tell(p[1], child(20, 0.4))
    assert proto.best.program_id == 10


def test_best_of_n_is_one_generation(task):
    """T=1: one generation of N children; the best child is the answer."""
    proto = make(task, breadth=8, init_score=0.0)
    props = [proto.ask() for _ in range(8)]
    scores = [0.2, 0.9, 0.1, 0.95, 0.3, 0.0, 0.5, 0.94]
    for pr, s in zip(props, scores, strict=True):
        proto.tell(pr, child(pr.slot, s))
    assert proto.best.score == 0.95 and proto.best.program_id == 3
    assert proto.generation == 2 and proto.state_summary()["generations_completed"] == 1


def test_sequential_n1_every_tell_closes_a_generation(task):
    """N=1 (T=C): each child is compared with the current best immediately."""
    proto = make(task, breadth=1, init_score=0.1)
    for g, s in enumerate([0.2, 0.15, 0.4], start=1):
        assert proto.can_ask()
        p = proto.ask()
        assert p.generation == g and p.slot == 0 and not proto.can_ask()
        proto.tell(p, child(g, s))
    assert proto.best.score == 0.4 and proto.generation == 4
    assert proto.state_summary()["accepted_generations"] == [1, 3]


def test_unusable_child_is_scored_zero(task):
    proto = make(task, breadth=1)
    p = proto.ask()
    proto.tell(p, Child(None, None, 0.7, True, "no code block"))
    told = proto.archive[-1].child
    assert told.score == 0.0 and not told.valid and told.error == "no code block"
    assert proto.best.score == 0.3


def test_usable_child_replaces_invalid_initial(task):
    proto = PROTOCOLS.get("greedy")(task=task, breadth=1)
    proto.set_initial(Child(None, task.initial_program, 0.0, False, "timeout: 5 s"))
    p = proto.ask()
    assert "### error" in p.messages[1]["content"] and "timeout: 5 s" in p.messages[1]["content"]
    assert "not valid" in p.messages[1]["content"]
    proto.tell(p, child(1, 0.0))
    assert proto.best.program_id == 1


def test_tell_validation_and_cancel(task):
    proto = make(task, breadth=2)
    a = proto.ask()
    other = GreedyProtocol(task=task, breadth=2, trajectory=5)
    with pytest.raises(ProtocolStateError, match="not outstanding"):
        proto.tell(other.ask(), child(1, 0.1))  # another trajectory's proposal
    with pytest.raises(ProtocolStateError, match="not outstanding"):
        proto.tell(replace(a, generation=5), child(1, 0.1))
    proto.tell(a, child(1, 0.1))
    with pytest.raises(ProtocolStateError):
        proto.tell(a, child(1, 0.1))  # told twice
    b = proto.ask()
    proto.cancel(b)  # lost in flight: the slot is asked again with the same prompt
    assert proto.can_ask()
    b2 = proto.ask()
    assert b2 == b
    with pytest.raises(ProtocolStateError, match="set_initial"):
        proto.set_initial(Child(None, INITIAL, 0.0, True))
    fresh = make(task, breadth=1)
    fresh.cancel(fresh.ask())
    with pytest.raises(ProtocolStateError, match="set_initial"):
        fresh.set_initial(Child(None, INITIAL, 0.0, True))  # the prompt is already frozen


def test_history_top3_plus_2_diverse_deterministic(task):
    proto = make(task, breadth=4, init_score=0.05)
    values = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8]
    for g in range(2):
        props = [proto.ask() for _ in range(4)]
        for pr in reversed(props):
            v = values[g * 4 + pr.slot]
            proto.tell(pr, child(100 + g * 4 + pr.slot, v))
    msg = proto.ask().messages[1]["content"]
    assert proto.best.score == 0.8
    hist = msg.split("# Program Evolution History")[1].split("# Current Program")[0]
    # parent (0.8) excluded; top 3 = 0.7, 0.6, 0.5; rest = 0.4..0.05 (m=5) -> ranks 1, 3
    assert "## Top Performing Programs" in hist and "## Diverse Programs" in hist
    tops = [f"Program {i} (Fitness: {v:.4f}" for i, v in [(1, 0.7), (2, 0.6), (3, 0.5)]]
    assert all(t in hist for t in tops)
    assert "Diverse Program 1 (Fitness: 0.3000" in hist
    assert "Diverse Program 2 (Fitness: 0.1000" in hist
    assert hist.count("### ") == 5
    assert "return 0.8" not in hist


def test_history_skips_copies_that_differ_only_in_comments(task):
    proto = make(task, breadth=3, init_score=0.1)
    props = [proto.ask() for _ in range(3)]
    proto.tell(props[0], child(1, 0.5))
    proto.tell(props[1], Child(2, "# reworded\n" + program(0.5), 0.5, True, None))
    proto.tell(props[2], Child(3, INITIAL + "\n\n# same as the initial\n", 0.1, True, None))
    msg = proto.ask().messages[1]["content"]
    hist = msg.split("# Program Evolution History")[1].split("# Current Program")[0]
    assert proto.best.program_id == 1
    assert "Program 1 (Fitness: 0.1000, initial program)" in hist  # parent's copy skipped
    assert hist.count("### ") == 1


def test_history_without_code(task):
    proto = GreedyProtocol(task=task, breadth=1, history=HistoryOptions(include_code=False))
    p = proto.ask()
    proto.tell(p, child(1, 0.2))
    msg = proto.ask().messages[1]["content"]
    hist = msg.split("# Program Evolution History")[1].split("# Current Program")[0]
    assert "Program 1 (Fitness: 0.0000 (invalid), initial program)" in hist
    assert "```" not in hist


def _drive(task: FakeTask, breadth: int, seed: int):
    """Random ask/tell interleaving; returns the event log and the final summary."""
    rng = random.Random(seed)
    proto = make(task, breadth)
    log, pending, pid = [], [], 0
    for _ in range(40):
        if pending and rng.random() < 0.1:  # a call lost in flight
            p = pending.pop(rng.randrange(len(pending)))
            proto.cancel(p)
            log.append(("cancel", p.key, None))
        elif proto.can_ask() and (not pending or rng.random() < 0.6):
            p = proto.ask()
            pending.append(p)
            log.append(("ask", p.key, json.dumps(p.messages)))
        else:
            p = pending.pop(rng.randrange(len(pending)))
            pid += 1
            c = child(pid, round(rng.random(), 3), valid=rng.random() > 0.2)
            proto.tell(p, c)
            log.append(("tell", p.key, c))
    return proto, log


@pytest.mark.parametrize("breadth", [1, 3])
def test_replay_gives_the_same_state(task, breadth):
    proto, log = _drive(task, breadth, seed=breadth)
    replay = make(task, breadth)
    asked = {}
    for kind, key, payload in log:
        if kind == "ask":
            p = replay.ask()
            assert p.key == key and json.dumps(p.messages) == payload
            asked[key] = p
        elif kind == "cancel":
            replay.cancel(asked.pop(key))
        else:
            replay.tell(asked.pop(key), payload)
    assert any(kind == "cancel" for kind, _, _ in log)
    assert replay.state_summary() == proto.state_summary()
    assert json.dumps(replay.state_summary())  # JSON-able
    assert replay.best == proto.best
    if replay.can_ask():
        assert replay.ask().messages == proto.ask().messages


def test_t_by_n_loop_with_scripted_replies(task):
    """A C = T·N run driven like the engine: parse each reply, score it, tell the child."""
    values = iter([0.2, 0.5, 0.4, 0.45, 0.6, 0.1, 0.55, 0.3, 0.7, 0.2, 0.65, 0.1])
    replies = []
    proto = make(task, breadth=3, init_score=0.1)
    for _t in range(4):
        batch = [proto.ask() for _ in range(proto.generation_size)]
        assert not proto.can_ask()
        for p in reversed(batch):
            v = next(values)
            reply = f"Better:\n```python\n{program(v)}```\n" if v != 0.1 else "Sorry."
            replies.append((p.generation, v))
            parsed = proto.parse_reply(p, reply)
            if parsed.code is None:
                c = Child(None, None, 0.0, False, parsed.error)
            else:
                namespace: dict = {}
                exec(parsed.code, namespace)  # trusted test code only
                c = Child(len(replies), parsed.code, float(namespace["make"]()), True, None)
            proto.tell(p, c)
    assert proto.generation == 5 and proto.n_told == 12
    assert proto.best.score == max(v for _, v in replies) == 0.7
    assert proto.state_summary()["accepted_generations"] == [1, 2, 3]
