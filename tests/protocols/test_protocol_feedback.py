"""``--feedback artifacts`` in every protocol (issue 21, part 3): the next prompt built
from a parent shows that parent's evaluator feedback (error, artifacts, output), capped;
with the default ``none`` the artifacts change nothing (the snapshot tests hold the
default wording byte for byte)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from protocol_fakes import ISLAND_INITIAL, IslandTask

from basevolve.errors import ConfigError
from basevolve.prompts.feedback import HEADING, TOTAL_CHARS, render_feedback
from basevolve.protocols import PROTOCOLS, Child, Proposal, Protocol

#: Parameters that make the first parent the initial program and keep one island.
PARAMS: dict[str, dict[str, object]] = {
    "greedy": {},
    "openevolve": {"num_islands": 1},
    "codeevolve": {"num_islands": 1, "init_pop": 0, "meta_prompting": False},
    "shinkaevolve": {"num_islands": 1, "novelty": "off"},
    "adaevolve": {"num_islands": 1, "max_islands": 1, "paradigm": False},
}
INIT_ARTS = {"failing case": "f(1) returned 1, expected 2", "note": "initial-note"}
CHILD_ARTS = {"failing case": "f(3) returned 0, expected 6", "zz": "child-note"}


def code(value: float) -> str:
    return ISLAND_INITIAL.replace("return 0.5", f"return {value!r}")


def initial(artifacts: dict[str, str] | None = INIT_ARTS) -> Child:
    return Child(1, ISLAND_INITIAL, 0.3, True, "warning: initial-error",
                 output="stderr:\ninitial-stderr", artifacts=artifacts)


def better(artifacts: dict[str, str] | None = CHILD_ARTS) -> Child:
    return Child(7, code(0.9), 0.9, True, None, output="stdout:\nchild-stdout",
                 artifacts=artifacts)


def build(name: str, feedback: str, init: Child) -> Protocol:
    proto = PROTOCOLS.get(name)(task=IslandTask(), rng=np.random.default_rng(3),
                                feedback=feedback, **PARAMS[name])
    proto.set_initial(init)
    return proto


def program_ask(proto: Protocol, parent: int | None = None, tries: int = 300) -> Proposal:
    """The next program proposal (whose parent is ``parent``, if given)."""
    for _ in range(tries):
        p = proto.ask()
        if not p.is_text and (parent is None or p.parent_id == parent):
            return p
    raise AssertionError(f"no proposal from parent {parent} in {tries} asks")


def text(p: Proposal) -> str:
    return "\n".join(m["content"] for m in p.messages)


def scenario(name: str, feedback: str, init: Child, child: Child) -> tuple[Proposal, Proposal]:
    """(first proposal: parent = initial; a later one whose parent is ``child``)."""
    proto = build(name, feedback, init)
    first = program_ask(proto)
    assert first.parent_id == init.program_id
    proto.tell(first, child)
    return first, program_ask(proto, parent=child.program_id)


@pytest.mark.parametrize("name", sorted(PARAMS))
def test_the_next_prompt_shows_the_parents_feedback(name):
    init, child = initial(), better()
    first, later = scenario(name, "artifacts", init, child)
    for p, parent, own, other in ((first, init, "initial-note", "child-note"),
                                  (later, child, "child-note", "initial-note")):
        section = render_feedback(parent.error, parent.output, parent.artifacts)
        assert section.startswith(HEADING)
        assert section in text(p), f"{name}: the parent's feedback is missing"
        assert own in text(p) and other not in text(p)
        assert p.messages[-1]["role"] == "user" and section in p.messages[-1]["content"]
    assert "f(1) returned 1, expected 2" in text(first) and "initial-stderr" in text(first)
    assert "f(3) returned 0, expected 6" in text(later) and "child-stdout" in text(later)


@pytest.mark.parametrize("name", sorted(PARAMS))
def test_the_default_ignores_artifacts(name):
    """With ``none``, the same run with and without artifacts sends identical prompts."""
    with_arts = scenario(name, "none", initial(), better())
    without = scenario(name, "none", initial(None), better(None))
    assert [p.messages for p in with_arts] == [p.messages for p in without]
    assert not any(HEADING in text(p) or "note" in text(p) for p in with_arts)


@pytest.mark.parametrize("name", sorted(PARAMS))
def test_the_section_is_capped_and_hostile_text_is_cleaned(name):
    hostile = {"big": "z" * 1_000_000, "odd": "a\ud800b\x1b[2J\x00", **{
        f"case {i}": "c" * 5_000 for i in range(6)}}
    init = replace(initial(hostile), output="stdout:\n" + "p" * 1_000_000)
    first, _ = scenario(name, "artifacts", init, better())
    section = render_feedback(init.error, init.output, init.artifacts)
    assert len(section) <= TOTAL_CHARS and section in text(first)
    assert "z" * 2_001 not in text(first) and "p" * 2_001 not in text(first)
    for m in first.messages:
        m["content"].encode("utf-8")  # no lone surrogate reaches the request
    baseline, _ = scenario(name, "none", init, better())  # the paper's prompt, same parent
    assert len(text(first)) - len(text(baseline)) <= TOTAL_CHARS + 2


@pytest.mark.parametrize("name", sorted(PARAMS))
def test_an_unknown_mode_is_refused(name):
    with pytest.raises(ConfigError, match="--feedback must be one of none, artifacts"):
        PROTOCOLS.get(name)(task=IslandTask(), feedback="everything", **PARAMS[name])


def test_openevolve_migrants_carry_their_feedback():
    proto = PROTOCOLS.get("openevolve")(task=IslandTask(), rng=np.random.default_rng(0),
                                        feedback="artifacts", num_islands=2)
    proto.set_initial(initial())
    src = proto.place(better(), 0)
    proto.migrate()
    copies = [m for m in proto.pop.members.values()
              if m.program_id == src.program_id and m.uid != src.uid]
    assert copies and all(m.meta["feedback"] == src.meta["feedback"] for m in copies)
    assert "child-note" in src.meta["feedback"]


def test_shinka_patch_retry_keeps_the_section():
    proto = build("shinkaevolve", "artifacts", initial())
    first = program_ask(proto)
    reply = "<NAME>x</NAME><DIFF>\n<<<<<<< SEARCH\nnot there\n=======\ny\n>>>>>>> REPLACE\n</DIFF>"
    proto.observe_reply(first, reply)
    proto.tell(first, Child(9, None, 0.0, False, proto.parse_reply(first, reply).error))
    retry = proto.ask()
    assert retry.purpose == "fix" and retry.messages[:2] == first.messages
    assert "initial-note" in text(retry)


def test_greedy_siblings_share_one_prompt_with_feedback():
    proto = PROTOCOLS.get("greedy")(task=IslandTask(), breadth=3, feedback="artifacts")
    proto.set_initial(initial())
    props = [proto.ask() for _ in range(3)]
    assert all(p.messages == props[0].messages for p in props)
    assert "initial-note" in text(props[0])
