"""Asynchronous greedy trajectories, text proposals and declared parameters (issues 9, 10)."""

from __future__ import annotations

import pytest
from protocol_fakes import program

from basevolve.errors import ConfigError
from basevolve.protocols import (
    PROTOCOLS,
    Child,
    GreedyProtocol,
    Param,
    Proposal,
    ProtocolStateError,
    split_assignments,
)
from basevolve.protocols.params import parse_params


def _initial(p: GreedyProtocol, score: float = 1.0) -> None:
    p.set_initial(Child(0, p.task.initial_program, score, True))


def test_async_greedy_asks_from_the_current_best_and_accepts_against_it(task):
    p = GreedyProtocol(task=task, breadth=1, asynchronous=True)
    _initial(p)
    a, b = p.ask(), p.ask()  # two calls in flight on one trajectory
    assert p.can_ask() and p.n_outstanding == 2
    assert (a.generation, b.generation) == (1, 2) and a.parent_id == b.parent_id == 0
    p.tell(b, Child(2, program(5.0), 5.0, True))  # b returns first and improves
    c = p.ask()
    assert c.parent_id == 2  # asked after the improvement: the new best is its parent
    p.tell(a, Child(1, program(3.0), 3.0, True))  # better than a's parent, not than best
    assert p.best.program_id == 2
    p.tell(c, Child(3, program(5.0), 5.0, True))  # equal is not strictly better
    assert p.best.program_id == 2 and p.n_outstanding == 0


def test_async_flag_is_ignored_with_a_generation_barrier(task):
    p = GreedyProtocol(task=task, breadth=2, asynchronous=True)
    _initial(p)
    p.ask()
    p.ask()
    assert not p.asynchronous and not p.can_ask()


def test_async_sequence_equals_barrier_mode_when_sequential(task):
    """One call at a time, asynchronous N = 1 is the barrier N = 1 protocol exactly."""
    out = []
    for asynchronous in (False, True):
        p = GreedyProtocol(task=task, breadth=1, asynchronous=asynchronous)
        _initial(p)
        trace = []
        for i, v in enumerate([0.5, 2.0, 1.5, 3.0, 3.0]):
            q = p.ask()
            trace.append((q.key, q.parent_id, q.messages))
            p.tell(q, Child(i + 1, program(v), v, True))
        out.append((trace, p.best.program_id, p.state_summary()["accepted_generations"]))
    assert out[0] == out[1]


def test_text_proposals_go_to_tell_text_only(task):
    p = GreedyProtocol(task=task)
    _initial(p)
    q = p.ask()
    with pytest.raises(ProtocolStateError):
        p.tell_text(q, "judge says yes")  # a mutation proposal is not a text proposal
    with pytest.raises(ProtocolStateError, match="purpose"):
        Proposal(None, "", 1, 0, [], purpose="gossip")
    judge = Proposal(None, "", 9, 0, [], purpose="judge")
    assert judge.is_text and not q.is_text


def test_parse_params_types_ranges_and_unknown_keys():
    declared = (Param("n_islands", int, 5, low=1, high=64),
                Param("rate", float, 0.1, low=0.0, high=1.0),
                Param("diff", bool, False), Param("mode", str, "full", choices=("full", "diff")))
    got = parse_params(declared, {"n_islands": "4", "rate": "0.25", "diff": "true",
                                  "mode": "diff"}, "x")
    assert got == {"n_islands": 4, "rate": 0.25, "diff": True, "mode": "diff"}
    assert parse_params(declared, got, "x") == got  # typed values pass through unchanged
    for raw, msg in [({"n_islnads": "4"}, "unknown --protocol-param 'n_islnads'"),
                     ({"n_islands": "four"}, "expected int"),
                     ({"n_islands": "2.5"}, "expected int"),
                     ({"n_islands": "0"}, "out of range"),
                     ({"rate": "nan"}, "expected float"),
                     ({"diff": "maybe"}, "expected bool"),
                     ({"mode": "patch"}, "not one of full, diff")]:
        with pytest.raises(ConfigError, match=msg):
            parse_params(declared, raw, "x")
    with pytest.raises(ConfigError, match="it takes none"):
        parse_params((), {"n_islands": "3"}, "x")
    # greedy's one parameter (issue 31: an OpenEvolve directory's diff_based_evolution)
    with pytest.raises(ConfigError, match="unknown --protocol-param 'n_islands' for protocol "
                                          "'greedy'; known: mode"):
        PROTOCOLS.get("greedy").parse_params({"n_islands": "3"})


def test_split_assignments():
    assert split_assignments(["a=1", " b = x=y "]) == {"a": "1", "b": "x=y"}
    assert split_assignments(None) == {}
    with pytest.raises(ConfigError, match="expected key=value"):
        split_assignments(["novalue"])
    with pytest.raises(ConfigError, match="given twice"):
        split_assignments(["a=1", "a=2"])
