"""Render a simulated child in the reply format its request asks for (paper, Appendix
"Prompts": OpenEvolve full rewrite or diff, CodeEvolve SEARCH/REPLACE, ShinkaEvolve
NAME / DESCRIPTION / DIFF or CODE, ShinkaEvolve's novelty judge, CodeEvolve's meta
prompt).

Why format-aware: the island protocols apply a reply to the parent instead of taking a
whole program, and only inside the EVOLVE blocks.  A full fenced program is therefore
not a usable answer to them; the simulator answers as a model that follows the format:

* the child program is the parent with its (first) EVOLVE block replaced by the family
  program's :func:`~basevolve.testing.sim.families.evolve_body` (imports, helpers and the
  entry function), so the parent's text outside the block never changes
  (:func:`child_program`);
* a diff is the SEARCH/REPLACE rendering of parent -> child with one block per changed
  hunk (:func:`basevolve.prompts.codeevolve.edit_between`); every SEARCH text lies in
  the parent's EVOLVE block, and the edit is checked with the strict applier, falling
  back to one block that replaces the whole EVOLVE body when a hunk would match
  elsewhere first (:func:`search_replace`);
* tagged replies wrap the diff or the fenced child program in ``<NAME>``,
  ``<DESCRIPTION>`` and ``<DIFF>`` / ``<CODE>`` (:func:`tagged`);
* a judge answers ``NOVEL: ...`` or ``NOT NOVEL: ...`` (:func:`judge_reply`); a meta
  prompt gets one small SEARCH/REPLACE edit inside the PROMPT-BLOCK that adds one
  line of advice after a line of the block (:func:`meta_reply`); AdaEvolve's paradigm
  call gets a JSON object of ideas, each naming one of the task's families
  (:func:`paradigm_reply`).

Broken replies stay broken in every format: prose has no code, SEARCH block or tags; a
syntax error or a wrong entry name is carried by the edit or the ``<CODE>`` section
(:func:`break_code`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np

from basevolve.prompts.codeevolve import edit_between
from basevolve.prompts.diff import PROMPT_MARKERS, apply_search_replace, evolve_blocks
from basevolve.testing.sim.families import evolve_body

PROSE = ("The current approach is reasonable. To improve the fitness I would "
         "refine the placement near the boundary and re-balance the spacing, "
         "keeping the same inputs and outputs.\n")
#: Advice a meta-prompt reply adds to the evolvable prompt.  The simulator's programs do
#: not depend on the prompt (it has no notion of prompt quality), so these only make the
#: prompt database grow the way CodeEvolve's does.
ADVICE = (
    "Check every constraint of the output before returning it.",
    "Prefer constructions whose score can be verified exactly.",
    "When a hand-made layout stalls, refine it with scipy.optimize.",
    "Exploit the symmetry of the domain to reduce the search space.",
    "Small parameter changes rarely escape a plateau; try a different construction.",
    "Keep the entry function's name and return format unchanged.",
)


def break_code(code: str, kind: str, entry: str) -> str:
    """A broken variant of a program: ``syntax`` opens a parenthesis it never closes,
    ``wrong_entry`` renames the entry function (both score 0 through the real parser and
    sandbox); any other kind leaves the code as is."""
    if kind == "syntax":
        return code.replace("    return ", "    return (", 1)
    if kind == "wrong_entry":
        return code.replace(f"def {entry}(", f"def {entry}_v2(", 1)
    return code


def child_program(parent: str, code: str, note: str = "") -> str:
    """``parent`` with its first EVOLVE block's body replaced by ``note`` + the family
    program's body; ``code`` itself when the parent has no EVOLVE block."""
    spans = evolve_blocks(parent)
    if not spans:
        return code
    start, end = spans[0]
    return parent[:start] + note + evolve_body(code) + parent[end:]


def _block(search: str, replace: str) -> str:
    return f"<<<<<<< SEARCH\n{search}=======\n{replace}>>>>>>> REPLACE"


def search_replace(parent: str, child: str) -> str:
    """SEARCH/REPLACE blocks that turn ``parent`` into ``child`` under the strict applier
    with ``require_in_evolve_block=True`` (module docstring)."""
    edit = edit_between(parent, child)
    if apply_search_replace(parent, edit, require_in_evolve_block=True).code == child:
        return edit
    p_spans, c_spans = evolve_blocks(parent), evolve_blocks(child)
    if not p_spans or not c_spans:
        return _block(parent if parent.endswith("\n") else parent + "\n",
                      child if child.endswith("\n") else child + "\n")
    (ps, pe), (cs, ce) = p_spans[0], c_spans[0]
    return _block(parent[ps:pe], child[cs:ce])


def tagged(name: str, description: str, tag: str, content: str) -> str:
    """A ShinkaEvolve-style reply: ``<NAME>``, ``<DESCRIPTION>`` and ``<tag>`` sections."""
    return (f"<NAME>\n{name}\n</NAME>\n\n<DESCRIPTION>\n{description}\n</DESCRIPTION>\n\n"
            f"<{tag}>\n{content.rstrip()}\n</{tag}>\n")


def fenced(code: str, language: str = "python") -> str:
    return f"```{language}\n{code.rstrip()}\n```"


def judge_reply(novel: bool) -> str:
    """The novelty judge's answer: the verdict on the first line, then one sentence."""
    if novel:
        return "NOVEL: the proposed program changes how the solution is constructed.\n"
    return "NOT NOVEL: the proposed program keeps the same construction with other constants.\n"


def meta_reply(prompt: str, rng: np.random.Generator) -> str | None:
    """One SEARCH/REPLACE edit inside the PROMPT-BLOCK of ``prompt`` that adds a line of
    :data:`ADVICE` after a line drawn from the block; ``None`` when no line of the block
    can be edited (the caller then answers in prose)."""
    spans = evolve_blocks(prompt, PROMPT_MARKERS)
    if not spans:
        return None
    start, end = spans[0]
    lines = [ln for ln in prompt[start:end].splitlines() if ln.strip()]
    if not lines:
        return None
    advice = f"- {ADVICE[int(rng.integers(len(ADVICE)))]}\n"
    first = int(rng.integers(len(lines)))
    for line in lines[first:] + lines[:first]:  # the first line whose edit applies
        old = line + "\n"
        edit = "Adding one piece of advice.\n\n" + _block(old, old + advice) + "\n"
        if apply_search_replace(prompt, edit, require_in_evolve_block=True,
                                markers=PROMPT_MARKERS).code is not None:
            return edit
    return None


def paradigm_reply(families: Sequence[str], n: int, rng: np.random.Generator) -> str:
    """AdaEvolve's paradigm answer: ``n`` ideas (at most one per family), each naming a
    family of the task, as one JSON object.  The simulator has no notion of advice
    quality, so an idea changes nothing in later replies; it only exercises the call."""
    picks = [families[int(i)] for i in rng.permutation(len(families))[: max(1, n)]]
    ideas = [{"idea": f"Rebuild the solution as a {name.replace('_', ' ')} construction",
              "description": f"Replace the current construction by the {name} approach "
                             "and tune its parameters.",
              "what_to_optimize": "the task's score",
              "cautions": "Keep the entry function and the output format.",
              "approach_type": name} for name in picks]
    return json.dumps({"ideas": ideas}, indent=1) + "\n"
