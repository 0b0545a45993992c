"""Rendered example prompts of the island protocols, one per template and mode.

Why in the package: the same deterministic scenarios feed the prompt snapshot tests
(a change of wording must show up as a reviewed snapshot diff) and the example files
under ``docs/protocols/`` (what each protocol sends the LLM, for a real task).

Each scenario builds a protocol with a fixed seed, fills its population with a few
variants of the task's initial program (scores chosen by hand), and asks until the
wanted kind of call comes up.  No LLM, sandbox or store is involved.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from basevolve.prompts.diff import START_MARKER
from basevolve.protocols.base import PROTOCOLS, Child, Proposal, Protocol
from basevolve.tasks.base import Task

SCORES = (0.41, 0.63, 0.55, 0.72, 0.38)


def variant(code: str, k: int) -> str:
    """The initial program with one extra comment line inside its EVOLVE block."""
    line = f"# variant {k}: an alternative idea would go here"
    if START_MARKER in code:
        head, tail = code.split(START_MARKER, 1)
        first, rest = tail.split("\n", 1)
        return f"{head}{START_MARKER}{first}\n{line}\n{rest}"
    return f"{line}\n{code}"


def render(messages: list[dict[str, str]]) -> str:
    """Messages as plain text, one ``=== role ===`` header per message."""
    return "\n\n".join(f"=== {m['role']} ===\n{m['content']}" for m in messages) + "\n"


def _build(task: Task, name: str, **params: Any) -> Protocol:
    proto = PROTOCOLS.get(name)(task=task, rng=np.random.default_rng(7), **params)
    proto.set_initial(Child(1, task.initial_program, 0.35, True, None))
    return proto


def _fill(proto: Protocol, task: Task, add: Callable[[Child, int], Any], islands: int) -> None:
    for k, s in enumerate(SCORES):
        error = "RuntimeWarning: overlap of 1e-4 between circles 3 and 7" if k == 4 else None
        add(Child(10 + k, variant(task.initial_program, k), s, k != 4, error), k % islands)


def _until(proto: Protocol, want: Callable[[Proposal], bool], tries: int = 200) -> Proposal:
    for _ in range(tries):
        p = proto.ask()
        if want(p):
            return p
    raise RuntimeError("scenario did not produce the wanted call")


def openevolve(task: Task, mode: str) -> list[dict[str, str]]:
    proto = _build(task, "openevolve", num_islands=1, mode=mode)
    _fill(proto, task, lambda c, i: proto.place(c, i), 1)
    return proto.ask().messages


def codeevolve(task: Task, kind: str) -> list[dict[str, str]]:
    """``kind``: exploit, exploit_insp, explore, explore_insp, meta_prompt."""
    if kind == "meta_prompt":
        return _build(task, "codeevolve", num_islands=1).ask().messages
    proto = _build(task, "codeevolve", num_islands=1, init_pop=0, meta_prompting=False,
                   exploration_rate=1.0 if kind.startswith("explore") else 0.0,
                   num_inspirations=2 if kind.endswith("insp") else 0, max_chat_depth=2)
    prev = proto.roots[0]
    for k, s in enumerate(SCORES[:3]):  # a lineage: initial -> v0 -> v1 -> v2
        prev = proto.insert(Child(10 + k, variant(task.initial_program, k), s, True, None), 0,
                            prev).uid
    return _until(proto, lambda p: p.parent_id == 12 or kind.startswith("explore")).messages


def shinkaevolve(task: Task, kind: str) -> list[dict[str, str]]:
    """``kind``: diff, cross, full_<variant>, fix, judge."""
    probs = {"diff": (1.0, 0.0, 0.0), "cross": (0.0, 0.0, 1.0)}.get(kind, (0.0, 1.0, 0.0))
    if kind == "fix":
        probs = (1.0, 0.0, 0.0)
    proto = _build(task, "shinkaevolve", num_islands=1, p_diff=probs[0], p_full=probs[1],
                   p_cross=probs[2], novelty="judge" if kind == "judge" else "ngram")
    _fill(proto, task, lambda c, i: proto.insert(c, i, 0), 1)
    if kind.startswith("full_"):
        return _until(proto, lambda p: p.meta["variant"] == kind[5:]).messages
    p = proto.ask()
    if kind == "fix":
        reply = "<NAME>x</NAME><DIFF>\n<<<<<<< SEARCH\nnot in the program\n=======\n" \
                "y = 1\n>>>>>>> REPLACE\n</DIFF>"
        proto.observe_reply(p, reply)
        parsed = proto.parse_reply(p, reply)
        proto.tell(p, Child(40, None, 0.0, False, parsed.error))
        return proto.ask().messages
    if kind == "judge":  # a full rewrite that copies a member: held for the judge
        reply = (f"<NAME>x</NAME><DESCRIPTION>y</DESCRIPTION><CODE>\n```python\n"
                 f"{variant(task.initial_program, 0)}```\n</CODE>")
        proto.observe_reply(p, reply)
        proto.tell(p, Child(40, None, 0.0, False, proto.parse_reply(p, reply).error))
        return proto.ask().messages
    return p.messages


IDEAS = ('{"ideas": [{"idea": "Place the circles by a constrained optimiser", "description": '
         '"Start from the current layout and let scipy.optimize move centres and radii.", '
         '"what_to_optimize": "the sum of radii", "cautions": "Keep every circle inside the '
         'square.", "approach_type": "scipy.optimize.minimize"}]}')


def adaevolve(task: Task, kind: str) -> list[dict[str, str]]:
    """``kind``: exploration, exploitation, balanced, fix, paradigm, idea, full."""
    intensity = 1.0 if kind == "exploration" else 0.0
    proto = _build(task, "adaevolve", num_islands=1, max_islands=1, intensity_min=intensity,
                   intensity_max=intensity, paradigm=kind in ("paradigm", "idea"),
                   paradigm_window=1, paradigm_threshold=1.0, paradigm_ideas=1,
                   mode="full" if kind == "full" else "diff")
    _fill(proto, task, lambda c, i: proto.offer(c.program_id, c.code or "", c.score, c.valid,
                                                i, own=True, parent_uid=0, error=c.error), 1)
    if kind in ("exploration", "exploitation", "balanced"):
        return _until(proto, lambda p: p.meta["mode"] == kind).messages
    p = proto.ask()
    if kind == "fix":
        proto.tell(p, Child(40, None, 0.0, False, "no code block and the reply is not a "
                                                  "Python program"))
        return proto.ask().messages
    if kind == "idea":
        proto.tell_text(p, IDEAS)
        return proto.ask().messages
    return p.messages


EXAMPLES: dict[str, Callable[[Task], list[dict[str, str]]]] = {
    "openevolve_full": lambda t: openevolve(t, "full"),
    "openevolve_diff": lambda t: openevolve(t, "diff"),
    **{f"codeevolve_{k}": (lambda t, k=k: codeevolve(t, k))
       for k in ("exploit", "exploit_insp", "explore", "explore_insp", "meta_prompt")},
    **{f"shinkaevolve_{k}": (lambda t, k=k: shinkaevolve(t, k))
       for k in ("diff", "cross", "full_default", "full_different", "full_motivated",
                 "full_structural", "full_parametric", "fix", "judge")},
    **{f"adaevolve_{k}": (lambda t, k=k: adaevolve(t, k))
       for k in ("exploration", "exploitation", "balanced", "fix", "paradigm", "idea", "full")},
}
