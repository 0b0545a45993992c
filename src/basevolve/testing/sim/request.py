"""What a request asks the simulated LLM for, read from the prompt as a model reads it.

Each protocol sends its own prompt (paper, Appendix "Prompts") and asks for its own reply
format; the simulator infers both from the text, never from protocol metadata:

========================  ===========================================================
request                   recognised by
========================  ===========================================================
``judge``                 ShinkaEvolve's novelty judge: the system prompt asks for
                          "NOVEL or NOT NOVEL"
``meta_prompt``           CodeEvolve's meta prompt: the system prompt names
                          ``PROMPT-BLOCK-START`` (a code call's system prompt never
                          does: its marker lines are stripped)
``paradigm``              AdaEvolve's breakthrough-ideas call: the system prompt asks
                          for a JSON object ``{"ideas": ...}``
``tagged_diff``           ShinkaEvolve's diff patch: the system prompt asks for ``<DIFF>``
``tagged_code``           ShinkaEvolve's full rewrite or crossover: it asks for ``<CODE>``
``diff``                  CodeEvolve and AdaEvolve (system prompt) or OpenEvolve's
                          ``mode=diff`` (the user message's Task section) show
                          ``<<<<<<< SEARCH``
``full``                  anything else: OpenEvolve's template (greedy, ``openevolve``
                          in full-rewrite mode)
========================  ===========================================================

The parent (the program to improve) and its score sit in a different place per protocol:

* OpenEvolve and AdaEvolve: the fenced block under ``# Current Program``, the first
  ``- Fitness:`` line (AdaEvolve shows its context programs first, without such a line);
* CodeEvolve: the last ``# IMPROVE THE TARGET PROGRAM`` block (the final user turn; the
  earlier ones are the lineage) and the ``- combined_score:`` line after it;
* ShinkaEvolve: the block under ``# Current program`` and the ``- combined_score:`` line
  after it (a patch retry repeats the first user message, so the parent is unchanged);
* otherwise the last fenced block of the prompt and the first ``- Fitness:`` line (the
  rule the simulator has always used for OpenEvolve-style prompts).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from basevolve.prompts.diff import PROMPT_MARKERS

_OPENEVOLVE = re.compile(r"# Current Program\s*\n```[\w+-]*\n(.*?)\n```", re.DOTALL)
_CODEEVOLVE = re.compile(r"# IMPROVE THE TARGET PROGRAM\s*\n```[\w+-]*\n(.*?)\n```", re.DOTALL)
_SHINKA = re.compile(r"# Current program\s*\n(?:(?!```)[^\n]*\n)*?```[\w+-]*\n(.*?)\n```",
                     re.DOTALL)
_FENCE = re.compile(r"```[\w+-]*\n(.*?)\n```", re.DOTALL)
_FITNESS = re.compile(r"^- Fitness: *(\S+)", re.MULTILINE)
_COMBINED = re.compile(r"^- combined_score: *(\S+)", re.MULTILINE)
_TASK_SECTION = "\n# Task\n"
SEARCH_LINE = "<<<<<<< SEARCH"
KINDS = ("full", "diff", "tagged_diff", "tagged_code", "judge", "meta_prompt", "paradigm")
PARADIGM_MARK = '{"ideas"'
_IDEA_COUNT = re.compile(r"exactly (\d+) ideas")


@dataclass(frozen=True)
class Request:
    """One request as the simulator understands it.

    ``parent`` is the program to improve as the prompt shows it (``""`` when none, e.g.
    for a judge); ``prompt`` is the evolvable prompt of a meta-prompt request (with its
    PROMPT-BLOCK markers), else ``""``; ``ideas`` is how many ideas a paradigm request
    asks for (3 when it does not say).
    """

    kind: str
    parent: str
    fitness: float
    prompt: str = ""
    ideas: int = 3


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def content(body: dict[str, Any]) -> str:
    """Every message's text, in order, one string."""
    return "\n".join(_text(m.get("content")) for m in body.get("messages") or [])


def _number(m: re.Match[str] | None) -> float:
    try:
        value = float(m.group(1)) if m else 0.0
    except ValueError:
        return 0.0
    return value if math.isfinite(value) else 0.0


def kind_of(messages: list[dict[str, Any]]) -> str:
    """The reply format the request asks for (module table)."""
    system = "\n".join(_text(m.get("content")) for m in messages if m.get("role") == "system")
    users = [_text(m.get("content")) for m in messages if m.get("role") == "user"]
    if "NOVEL or NOT NOVEL" in system:
        return "judge"
    if PROMPT_MARKERS[0] in system:
        return "meta_prompt"
    if PARADIGM_MARK in system:
        return "paradigm"
    if "<DIFF>" in system:
        return "tagged_diff"
    if "<CODE>" in system:
        return "tagged_code"
    task = users[-1].rsplit(_TASK_SECTION, 1)[-1] if users and _TASK_SECTION in users[-1] else ""
    if SEARCH_LINE in system or SEARCH_LINE in task:
        return "diff"
    return "full"


def parent_of(text: str) -> tuple[str, float]:
    """(parent program as shown, its score) from a prompt's text (module docstring)."""
    m = _OPENEVOLVE.search(text)
    if m is not None:
        return m.group(1), _number(_FITNESS.search(text))
    for pattern in (_CODEEVOLVE, _SHINKA):
        found = list(pattern.finditer(text))
        if found:
            last = found[-1]
            return last.group(1), _number(_COMBINED.search(text, last.end()))
    blocks = _FENCE.findall(text)
    return (blocks[-1] if blocks else ""), _number(_FITNESS.search(text))


def read_request(body: dict[str, Any]) -> Request:
    """The request's kind, its parent and the parent's score (module docstring)."""
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    kind = kind_of(messages)
    if kind == "judge":
        return Request(kind, "", 0.0)
    if kind == "meta_prompt":
        user = next((_text(m.get("content")) for m in reversed(messages)
                     if m.get("role") == "user"), "")
        start, end = user.find(PROMPT_MARKERS[0]), user.find(PROMPT_MARKERS[1])
        prompt = user[user.rfind("\n", 0, start) + 1 : end + len(PROMPT_MARKERS[1])] \
            if 0 <= start < end else ""
        return Request(kind, "", 0.0, prompt)
    if kind == "paradigm":
        m = _IDEA_COUNT.search(content(body))
        return Request(kind, "", 0.0, ideas=min(int(m.group(1)), 20) if m else 3)
    code, fitness = parent_of(content(body))
    return Request(kind, code, fitness)
