"""ShinkaEvolve-style messages (paper, Appendix "Prompts" → ShinkaEvolve).

System message = the paper's per-task ShinkaEvolve system prompt (verbatim; the
task's own system message for a user task) + the patch type's format instructions:

* ``full``: one of five variants sampled uniformly per call.  ``default`` is the paper's
  "full-rewrite format suffix" verbatim; the four others (``different``,
  ``motivated``, ``structural``, ``parametric``; the paper names them
  "different-algorithm, context-motivated, structural-redesign, and parametric-design")
  replace its first instruction line with our own wording of that intent;
* ``diff``: NAME / DESCRIPTION / DIFF instructions (our wording);
* ``cross``: NAME / DESCRIPTION / CODE crossover instructions (our wording).

User message = the inspirations ("previously implemented programs" with their
metrics), then the paper's iteration message (verbatim for full and cross patches; a
diff-mode variant in our words), and for cross the crossover inspiration.  A patch
retry (purpose ``fix``) continues the conversation with the failed reply and the
applier's reason.
"""

from __future__ import annotations

from collections.abc import Sequence

from basevolve.prompts.codeevolve import Shown
from basevolve.prompts.openevolve import format_fitness, truncate
from basevolve.prompts.parse import strip_think
from basevolve.prompts.templates import fill, has_template, load_template

FULL_VARIANTS = ("default", "different", "motivated", "structural", "parametric")
PATCH_TYPES = ("diff", "full", "cross")
_VARIANT_INTRO = {
    "different": ("Design a completely different algorithm for the task, not a variation of "
                  "the current\nprogram's approach."),
    "motivated": ("Design a novel algorithm motivated by the ideas of the prior programs shown "
                  "above,\ncombining what made them score well."),
    "structural": ("Redesign the program's structure (its architecture, decomposition and "
                   "data flow) to\nimprove its performance on the specified metrics."),
    "parametric": ("Improve the program through its parameters: choose new parameter "
                   "settings or make\nthe parameters adaptive."),
}
RETRY = "Your previous reply could not be used: {error}\nPlease answer again in the required format."


def task_prompt(task_name: str, fallback: str) -> str:
    name = f"shinka_system_{task_name}"
    return load_template(name) if has_template(name) else fallback


def format_instructions(patch_type: str, variant: str, language: str) -> str:
    if patch_type == "diff":
        return load_template("shinka_diff_format")
    if patch_type == "cross":
        return fill(load_template("shinka_cross_format"), {"language": language})
    text = fill(load_template("shinka_full_default"), {"language": language})
    if variant == "default":
        return text
    first_two = text.split("\n", 2)  # "Rewrite the program ...", "Provide the complete ..."
    return f"{_VARIANT_INTRO[variant]}\n{first_two[1]}\n{first_two[2]}"


def format_metrics(p: Shown) -> str:
    lines = [f"- combined_score: {format_fitness(p.score)}",
             f"- correct: {'yes' if p.valid else 'no'}"]
    return "\n".join(lines)


def _feedback(p: Shown) -> str:
    if not p.error:
        return ""
    return f"\n\nFeedback from the evaluation:\n{truncate(p.error.strip(), 800)}"


def build_shinka_messages(
    *, system: str, patch_type: str, variant: str, parent: Shown,
    inspirations: Sequence[Shown], crossover: Shown | None, language: str,
    feedback: str | None = None,
) -> list[dict[str, str]]:
    """``feedback``: the parent's rendered evaluator feedback for the text-feedback slot
    (``--feedback artifacts``); None = the default, the parent's error alone."""
    sys_msg = f"{system.strip()}\n\n{format_instructions(patch_type, variant, language)}"
    parts = []
    if inspirations:
        shown = [f"## Prior program {i} ({format_fitness(p.score)})\n```{language}\n"
                 f"{p.code.rstrip()}\n```\n\nPerformance metrics:\n{format_metrics(p)}"
                 for i, p in enumerate(inspirations, 1)]
        parts.append("# Prior programs\n\nHere are the performance metrics of previously "
                     "implemented programs:\n\n" + "\n\n".join(shown))
    template = "shinka_iteration_diff" if patch_type == "diff" else "shinka_iteration"
    parts.append(fill(load_template(template), {
        "language": language, "code_content": parent.code.rstrip("\n"),
        "performance_metrics": format_metrics(parent),
        "text_feedback_section": _feedback(parent) if feedback is None
        else (f"\n\n{feedback}" if feedback else ""),
    }))
    if crossover is not None:
        parts.append(f"# Crossover Inspiration\n```{language}\n{crossover.code.rstrip()}\n```\n\n"
                     f"Performance metrics:\n{format_metrics(crossover)}")
    return [{"role": "system", "content": sys_msg}, {"role": "user", "content": "\n\n".join(parts)}]


def retry_messages(previous: Sequence[dict[str, str]], reply: str, error: str
                   ) -> list[dict[str, str]]:
    """The conversation of a failed patch, continued with the failure (one more call)."""
    return [*(dict(m) for m in previous), {"role": "assistant", "content": reply},
            {"role": "user", "content": RETRY.format(error=error)}]


def build_novelty_messages(*, existing: str, proposed: str, language: str
                           ) -> list[dict[str, str]]:
    user = fill(load_template("shinka_novelty_user"), {
        "language": language, "existing": existing.rstrip(), "proposed": proposed.rstrip()})
    return [{"role": "system", "content": load_template("shinka_novelty_system")},
            {"role": "user", "content": user}]


#: What may stand before the verdict without being part of it: Markdown emphasis,
#: headings, quotes and list marks around the first word of the answer.
_DECORATION = " \t\r\n*_#>`\"'-"


def judge_says_novel(text: str) -> bool:
    """Whether the judge's answer *starts* with NOVEL (issue 23, item 5; ShinkaEvolve
    accepts a proposal iff the answer starts with "NOVEL", spec section 2).

    Reasoning (``<think>`` blocks, :func:`~basevolve.prompts.parse.strip_think`) and
    Markdown decoration before the first word are not the answer; the word must be NOVEL
    itself (not NOVELTY), in any case.  "The proposal is NOVEL" or "NOT NOVEL" do not
    count: a verdict anywhere later in the text is not the verdict.
    """
    answer = strip_think(text or "").lstrip(_DECORATION).upper()
    return answer.startswith("NOVEL") and not answer[5:6].isalnum()
