"""The objectives section of mutation prompts (issue 36, item 3): names, directions and the
parent's vector; a single-objective prompt is left byte for byte as it was."""

from __future__ import annotations

from basevolve.objectives import parse_objectives
from basevolve.prompts.objectives import add_objectives, format_vector, objectives_section

OBJS = parse_objectives("accuracy:max,seconds:min")
assert OBJS is not None
MESSAGES = [{"role": "system", "content": "sys"}, {"role": "user", "content": "improve it"}]


def test_section_names_objectives_directions_and_vector():
    text = objectives_section(OBJS, (0.9125, 0.000123456789))
    assert text.splitlines() == [
        "## Objectives",
        "This task has 2 objectives: accuracy (higher is better), seconds (lower is better).",
        "The current program's objective vector: accuracy=0.9125, seconds=0.000123457.",
        "There is no single best program: a change that improves one objective without "
        "making another worse (a new point on the Pareto front) is progress.",
    ]
    assert "none (its evaluation did not report" in format_vector(OBJS, None)


def test_added_to_the_last_user_message_only_with_objectives():
    out = add_objectives(MESSAGES, OBJS, (1.0, 2.0))
    assert out[0] == MESSAGES[0]
    assert out[1]["content"].startswith("improve it\n\n## Objectives\n")
    assert "accuracy=1, seconds=2." in out[1]["content"]
    assert MESSAGES[1]["content"] == "improve it"  # the caller's list is untouched
    assert add_objectives(MESSAGES, None, (1.0, 2.0)) == MESSAGES


def test_a_conversation_that_holds_the_section_is_left_alone():
    once = add_objectives(MESSAGES, OBJS, (1.0, 2.0))
    retry = [*once, {"role": "assistant", "content": "x"}, {"role": "user", "content": "again"}]
    assert add_objectives(retry, OBJS, (1.0, 2.0)) == retry
