"""Prompt templates, builders and LLM-reply parsers (docs/design.md: ``prompts/``).

* :func:`build_openevolve_messages`: OpenEvolve's verbatim user-message template + the
  task's system message (paper, Appendix "Prompts"; used by Greedy and BaSE).
* :func:`extract_program`: the program inside a full-rewrite reply.
* :mod:`basevolve.prompts.diff`: SEARCH/REPLACE edits and EVOLVE-BLOCK markers (island
  protocols in the style of CodeEvolve / ShinkaEvolve).
"""

from __future__ import annotations

from basevolve.prompts.diff import (
    DiffResult,
    Edit,
    apply_search_replace,
    evolve_blocks,
    outside_evolve_blocks,
    parse_search_replace,
    preserves_outside,
)
from basevolve.prompts.openevolve import (
    NO_FEATURE_COORDS,
    NO_FEATURE_DIMENSIONS,
    NO_HISTORY,
    HistoryEntry,
    build_openevolve_messages,
    format_artifacts,
    format_evolution_history,
    format_fitness,
    format_improvement_areas,
    render_openevolve_user,
)
from basevolve.prompts.parse import (
    ParsedProgram,
    defines,
    extract_program,
    extract_tag,
    strip_think,
)
from basevolve.prompts.templates import fill, load_template, placeholders

__all__ = [
    "NO_FEATURE_COORDS",
    "NO_FEATURE_DIMENSIONS",
    "NO_HISTORY",
    "DiffResult",
    "Edit",
    "HistoryEntry",
    "ParsedProgram",
    "apply_search_replace",
    "build_openevolve_messages",
    "defines",
    "evolve_blocks",
    "extract_program",
    "extract_tag",
    "fill",
    "format_artifacts",
    "format_evolution_history",
    "format_fitness",
    "format_improvement_areas",
    "load_template",
    "outside_evolve_blocks",
    "parse_search_replace",
    "placeholders",
    "preserves_outside",
    "render_openevolve_user",
    "strip_think",
]
