"""The objectives section of a mutation prompt in a run with several objectives (issue 36,
item 3: "the prompt names the objectives and their directions and shows the parent's
vector").

Why a section appended to the protocol's own prompt rather than new templates: every
protocol (greedy's verbatim OpenEvolve template, the island protocols' own ones) keeps
its prompt exactly, and a single-objective run never calls this module, so its prompts
stay byte for byte what they were (issue 36, item 1).  The section is added once, by
:meth:`basevolve.protocols.base.Protocol.ask`, to every code call (purpose ``mutation`` or
``fix``) whose messages do not hold it yet.

Everything shown is trusted data: objective names passed :func:`basevolve.objectives.
parse_objectives`'s name rule, and the vector comes from the trusted scorer's metrics.
"""

from __future__ import annotations

from collections.abc import Sequence

from basevolve.objectives import Objectives

HEADER = "## Objectives"


def format_vector(objectives: Objectives, vector: Sequence[float] | None) -> str:
    """``accuracy=0.91, seconds=0.0123`` (6 significant digits), or why there is none."""
    if vector is None:
        return "none (its evaluation did not report every objective as a finite number)"
    return ", ".join(f"{n}={v:.6g}" for n, v in zip(objectives.names, vector, strict=True))


def objectives_section(objectives: Objectives, vector: Sequence[float] | None) -> str:
    """The section: the objectives with their directions, the parent's vector, the goal."""
    return "\n".join([
        HEADER,
        f"This task has {len(objectives.names)} objectives: {objectives.describe()}.",
        f"The current program's objective vector: {format_vector(objectives, vector)}.",
        "There is no single best program: a change that improves one objective without "
        "making another worse (a new point on the Pareto front) is progress.",
    ])


def add_objectives(messages: list[dict[str, str]], objectives: Objectives | None,
                   vector: Sequence[float] | None) -> list[dict[str, str]]:
    """``messages`` with the objectives section appended to the last user message (fresh
    dicts); an unchanged copy when ``objectives`` is None (a single-objective run) or when
    a message already holds the section (a retry that continues the conversation of a
    prompt that had it: ShinkaEvolve's patch retries)."""
    out = [dict(m) for m in messages]
    if objectives is None:
        return out
    opening = f"{HEADER}\nThis task has {len(objectives.names)} objectives: "
    if any(opening in str(m.get("content", "")) for m in out):
        return out
    section = objectives_section(objectives, vector)
    for m in reversed(out):  # as prompts/feedback.py appends; not imported from there,
        if m.get("role") == "user":  # which reads the config (a layer above prompts)
            m["content"] = f"{m['content']}\n\n{section}"
            return out
    return [*out, {"role": "user", "content": section}]
