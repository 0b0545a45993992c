"""OpenEvolve's prompt, used verbatim by Greedy and BaSE (paper, Appendix "Prompts" →
"OpenEvolve (also used by Greedy and BaSE)").

One call = one system message (the task's per-task system message) + one user message
rendered from ``templates/openevolve_user.txt`` (full-rewrite mode).  The template text is
kept byte-for-byte as printed in the paper; only the placeholders are ours to fill:

* ``{fitness_score}``: the current program's score with 4 decimals (OpenEvolve's format).
* ``{feature_coords}`` / ``{feature_dimensions}``: protocols without a MAP-Elites grid
  (greedy) say so explicitly (:data:`NO_FEATURE_COORDS`, :data:`NO_FEATURE_DIMENSIONS`).
* ``{improvement_areas}``: a short deterministic note on the recent trend.
* ``{artifacts}``: the current program's evaluation error, if any, else empty.
* ``{evolution_history}``: up to ``n_top`` top and ``n_diverse`` other programs of the
  archive with their scores ("three top programs and two diverse programs from the
  archive", paper Appendix), see :func:`format_evolution_history`.

Everything here is a pure function of its arguments, so sibling calls of one greedy
generation get byte-identical messages (a prefix-caching server then reads the prompt
once; paper, Appendix "Effective FLOPs").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from basevolve.prompts.templates import fill, load_template

TEMPLATE_NAME = "openevolve_user"
DIFF_TEMPLATE_NAME = "openevolve_diff_user"  # our wording of OpenEvolve's diff mode
NO_FEATURE_COORDS = "No feature coordinates (this protocol keeps no MAP-Elites grid)"
NO_FEATURE_DIMENSIONS = "none (this protocol keeps a single best program, no feature grid)"
NO_HISTORY = "No previous programs yet."
MAX_ARTIFACT_CHARS = 1500


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    """One archived program shown in ``{evolution_history}``."""

    code: str
    score: float
    valid: bool = True
    error: str | None = None
    label: str = ""  # e.g. "generation 3"; shown after the score when non-empty


def format_fitness(score: float) -> str:
    """OpenEvolve prints fitness with 4 decimals; non-finite scores print as-is."""
    return f"{score:.4f}" if math.isfinite(score) else str(score)


def truncate(text: str, limit: int = MAX_ARTIFACT_CHARS) -> str:
    """Keep the head and tail of a long text (errors put the cause at the end)."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n... [{len(text) - limit} characters omitted] ...\n{text[-half:]}"


def format_artifacts(error: str | None, output: str | None = None) -> str:
    """The ``{artifacts}`` block: the current program's evaluation error/output, or ``""``."""
    parts: list[str] = []
    if error:
        parts.append(f"## Last Execution Output\n\n### error\n```\n{truncate(error.strip())}\n```")
    if output and output.strip():
        head = "" if parts else "## Last Execution Output\n\n"
        parts.append(f"{head}### output\n```\n{truncate(output.strip())}\n```")
    return "\n\n".join(parts)


def _entry_block(title: str, entry: HistoryEntry, language: str, include_code: bool) -> str:
    status = "" if entry.valid else " (invalid)"
    label = f", {entry.label}" if entry.label else ""
    lines = [f"### {title} (Fitness: {format_fitness(entry.score)}{status}{label})"]
    if entry.error:
        lines.append(f"Error: {truncate(entry.error.strip(), 300)}")
    if include_code:
        lines.append(f"```{language}\n{entry.code.rstrip()}\n```")
    return "\n".join(lines)


def format_evolution_history(
    top: Sequence[HistoryEntry],
    diverse: Sequence[HistoryEntry] = (),
    *,
    language: str = "python",
    include_code: bool = True,
) -> str:
    """Render the ``{evolution_history}`` block (our own wording; the paper fixes only the
    counts).  Order is exactly the order given, so callers control determinism."""
    if not top and not diverse:
        return NO_HISTORY
    sections: list[str] = []
    if top:
        blocks = [
            _entry_block(f"Program {i}", e, language, include_code) for i, e in enumerate(top, 1)
        ]
        sections.append("## Top Performing Programs\n\n" + "\n\n".join(blocks))
    if diverse:
        blocks = [
            _entry_block(f"Diverse Program {i}", e, language, include_code)
            for i, e in enumerate(diverse, 1)
        ]
        sections.append("## Diverse Programs\n\n" + "\n\n".join(blocks))
    return "\n\n".join(sections)


def format_previous_attempts(entries: Sequence[HistoryEntry]) -> str:
    """The "Previous Attempts" section: one line per program (score, status, and the
    ``label``, e.g. its outcome relative to its own parent); empty when none."""
    if not entries:
        return ""
    lines = []
    for i, e in enumerate(entries, 1):
        status = "" if e.valid else ", invalid"
        label = f"; {e.label}" if e.label else ""
        lines.append(f"- Attempt {i}: fitness {format_fitness(e.score)}{status}{label}")
    return "## Previous Attempts\n\n" + "\n".join(lines)


def format_improvement_areas(
    current_score: float, previous_score: float | None, stagnant_generations: int, valid: bool
) -> str:
    """A one-line, deterministic focus note (OpenEvolve derives it from the recent trend)."""
    if not valid:
        return "The current program is not valid; make it run and satisfy all constraints"
    if previous_score is not None and current_score > previous_score:
        return (
            f"Fitness improved: {format_fitness(previous_score)} → {format_fitness(current_score)}"
        )
    if stagnant_generations > 0:
        return (
            f"Fitness unchanged at {format_fitness(current_score)} for {stagnant_generations} "
            "generation(s); consider a different approach"
        )
    return "Improve the fitness score"


def render_openevolve_user(
    *,
    current_program: str,
    fitness_score: float,
    language: str = "python",
    feature_coords: str = NO_FEATURE_COORDS,
    improvement_areas: str = "Improve the fitness score",
    artifacts: str = "",
    evolution_history: str = NO_HISTORY,
    feature_dimensions: str = NO_FEATURE_DIMENSIONS,
    template: str = TEMPLATE_NAME,
) -> str:
    """Fill the verbatim OpenEvolve user-message template (full rewrite; ``template=
    DIFF_TEMPLATE_NAME`` for the SEARCH/REPLACE mode, whose Task section is ours)."""
    return fill(
        load_template(template),
        {
            "fitness_score": format_fitness(fitness_score),
            "feature_coords": feature_coords,
            "improvement_areas": improvement_areas,
            "artifacts": artifacts,
            "evolution_history": evolution_history,
            "current_program": current_program.rstrip("\n"),
            "language": language,
            "feature_dimensions": feature_dimensions,
        },
    )


def build_openevolve_messages(
    *, system_message: str, current_program: str, fitness_score: float, **fields: str
) -> list[dict[str, str]]:
    """OpenAI chat messages for one OpenEvolve-style call: ``[system, user]``.

    ``fields`` are the remaining keyword arguments of :func:`render_openevolve_user`
    (``language``, ``feature_coords``, ``improvement_areas``, ``artifacts``,
    ``evolution_history``, ``feature_dimensions``).
    """
    user = render_openevolve_user(
        current_program=current_program, fitness_score=fitness_score, **fields
    )
    return [{"role": "system", "content": system_message}, {"role": "user", "content": user}]
