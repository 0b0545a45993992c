"""SEARCH/REPLACE edits and EVOLVE-BLOCK markers (island protocols; paper, Appendix
"Prompts" → CodeEvolve / ShinkaEvolve).

CodeEvolve asks for edits of the form::

    <<<<<<< SEARCH
    exact original lines (inside an EVOLVE-BLOCK)
    =======
    replacement lines
    >>>>>>> REPLACE

applied to the *first* occurrence of each SEARCH text, in order.  ShinkaEvolve asks for
full rewrites that keep the code outside ``EVOLVE-BLOCK-START`` / ``EVOLVE-BLOCK-END``
unchanged.  These helpers are pure string functions; protocols decide what a failed edit
costs (usually: a child with score 0 and the returned reason).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_BLOCK = re.compile(
    r"^[ \t]*<{5,}[ \t]*SEARCH[ \t]*\n(?P<search>.*?)^[ \t]*={5,}[ \t]*\n"
    r"(?P<replace>.*?)^[ \t]*>{5,}[ \t]*REPLACE[ \t]*$",
    re.DOTALL | re.MULTILINE,
)
START_MARKER = "EVOLVE-BLOCK-START"
END_MARKER = "EVOLVE-BLOCK-END"


@dataclass(frozen=True, slots=True)
class Edit:
    search: str
    replace: str


@dataclass(frozen=True, slots=True)
class DiffResult:
    """``code`` is ``None`` when the edits could not be applied; ``error`` says why."""

    code: str | None
    applied: int
    error: str | None = None


def parse_search_replace(text: str) -> list[Edit]:
    """All SEARCH/REPLACE blocks of ``text``, in order (empty list when none)."""
    return [Edit(m.group("search"), m.group("replace")) for m in _BLOCK.finditer(text)]


def _find(code: str, search: str) -> tuple[int, int] | None:
    """Span of the first exact match; else of the first match ignoring trailing spaces."""
    at = code.find(search)
    if at >= 0:
        return at, at + len(search)
    want = [ln.rstrip() for ln in search.splitlines()]
    if not want:
        return None
    lines = code.splitlines(keepends=True)
    offsets = [0]
    for ln in lines:
        offsets.append(offsets[-1] + len(ln))
    for i in range(len(lines) - len(want) + 1):
        if all(lines[i + k].rstrip() == want[k] for k in range(len(want))):
            return offsets[i], offsets[i + len(want)]
    return None


def apply_search_replace(
    code: str, text: str, *, require_in_evolve_block: bool = False
) -> DiffResult:
    """Apply every SEARCH/REPLACE block of ``text`` to ``code`` (first occurrence each).

    All-or-nothing: if any SEARCH text is not found (or, with
    ``require_in_evolve_block``, lies outside the EVOLVE-BLOCKs) nothing is applied.
    """
    edits = parse_search_replace(text)
    if not edits:
        return DiffResult(None, 0, "no SEARCH/REPLACE block in the reply")
    for n, edit in enumerate(edits, 1):
        if not edit.search.strip():
            return DiffResult(None, 0, f"SEARCH block {n} is empty")
        span = _find(code, edit.search)
        if span is None:
            first = edit.search.strip().splitlines()[0][:80]
            return DiffResult(None, 0, f"SEARCH block {n} not found in the program: {first!r}")
        if require_in_evolve_block and not _inside_blocks(code, span):
            return DiffResult(None, 0, f"SEARCH block {n} edits code outside the EVOLVE-BLOCKs")
        replacement = edit.replace
        if code[span[1] - 1 : span[1]] == "\n" and replacement and not replacement.endswith("\n"):
            replacement += "\n"
        code = code[: span[0]] + replacement + code[span[1] :]
    return DiffResult(code, len(edits))


def evolve_blocks(code: str) -> list[tuple[int, int]]:
    """Character spans of the text between each START and END marker line.

    Unbalanced markers raise nothing: an unclosed START runs to the end of the program.
    """
    spans: list[tuple[int, int]] = []
    start: int | None = None
    pos = 0
    for line in code.splitlines(keepends=True):
        if START_MARKER in line and start is None:
            start = pos + len(line)
        elif END_MARKER in line and start is not None:
            spans.append((start, pos))
            start = None
        pos += len(line)
    if start is not None:
        spans.append((start, len(code)))
    return spans


def _inside_blocks(code: str, span: tuple[int, int]) -> bool:
    return any(s <= span[0] and span[1] <= e for s, e in evolve_blocks(code))


def outside_evolve_blocks(code: str) -> str:
    """The program with every EVOLVE-BLOCK body removed (markers kept)."""
    out, last = [], 0
    for s, e in evolve_blocks(code):
        out.append(code[last:s])
        last = e
    out.append(code[last:])
    return "".join(out)


def preserves_outside(original: str, new: str) -> bool:
    """Whether ``new`` keeps the markers and the code outside the EVOLVE-BLOCKs unchanged
    (ShinkaEvolve's full-rewrite rule).  Trailing whitespace is ignored."""

    def norm(text: str) -> list[str]:
        return [ln.rstrip() for ln in outside_evolve_blocks(text).splitlines() if ln.strip()]

    if len(evolve_blocks(original)) != len(evolve_blocks(new)):
        return False
    return norm(original) == norm(new)
