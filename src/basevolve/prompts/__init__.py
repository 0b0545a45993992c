"""Prompt templates, builders and LLM-reply parsers (docs/design.md: ``prompts/``).

* :func:`build_openevolve_messages`: OpenEvolve's verbatim user-message template + the
  task's system message (paper, Appendix "Prompts"; used by Greedy and BaSE).
* :func:`extract_program`: the program inside a full-rewrite reply.
* :mod:`basevolve.prompts.diff`: the one strict SEARCH/REPLACE applier and EVOLVE-BLOCK
  helpers (island protocols in the style of CodeEvolve / ShinkaEvolve).
* :mod:`basevolve.prompts.formats`: reply-format parsers (full rewrite, DIFF,
  NAME/DESCRIPTION/CODE).
"""

from __future__ import annotations

from basevolve.prompts.diff import (
    DiffResult,
    Edit,
    ParsedEdits,
    apply_search_replace,
    evolve_block_text,
    evolve_blocks,
    outside_evolve_blocks,
    parse_edits,
    parse_search_replace,
    preserves_outside,
    splice_evolve_blocks,
)
from basevolve.prompts.formats import (
    TaggedReply,
    parse_diff_reply,
    parse_full_rewrite,
    parse_tagged_reply,
    section,
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
    extract_text,
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
    "ParsedEdits",
    "ParsedProgram",
    "TaggedReply",
    "apply_search_replace",
    "build_openevolve_messages",
    "defines",
    "evolve_block_text",
    "evolve_blocks",
    "extract_program",
    "extract_tag",
    "extract_text",
    "fill",
    "format_artifacts",
    "format_evolution_history",
    "format_fitness",
    "format_improvement_areas",
    "load_template",
    "outside_evolve_blocks",
    "parse_diff_reply",
    "parse_edits",
    "parse_full_rewrite",
    "parse_search_replace",
    "parse_tagged_reply",
    "placeholders",
    "preserves_outside",
    "render_openevolve_user",
    "section",
    "splice_evolve_blocks",
    "strip_think",
]
