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
  the parent's EVOLVE block, and the edit must give the child under both appliers --
  the shared one and CodeEvolve's exact rule (stripped SEARCH / REPLACE,
  :mod:`basevolve.prompts.exact_diff`) -- else each hunk is widened upwards by equal
  lines until its first lines share their indentation, else one block replaces the
  whole EVOLVE body (:func:`search_replace`);
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

import difflib
import json
from collections.abc import Sequence

import numpy as np

from basevolve.prompts.codeevolve import edit_between
from basevolve.prompts.diff import PROMPT_MARKERS, apply_search_replace, evolve_blocks
from basevolve.prompts.exact_diff import apply_exact_search_replace
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


def _gives(parent: str, edit: str, child: str, markers: tuple[str, str] | None = None) -> bool:
    """Whether ``edit`` turns ``parent`` into ``child`` under the shared applier and, when
    the text has marked regions, under CodeEvolve's exact rule too."""
    kw = {} if markers is None else {"markers": markers}
    if apply_search_replace(parent, edit, require_in_evolve_block=True, **kw).code != child:
        return False
    if not evolve_blocks(parent, *([] if markers is None else [markers])):
        return True
    return apply_exact_search_replace(parent, edit, **kw).code == child


def _ragged(search: list[str], replace: list[str]) -> bool:
    """Whether stripping would lose a first line's indentation (or has no line to keep)."""
    if not search or not replace or not search[0].strip():
        return True
    x, y = search[0], replace[0]
    return len(x) - len(x.lstrip()) != len(y) - len(y.lstrip())


def _anchored(parent: str, child: str) -> str:
    """:func:`edit_between`'s hunks, each widened upwards over equal lines until its
    SEARCH and REPLACE start with the same, non-blank line indentation (CodeEvolve
    strips both sides, so a first line's own indentation is not replaced)."""
    a, b = parent.splitlines(), child.splitlines()
    blocks, floor = [], 0
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        if i1 == i2 and i1 > 0:  # pure insertion: anchor on the line before
            i1, j1 = i1 - 1, j1 - 1
        while (_ragged(a[i1:i2], b[j1:j2]) and i1 > floor and j1 > 0
               and a[i1 - 1] == b[j1 - 1]):
            i1, j1 = i1 - 1, j1 - 1
        floor = i2
        blocks.append(_block("".join(x + "\n" for x in a[i1:i2]),
                             "".join(y + "\n" for y in b[j1:j2])))
    return "\n\n".join(blocks)


def search_replace(parent: str, child: str) -> str:
    """SEARCH/REPLACE blocks that turn ``parent`` into ``child`` under the strict applier
    with ``require_in_evolve_block=True`` and under CodeEvolve's exact rule (module
    docstring)."""
    for edit in (edit_between(parent, child), _anchored(parent, child)):
        if _gives(parent, edit, child):
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
        want = apply_search_replace(prompt, edit, require_in_evolve_block=True,
                                    markers=PROMPT_MARKERS).code
        if want is not None and _gives(prompt, edit, want, PROMPT_MARKERS):
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
