"""CodeEvolve-style messages (paper, Appendix "Prompts" → CodeEvolve).

One call = a system message plus a multi-turn chat:

* system = the evolvable task prompt (the paper's per-task "system block", verbatim,
  or the task's own system message for a user task) + one of four task templates
  (exploitation / exploration, each with or without inspirations).  The exploitation
  template without inspirations is the paper's listing verbatim, including its
  computational-budget block; the three others are our own wording of the variants
  the paper describes in prose (exploration "retitles the task as code exploration and
  diversification"; the with-inspirations variants "require the LLM to analyse the
  supplied inspiration programs and synthesise their differences");
* the parent's lineage, oldest first, up to the chat depth: per ancestor a user turn
  with its code and evaluation, then an assistant turn with the edit that produced the
  next program of the lineage;
* the final user turn: the inspirations (code + evaluation), then the parent.

Meta-prompting: the evolvable prompt sits between ``PROMPT-BLOCK-START`` and
``PROMPT-BLOCK-END``; a meta call (purpose ``meta_prompt``) shows it with a program it
produced and asks for SEARCH/REPLACE edits inside the block (our own wording; the
paper does not print CodeEvolve's meta prompt).
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass

from basevolve.prompts.diff import PROMPT_MARKERS
from basevolve.prompts.openevolve import format_fitness, truncate
from basevolve.prompts.templates import fill, has_template, load_template

TEMPLATES = {
    (False, False): "codeevolve_exploit",
    (False, True): "codeevolve_exploit_insp",
    (True, False): "codeevolve_explore",
    (True, True): "codeevolve_explore_insp",
}


@dataclass(frozen=True, slots=True)
class Shown:
    """A program as a CodeEvolve turn shows it."""

    code: str
    score: float
    valid: bool
    error: str | None = None


def task_block(task_name: str, fallback: str) -> str:
    """The paper's CodeEvolve system block for a built-in task, else ``fallback``."""
    name = f"codeevolve_system_{task_name}"
    return load_template(name) if has_template(name) else fallback


def initial_prompt(task_name: str, fallback: str) -> str:
    """The evolvable prompt of generation 0: the task block inside PROMPT-BLOCK markers."""
    begin, end = PROMPT_MARKERS
    return f"{begin}\n{task_block(task_name, fallback)}\n{end}"


def strip_prompt_markers(prompt: str) -> str:
    return "\n".join(ln for ln in prompt.split("\n") if not any(m in ln for m in PROMPT_MARKERS))


def format_evaluation(p: Shown) -> str:
    lines = [f"- combined_score: {format_fitness(p.score)}",
             f"- status: {'valid' if p.valid else 'invalid'}"]
    if p.error:
        lines.append(f"- error: {truncate(p.error.strip(), 600)}")
    return "\n".join(lines)


def target_turn(p: Shown, language: str) -> str:
    return fill(load_template("codeevolve_target"),
                {"language": language, "program": p.code.rstrip("\n"),
                 "metrics": format_evaluation(p)})


def system_message(prompt: str, *, explore: bool, inspirations: bool, timeout_s: float,
                   max_mem: str) -> str:
    template = load_template(TEMPLATES[(explore, inspirations)])
    body = fill(template, {"timeout_s": f"{timeout_s:g}", "max_mem": max_mem})
    return f"{strip_prompt_markers(prompt).strip()}\n\n{body}"


def build_codeevolve_messages(
    *, prompt: str, parent: Shown, lineage: Sequence[tuple[Shown, str]],
    inspirations: Sequence[Shown], explore: bool, language: str, timeout_s: float,
    max_mem: str,
) -> list[dict[str, str]]:
    """``lineage``: (ancestor, edit that produced the next program), oldest first."""
    messages = [{"role": "system", "content": system_message(
        prompt, explore=explore, inspirations=bool(inspirations), timeout_s=timeout_s,
        max_mem=max_mem)}]
    for ancestor, edit in lineage:
        messages.append({"role": "user", "content": target_turn(ancestor, language)})
        messages.append({"role": "assistant", "content": edit})
    parts = []
    for i, insp in enumerate(inspirations, 1):
        parts.append(f"# INSPIRATION PROGRAM {i}\n```{language}\n{insp.code.rstrip()}\n```\n\n"
                     f"# EVALUATION OF INSPIRATION PROGRAM {i}\n{format_evaluation(insp)}")
    parts.append(target_turn(parent, language))
    messages.append({"role": "user", "content": "\n\n".join(parts)})
    return messages


def build_meta_messages(*, prompt: str, program: Shown, language: str) -> list[dict[str, str]]:
    user = fill(load_template("codeevolve_meta_user"), {
        "prompt": prompt, "language": language, "program": program.code.rstrip("\n"),
        "metrics": format_evaluation(program)})
    return [{"role": "system", "content": load_template("codeevolve_meta_system")},
            {"role": "user", "content": user}]


def edit_between(old: str, new: str) -> str:
    """A SEARCH/REPLACE rendering of the change ``old`` → ``new`` (one block per changed
    hunk, with one line of context for pure insertions).  The lineage chat shows this as
    the assistant turn: it is rebuilt from the stored programs, so a resumed run shows
    the same turns as an uninterrupted one."""

    a, b = old.splitlines(), new.splitlines()
    blocks = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        if i1 == i2 and i1 > 0:  # pure insertion: anchor on the line before
            i1, j1 = i1 - 1, j1 - 1
        search, replace = "\n".join(a[i1:i2]), "\n".join(b[j1:j2])
        blocks.append(f"<<<<<<< SEARCH\n{search}\n=======\n{replace}\n>>>>>>> REPLACE")
    return "\n\n".join(blocks) if blocks else "(no change)"
