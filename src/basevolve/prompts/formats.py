"""Response-format parsers of the island protocols (paper, Appendix "Prompts").

Three reply formats, each turned into a :class:`~basevolve.prompts.ParsedProgram`
(``code=None`` + reason on any failure, so the engine stores a child with score 0 and
that reason; never a silent no-op):

* **full rewrite** (OpenEvolve, greedy): the program in a fenced block,
  :func:`parse_full_rewrite` (= :func:`~basevolve.prompts.extract_program`);
* **DIFF** (CodeEvolve; OpenEvolve's diff mode; ShinkaEvolve's ``<DIFF>`` section):
  SEARCH/REPLACE blocks applied to the parent by the one strict applier,
  :func:`parse_diff_reply`;
* **NAME / DESCRIPTION / CODE** (ShinkaEvolve's full and cross patches, and
  NAME / DESCRIPTION / DIFF for its diff patches): :func:`parse_tagged_reply`.

A ``<think>`` block is removed first (reasoning models).  Tags are matched
case-insensitively; a missing closing tag of the last section (reply cut by
``max_tokens``) takes the rest of the reply.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from basevolve.prompts.diff import apply_search_replace, splice_evolve_blocks
from basevolve.prompts.parse import ParsedProgram, extract_program, strip_think


def parse_full_rewrite(reply: str, *, language: str = "python",
                       entry: str | None = None) -> ParsedProgram:
    """The program of a full-rewrite reply (fenced block, entry function preferred)."""
    return extract_program(reply, language=language, entry=entry)


def parse_diff_reply(parent_code: str, reply: str, *, confine: bool = True) -> ParsedProgram:
    """Apply the SEARCH/REPLACE blocks of ``reply`` to ``parent_code``.

    ``confine``: only code between the EVOLVE-BLOCK markers may change (CodeEvolve and
    ShinkaEvolve); OpenEvolve's diff mode does not enforce markers.
    """
    text = strip_think(reply or "")
    res = apply_search_replace(parent_code, text, require_in_evolve_block=confine)
    if res.code is None:
        return ParsedProgram(None, f"diff not applied: {res.error}", "none")
    return ParsedProgram(res.code, None, "diff:" + ",".join(res.methods))


def section(reply: str, tag: str) -> str | None:
    """Content of ``<TAG>...</TAG>`` (case-insensitive), stripped; an unclosed last
    section runs to the end of the reply; ``None`` when the opening tag is absent."""
    m = re.search(rf"<{tag}>(.*?)(?:</{tag}>|\Z)", reply, re.DOTALL | re.IGNORECASE)
    return m.group(1).strip() if m else None


@dataclass(frozen=True, slots=True)
class TaggedReply:
    """A ShinkaEvolve-style reply: ``name`` and ``description`` (may be empty) and the
    resulting program (``parsed``)."""

    name: str
    description: str
    parsed: ParsedProgram


def parse_tagged_reply(parent_code: str, reply: str, *, body: str = "CODE",
                       language: str = "python", entry: str | None = None,
                       confine: bool = True) -> TaggedReply:
    """Parse a NAME / DESCRIPTION / CODE (``body="CODE"``) or NAME / DESCRIPTION / DIFF
    (``body="DIFF"``) reply into a program derived from ``parent_code``.

    CODE: the fenced program inside ``<CODE>`` is spliced into the parent's EVOLVE
    blocks (code outside them never changes).  DIFF: the SEARCH/REPLACE blocks inside
    ``<DIFF>`` are applied, confined to the EVOLVE blocks.  A missing ``<CODE>`` /
    ``<DIFF>`` section is a failure (the format was requested); a missing NAME or
    DESCRIPTION is not (they are labels only).  ``confine=False`` (a text artifact, which
    has no EVOLVE blocks: all of it evolves) applies DIFF edits anywhere and takes a CODE
    section as the whole new artifact.
    """
    text = strip_think(reply or "")
    name = re.sub(r"\s+", "_", section(text, "NAME") or "").lower()[:80]
    description = section(text, "DESCRIPTION") or ""
    content = section(text, body)
    if content is None:
        fail = ParsedProgram(None, f"reply has no <{body}> section (expected <NAME>, "
                                   f"<DESCRIPTION> and <{body}>...</{body}>)", "none")
        return TaggedReply(name, description, fail)
    if body == "DIFF":
        return TaggedReply(name, description,
                           parse_diff_reply(parent_code, content, confine=confine))
    program = extract_program(content, language=language, entry=entry)
    if program.code is None:
        return TaggedReply(name, description, ParsedProgram(
            None, f"<{body}> section holds no usable program: {program.error}", "none"))
    if not confine:
        return TaggedReply(name, description, ParsedProgram(
            program.code, None, "tagged:" + program.method, program.warnings))
    code, error = splice_evolve_blocks(parent_code, program.code)
    if code is None:
        return TaggedReply(name, description, ParsedProgram(None, error, "none"))
    return TaggedReply(name, description,
                       ParsedProgram(code, None, "tagged:" + program.method, program.warnings))
