"""AdaEvolve-style messages (issue 26; the island-protocols spec, Section 5).

AdaEvolve is not in the paper, so every sentence here is our own wording of what its
prompts carry (read from the public skydiscover source for behaviour only):

* **code call** (purpose ``mutation``, or ``fix`` for an error retry): system = the task's
  system message + the reply format (SEARCH/REPLACE edits, a complete program accepted
  too; or a complete program in ``mode=full``).  User message, in order: the context
  programs (local diverse ones from the parent's island, then the global top ones), the
  parent's earlier children on the island ("siblings"), the search guidance (the parent's
  evaluator feedback with ``--feedback artifacts``, the active breakthrough idea, the
  error of the failed attempt being retried), the sampling mode's guidance (exploration
  or exploitation; none when balanced), then the parent under ``# Current Program`` with
  its ``- Fitness:`` line, and the task.  The parent comes last and is the only program
  with a ``- Fitness:`` line, so a reader that takes the last program or the first
  fitness line (the simulated LLM, the scripted test replies) finds the parent;
* **paradigm call** (purpose ``paradigm``, text): the task, the best program and its
  score, the ideas tried before with their outcome, and a request for ``n`` breakthrough
  ideas as one JSON object ``{"ideas": [{"idea", "description", "what_to_optimize",
  "cautions", "approach_type"}, ...]}``; :func:`parse_paradigms` reads the reply.

Text from outside (an idea written by the LLM, an error) is cleaned of control
characters and capped before it enters a prompt (:func:`basevolve.prompts.feedback.clip`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from basevolve.prompts.feedback import clean, clip
from basevolve.prompts.openevolve import format_fitness
from basevolve.prompts.parse import strip_think

#: The keys of one idea, in the order the prompt lists them.
IDEA_KEYS = ("idea", "description", "what_to_optimize", "cautions", "approach_type")
#: Characters kept of one idea field / of an error shown in a retry.
FIELD_CHARS = 800
ERROR_CHARS = 1_200
#: Characters of a paradigm reply that are parsed at all (a reply is text from outside).
REPLY_CHARS = 100_000

DIFF_FORMAT = """\
Answer with SEARCH/REPLACE edits of the current program, one block per change:

<<<<<<< SEARCH
lines copied exactly from the current program
=======
the lines that replace them
>>>>>>> REPLACE

A SEARCH text must match the program exactly. Keep the entry function's name and its
inputs and outputs. If a complete rewrite is clearer, you may instead give the whole new
program in one fenced code block."""

FULL_FORMAT = """\
Answer with the complete new program in one fenced code block. Keep the entry
function's name and its inputs and outputs."""

EXPLORE = """\
## How this parent was chosen
This parent was drawn for diversity, to explore other regions of the search space.
Do not feel bound by its approach: consider different algorithms or constructions,
and keep the program correct."""

EXPLOIT = """\
## How this parent was chosen
This parent is one of the best programs found so far. Improve it: refine its approach
or replace parts of it with a better algorithm, and keep it correct."""

PARADIGM_SYSTEM = """\
You advise an automated program search that has stopped improving. Suggest
breakthrough ideas: high-level strategies, not code, that differ from what was tried
and could raise the score. Answer with one JSON object of the form
{"ideas": [{"idea": ..., "description": ..., "what_to_optimize": ..., "cautions": ...,
"approach_type": ...}]} and nothing else."""


@dataclass(frozen=True, slots=True)
class ShownProgram:
    """A program as an AdaEvolve prompt shows it."""

    code: str
    score: float
    valid: bool
    label: str = ""


def _fenced(code: str, language: str) -> str:
    return f"```{language}\n{code.rstrip()}\n```"


def _context(programs: Sequence[ShownProgram], language: str) -> str:
    if not programs:
        return ""
    parts = [f"## Program {i} ({p.label}, fitness {format_fitness(p.score)}"
             f"{'' if p.valid else ', invalid'})\n{_fenced(p.code, language)}"
             for i, p in enumerate(programs, 1)]
    return "# Other programs\n\nPrograms kept by the search, for ideas:\n\n" + "\n\n".join(parts)


def _siblings(siblings: Sequence[ShownProgram], parent: ShownProgram) -> str:
    if not siblings:
        return ""
    lines = []
    for s in siblings:
        verdict = ("improved" if s.score > parent.score else
                   "regressed" if s.score < parent.score else "unchanged")
        lines.append(f"* fitness {format_fitness(s.score)} ({verdict}"
                     f"{'' if s.valid else ', invalid'}): {s.label}")
    return ("# Earlier attempts on this parent\n\nChildren already made from the current "
            "program; try something they did not:\n" + "\n".join(lines))


def paradigm_guidance(idea: dict[str, str]) -> str:
    """The active breakthrough idea as a prompt section."""
    return ("## Breakthrough idea to implement\nThe search has stalled everywhere. Build "
            "the next program around this idea, in the code itself, and keep it correct:\n\n"
            f"Idea: {idea.get('idea', '')}\n\nHow: {idea.get('description', '')}\n\n"
            f"Target: {idea.get('what_to_optimize', '')}\n\n"
            f"Cautions: {idea.get('cautions', '')}\n\nApproach: {idea.get('approach_type', '')}")


def build_adaevolve_messages(
    *, system_message: str, parent: ShownProgram, context: Sequence[ShownProgram],
    siblings: Sequence[ShownProgram], mode: str, language: str, diff: bool,
    feedback: str = "", idea: dict[str, str] | None = None, error: str | None = None,
) -> list[dict[str, str]]:
    """The code call's messages (module docstring); ``mode`` is ``exploration``,
    ``exploitation`` or ``balanced``; ``feedback`` the parent's rendered evaluator
    feedback (``""``: none); ``error`` the reason the previous attempt failed."""
    system = f"{system_message.strip()}\n\n{DIFF_FORMAT if diff else FULL_FORMAT}"
    guidance = [feedback.strip()] if feedback.strip() else []
    if idea:
        guidance.append(paradigm_guidance(idea))
    if error:
        guidance.append("## The previous attempt failed\nIts reply could not be used: "
                        f"{clip(clean(error), ERROR_CHARS)}\nAvoid that mistake this time.")
    label = {"exploration": EXPLORE, "exploitation": EXPLOIT}.get(mode, "")
    parts = [_context(context, language), _siblings(siblings, parent), *guidance, label]
    status = "" if parent.valid else "\n- Valid: no (it scores 0 until it runs correctly)"
    parts.append(f"# Current Program\n{_fenced(parent.code, language)}\n"
                 f"- Fitness: {format_fitness(parent.score)}{status}")
    task = ("Propose SEARCH/REPLACE edits that raise the current program's fitness."
            if diff else "Write an improved version of the current program.")
    parts.append(f"# Task\n{task}")
    user = "\n\n".join(p for p in parts if p)
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def build_paradigm_messages(
    *, system_message: str, best: ShownProgram, tried: Sequence[str], n: int,
    language: str, feedback: str = "",
) -> list[dict[str, str]]:
    """The paradigm call's messages: ``n`` ideas asked for (module docstring)."""
    parts = [f"# Problem\n{system_message.strip()}",
             f"# Best program so far (fitness {format_fitness(best.score)})\n"
             f"{_fenced(best.code, language)}"]
    if feedback.strip():
        parts.append(feedback.strip())
    if tried:
        parts.append("# Ideas tried before\n" + "\n".join(f"* {t}" for t in tried))
    parts.append(f"# Request\nFirst work out what the best program does, what limits its "
                 f"score and what the problem's structure allows. Then give exactly {n} "
                 f"ideas, each with the keys {', '.join(IDEA_KEYS)}, as one JSON object "
                 "with an \"ideas\" list.")
    return [{"role": "system", "content": PARADIGM_SYSTEM},
            {"role": "user", "content": "\n\n".join(parts)}]


_FENCE = re.compile(r"```(?:json)?\s*\n(.*?)```", re.DOTALL | re.IGNORECASE)


def _load(text: str) -> Any:
    candidates = [text, *_FENCE.findall(text)]
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start : end + 1])
    for c in candidates:
        try:
            return json.loads(c)
        except (ValueError, RecursionError):
            continue
    return None


def parse_paradigms(reply: str, n: int) -> list[dict[str, str]]:
    """At most ``n`` ideas from a paradigm reply (``[]`` when none can be read).

    Accepts ``{"ideas": [...]}`` or a bare list, as the whole reply, in a fenced block,
    or between its first ``{`` and last ``}``; an item needs a non-empty ``idea``; every
    field is cleaned and capped at :data:`FIELD_CHARS` characters.
    """
    data = _load(strip_think(str(reply or ""))[:REPLY_CHARS])
    items = data.get("ideas") if isinstance(data, dict) else data
    if not isinstance(items, list):
        return []
    out: list[dict[str, str]] = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("idea"), str):
            continue
        idea = {k: clip(clean(str(item.get(k) or "")), FIELD_CHARS).strip() for k in IDEA_KEYS}
        if idea["idea"]:
            out.append(idea)
        if len(out) == n:
            break
    return out
