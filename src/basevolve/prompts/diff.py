"""SEARCH/REPLACE edits and EVOLVE-BLOCK markers: the one strict applier of basevolve
(island protocols; paper, Appendix "Prompts" → CodeEvolve / ShinkaEvolve, and the
optional diff mode of OpenEvolve).

CodeEvolve and ShinkaEvolve ask for edits of the form::

    <<<<<<< SEARCH
    exact original lines (inside an EVOLVE-BLOCK)
    =======
    replacement lines
    >>>>>>> REPLACE

applied in order, each to the *first* occurrence of its SEARCH text in the program as
changed by the blocks before it.  Why strict and all-or-nothing: OpenEvolve silently
skips blocks that do not match, so a reply whose edits all fail becomes a copy of its
parent that is evaluated and inserted anyway; basevolve records such a reply as a child
with score 0 and the reason (:class:`DiffResult.error`) instead.

Matching, most exact first (the first level that finds the text wins):

1. ``exact``: the SEARCH text as a substring;
2. ``rstrip``: line by line, ignoring trailing whitespace;
3. ``tabs``: as 2 with tabs expanded to 4 spaces on both sides;
4. ``indent``: as 3 after removing each side's common indentation, all lines shifted by
   the same amount (ShinkaEvolve's indentation-adjusted match); the replacement is then
   re-indented by that shift.

CRLF programs and replies are matched as LF and the result is written back with the
program's line endings.  An empty SEARCH inserts the replacement at the end of the last
EVOLVE block (ShinkaEvolve's rule, without corrupting the END marker).  With
``require_in_evolve_block`` (CodeEvolve, ShinkaEvolve) the search looks only inside the
EVOLVE blocks, and neither side may add or remove a marker.  An edit set that leaves the
program unchanged is an error too (never a silent no-op).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

START_MARKER = "EVOLVE-BLOCK-START"
END_MARKER = "EVOLVE-BLOCK-END"
MARKERS = (START_MARKER, END_MARKER)
PROMPT_MARKERS = ("PROMPT-BLOCK-START", "PROMPT-BLOCK-END")
_SEARCH = re.compile(r"^[ \t]*<{5,}[ \t]*SEARCH[ \t]*$")
_DIVIDER = re.compile(r"^[ \t]*={5,}[ \t]*$")
_REPLACE = re.compile(r"^[ \t]*>{5,}[ \t]*REPLACE[ \t]*$")
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[^\n]*$")
TAB = 4


@dataclass(frozen=True, slots=True)
class Edit:
    search: str
    replace: str


@dataclass(frozen=True, slots=True)
class DiffResult:
    """``code`` is ``None`` when the edits could not be applied; ``error`` says why.

    ``applied`` counts applied blocks (0 on failure: all-or-nothing); ``methods`` names
    the matching level used by each block (``exact``, ``rstrip``, ``tabs``, ``indent``,
    ``insert``).
    """

    code: str | None
    applied: int
    error: str | None = None
    methods: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ParsedEdits:
    edits: list[Edit]
    error: str | None  # a malformed block (unclosed, no divider); None when all parse


def parse_edits(text: str) -> ParsedEdits:
    """Every SEARCH/REPLACE block of ``text`` in order, plus why a block is malformed.

    Lines are scanned one by one, so prose and code fences around (or between) the
    blocks are ignored; a fence line directly inside a block is dropped (models wrap the
    SEARCH or REPLACE side in ```` ``` ````).
    """
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    edits: list[Edit] = []
    i = 0
    while i < len(lines):
        if not _SEARCH.match(lines[i]):
            if _DIVIDER.match(lines[i]) or _REPLACE.match(lines[i]):
                n = len(edits) + 1
                return ParsedEdits(edits, f"block {n}: '=======' or '>>>>>>> REPLACE' without "
                                          "a '<<<<<<< SEARCH' line before it")
            i += 1
            continue
        n = len(edits) + 1
        j = i + 1
        while j < len(lines) and not (_DIVIDER.match(lines[j]) or _SEARCH.match(lines[j])
                                      or _REPLACE.match(lines[j])):
            j += 1
        if j == len(lines) or not _DIVIDER.match(lines[j]):
            return ParsedEdits(edits, f"SEARCH block {n} has no '=======' divider line")
        k = j + 1
        while k < len(lines) and not (_REPLACE.match(lines[k]) or _SEARCH.match(lines[k])
                                      or _DIVIDER.match(lines[k])):
            k += 1
        if k == len(lines) or not _REPLACE.match(lines[k]):
            return ParsedEdits(edits, f"SEARCH block {n} is not closed by '>>>>>>> REPLACE' "
                                      "(reply cut off?)")
        edits.append(Edit(_side(lines[i + 1 : j]), _side(lines[j + 1 : k])))
        i = k + 1
    return ParsedEdits(edits, None)


def _side(lines: list[str]) -> str:
    if lines and _FENCE.match(lines[0]):
        lines = lines[1:]
    if lines and _FENCE.match(lines[-1]):
        lines = lines[:-1]
    return "".join(ln + "\n" for ln in lines)


def parse_search_replace(text: str) -> list[Edit]:
    """All well-formed SEARCH/REPLACE blocks of ``text``, in order (empty when none)."""
    return parse_edits(text).edits


# ------------------------------------------------------------------------- EVOLVE blocks
def evolve_blocks(code: str, markers: tuple[str, str] = MARKERS) -> list[tuple[int, int]]:
    """Character spans of the text between each START and END marker line.

    Unbalanced markers raise nothing: an unclosed START runs to the end of the program.
    ``markers``: another pair (CodeEvolve's ``PROMPT-BLOCK-START`` / ``-END``).
    """
    spans: list[tuple[int, int]] = []
    start: int | None = None
    pos = 0
    begin, finish = markers
    for line in code.splitlines(keepends=True):
        if begin in line and start is None:
            start = pos + len(line)
        elif finish in line and start is not None:
            spans.append((start, pos))
            start = None
        pos += len(line)
    if start is not None:
        spans.append((start, len(code)))
    return spans


def outside_evolve_blocks(code: str) -> str:
    """The program with every EVOLVE-BLOCK body removed (markers kept)."""
    out, last = [], 0
    for s, e in evolve_blocks(code):
        out.append(code[last:s])
        last = e
    out.append(code[last:])
    return "".join(out)


def evolve_block_text(code: str) -> str:
    """The concatenated EVOLVE-BLOCK bodies (the whole program when it has none); what
    ShinkaEvolve compares for novelty."""
    spans = evolve_blocks(code)
    return "".join(code[s:e] for s, e in spans) if spans else code


def preserves_outside(original: str, new: str) -> bool:
    """Whether ``new`` keeps the markers and the code outside the EVOLVE-BLOCKs unchanged
    (ShinkaEvolve's full-rewrite rule).  Trailing whitespace is ignored."""

    def norm(text: str) -> list[str]:
        return [ln.rstrip() for ln in outside_evolve_blocks(text).splitlines() if ln.strip()]

    if len(evolve_blocks(original)) != len(evolve_blocks(new)):
        return False
    return norm(original) == norm(new)


# ------------------------------------------------------------------------------ matching
def _lines(text: str) -> list[str]:
    return text.split("\n")[:-1] if text.endswith("\n") else text.split("\n")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _common_indent(lines: list[str]) -> int:
    return min((_indent(ln) for ln in lines if ln.strip()), default=0)


@dataclass(frozen=True, slots=True)
class _Match:
    start: int  # character span in the code
    end: int
    method: str
    shift: int = 0  # code indentation minus SEARCH indentation ("indent" only)


def _find(code: str, search: str, window: tuple[int, int]) -> _Match | None:
    """First match of ``search`` inside ``code[window]``, trying the levels in order."""
    lo, hi = window
    at = code.find(search, lo, hi)
    if at >= 0:
        return _Match(at, at + len(search), "exact")
    want = _lines(search)
    while want and not want[-1].strip():
        want = want[:-1]
    if not want:
        return None
    code_lines = code.splitlines(keepends=True)
    offsets = [0]
    for ln in code_lines:
        offsets.append(offsets[-1] + len(ln))
    first = next((i for i, o in enumerate(offsets) if o >= lo), len(code_lines))
    last = max(i for i, o in enumerate(offsets) if o <= hi)
    have = [ln.rstrip("\r\n") for ln in code_lines]
    levels = (
        ("rstrip", lambda s: s.rstrip()),
        ("tabs", lambda s: s.expandtabs(TAB).rstrip()),
    )
    for method, norm in levels:
        w = [norm(x) for x in want]
        for i in range(first, last - len(w) + 1):
            if all(norm(have[i + k]) == w[k] for k in range(len(w))):
                return _Match(offsets[i], offsets[i + len(w)], method)
    w = [x.expandtabs(TAB).rstrip() for x in want]
    w_ind = _common_indent(w)
    w = [x[w_ind:] if x.strip() else "" for x in w]
    for i in range(first, last - len(w) + 1):
        h = [x.expandtabs(TAB).rstrip() for x in have[i : i + len(w)]]
        h_ind = _common_indent(h)
        if h_ind != w_ind and [x[h_ind:] if x.strip() else "" for x in h] == w:
            return _Match(offsets[i], offsets[i + len(w)], "indent", h_ind - w_ind)
    return None


def _reindent(text: str, shift: int) -> str:
    out = []
    for ln in _lines(text.expandtabs(TAB)):
        if not ln.strip():
            out.append("")
        elif shift >= 0:
            out.append(" " * shift + ln)
        else:
            out.append(ln[min(-shift, _indent(ln)) :])
    return "".join(x + "\n" for x in out)


def _nearest(code: str, search: str) -> str:
    """A hint for an unmatched SEARCH: the program line closest to its first line."""
    first = next((ln.strip() for ln in search.splitlines() if ln.strip()), "")
    cands = [ln.strip() for ln in code.splitlines() if ln.strip()]
    close = difflib.get_close_matches(first, cands, n=1, cutoff=0.6)
    shown = first[:80]
    if close:
        return f"{shown!r} (closest program line: {close[0][:80]!r})"
    return f"{shown!r}"


def apply_search_replace(
    code: str, text: str, *, require_in_evolve_block: bool = False,
    markers: tuple[str, str] = MARKERS,
) -> DiffResult:
    """Apply every SEARCH/REPLACE block of ``text`` to ``code``; see the module docstring.

    All-or-nothing: on the first block that cannot be applied nothing is applied and
    ``error`` names the block and the reason.
    """
    crlf = "\r\n" in code
    code = code.replace("\r\n", "\n")
    edits, refused = read_edits(text)
    if refused is not None:
        return refused
    confine = require_in_evolve_block
    begin, finish = markers
    if confine and not evolve_blocks(code, markers):
        return DiffResult(None, 0, f"the text has no {begin} / {finish} region to edit")
    original = code
    methods: list[str] = []
    for n, edit in enumerate(edits, 1):
        if confine and any(m in edit.search or m in edit.replace for m in markers):
            return DiffResult(None, 0, f"SEARCH block {n} touches a {begin} / {finish} marker "
                                       "line; edit only the text between the markers")
        if not edit.search.strip():
            spans = evolve_blocks(code, markers)
            if not spans:
                return DiffResult(None, 0, f"SEARCH block {n} is empty and there is no {begin} "
                                           "region to insert into")
            end = spans[-1][1]
            ins = edit.replace if edit.replace.endswith("\n") else edit.replace + "\n"
            if end > 0 and code[end - 1] != "\n":
                ins = "\n" + ins
            code = code[:end] + ins + code[end:]
            methods.append("insert")
            continue
        match = None
        for window in evolve_blocks(code, markers) if confine else [(0, len(code))]:
            match = _find(code, edit.search, window)
            if match is not None:
                break
        if match is None:
            if confine and _find(code, edit.search, (0, len(code))) is not None:
                return DiffResult(None, 0, f"SEARCH block {n} matches only text outside the "
                                           f"{begin} / {finish} regions, which must not "
                                           "change")
            return DiffResult(None, 0, f"SEARCH block {n} not found in the program: "
                                       f"{_nearest(code, edit.search)}")
        replacement = edit.replace
        if match.method == "indent":
            replacement = _reindent(replacement, match.shift)
        if code[match.end - 1 : match.end] == "\n" and replacement and not replacement.endswith("\n"):
            replacement += "\n"
        code = code[: match.start] + replacement + code[match.end :]
        methods.append(match.method)
    return edited(original, code, methods, crlf=crlf, confine=confine, markers=markers)


def read_edits(text: str) -> tuple[list[Edit], DiffResult | None]:
    """The reply's SEARCH/REPLACE blocks, or the refusal when one is malformed or there
    is none (shared by the fuzzy rule here and CodeEvolve's exact one)."""
    parsed = parse_edits(text)
    if parsed.error:
        return [], DiffResult(None, 0, parsed.error)
    if not parsed.edits:
        return [], DiffResult(None, 0, "no SEARCH/REPLACE block in the reply (expected "
                                       "'<<<<<<< SEARCH' / '=======' / '>>>>>>> REPLACE')")
    return parsed.edits, None


def edited(original: str, code: str, methods: list[str], *, crlf: bool, confine: bool,
           markers: tuple[str, str] = MARKERS) -> DiffResult:
    """The result of edits that all applied: refused when they change nothing or (when
    confined to the marked regions) change how many regions there are; CRLF restored."""
    if code == original:
        return DiffResult(None, 0, "the SEARCH/REPLACE blocks leave the program unchanged")
    if confine and len(evolve_blocks(code, markers)) != len(evolve_blocks(original, markers)):
        return DiffResult(None, 0, f"the edits changed the number of {markers[0]} regions")
    if crlf:
        code = code.replace("\n", "\r\n")
    return DiffResult(code, len(methods), None, tuple(methods))


def splice_evolve_blocks(parent: str, new: str) -> tuple[str | None, str | None]:
    """A full rewrite confined to the parent's EVOLVE blocks (ShinkaEvolve's rule).

    If ``new`` has as many EVOLVE blocks as ``parent``, each of its bodies replaces the
    parent's; if it has none and the parent has exactly one, the whole of ``new`` minus
    the parent's unchanged prefix/suffix lines becomes that body; a parent without
    blocks takes ``new`` whole.  Returns ``(code, None)`` or ``(None, reason)``.
    """
    p_spans, n_spans = evolve_blocks(parent), evolve_blocks(new)
    if not p_spans:
        return new, None
    if n_spans:
        if len(n_spans) != len(p_spans):
            return None, (f"the rewrite has {len(n_spans)} EVOLVE-BLOCK region(s), the "
                          f"program has {len(p_spans)}; keep the markers as they are")
        out, last = [], 0
        for (ps, pe), (ns, ne) in zip(p_spans, n_spans, strict=True):
            out += [parent[last:ps], new[ns:ne]]
            last = pe
        return "".join(out) + parent[last:], None
    if len(p_spans) > 1:
        return None, "the rewrite dropped the EVOLVE-BLOCK markers of a program with several"
    s, e = p_spans[0]
    prefix, suffix = parent[:s].splitlines(), parent[e:].splitlines()
    body = new.splitlines()
    marker_free = [ln for ln in prefix if START_MARKER not in ln]
    while marker_free and body and body[0].rstrip() == marker_free[0].rstrip():
        body, marker_free = body[1:], marker_free[1:]
    tail = [ln for ln in suffix if END_MARKER not in ln]
    while tail and body and body[-1].rstrip() == tail[-1].rstrip():
        body, tail = body[:-1], tail[:-1]
    text = "\n".join(body).strip("\n")
    if not text:
        return None, "the rewrite has no code for the EVOLVE-BLOCK"
    return parent[:s] + text + "\n" + parent[e:], None
