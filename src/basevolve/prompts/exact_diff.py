"""CodeEvolve's SEARCH/REPLACE rule: exact matches only (issue 23, item 4).

The shared applier (:mod:`basevolve.prompts.diff`) tries relaxed levels after an exact
match (trailing whitespace, tabs, re-indentation: ShinkaEvolve's indentation-adjusted
match).  CodeEvolve has none of them (spec section 3.5, "Edit: strict"): every SEARCH /
REPLACE pair is stripped of surrounding whitespace, and each stripped SEARCH must be a
substring of an EVOLVE block of the parent (the first block that contains it), else the
whole edit is rejected and the call yields no program; then each block's edits are
applied in reply order, each to the first occurrence in the block as the edits before it
left it (one whose text an earlier edit already replaced changes nothing, as in
CodeEvolve).  So with basevolve's CodeEvolve an edit is accepted only when the original
would accept it.

What stays basevolve's, as for every diff protocol: the blocks are read by
:func:`~basevolve.prompts.diff.parse_edits` (fences and prose around them ignored), the
edits are all-or-nothing, neither side may touch a marker line, an empty SEARCH is
refused (CodeEvolve would insert the REPLACE text at the very start of the first block),
and an edit set that leaves the text unchanged or changes the number of EVOLVE regions
is an error rather than a silent copy of the parent.  CRLF text is matched as LF and
written back with CRLF.  The regions are the lines between the marker lines
(:func:`~basevolve.prompts.diff.evolve_blocks`).
"""

from __future__ import annotations

from basevolve.prompts.diff import MARKERS, DiffResult, edited, evolve_blocks, read_edits


def apply_exact_search_replace(code: str, text: str, *, markers: tuple[str, str] = MARKERS,
                               confine: bool = True) -> DiffResult:
    """Apply the SEARCH/REPLACE blocks of ``text`` inside ``code``'s marked regions by
    CodeEvolve's exact rule (module docstring); ``methods`` are all ``"exact"``.

    ``confine=False``: the whole text is the one region (a text artifact, issue 15, has
    no markers)."""
    crlf = "\r\n" in code
    code = code.replace("\r\n", "\n")
    edits, refused = read_edits(text)
    if refused is not None:
        return refused
    begin, finish = markers

    def regions(text: str) -> list[tuple[int, int]]:
        return evolve_blocks(text, markers) if confine else [(0, len(text))]

    if not regions(code):
        return DiffResult(None, 0, f"the text has no {begin} / {finish} region to edit")
    original, spans = code, regions(code)
    assigned: list[tuple[int, str, str]] = []  # (region, search, replace) in reply order
    for n, edit in enumerate(edits, 1):
        search, replace = edit.search.strip(), edit.replace.strip()
        if confine and any(m in search or m in replace for m in markers):
            return DiffResult(None, 0, f"SEARCH block {n} touches a {begin} / {finish} marker "
                                       "line; edit only the text between the markers")
        if not search:
            return DiffResult(None, 0, f"SEARCH block {n} is empty; quote the exact lines to "
                                       "replace")
        region = next((k for k, (s, e) in enumerate(spans) if search in code[s:e]), None)
        if region is None:
            where = ("matches only text outside the regions, which must not change"
                     if search in code else "not found in the program (it must match exactly)")
            return DiffResult(None, 0, f"SEARCH block {n} {where}: {_first_line(search)!r}")
        assigned.append((region, search, replace))
    parts, last = [], 0
    for k, (s, e) in enumerate(spans):  # each region's edits in order, first occurrence
        body = code[s:e]
        for region, search, replace in assigned:
            if region == k:
                body = body.replace(search, replace, 1)
        parts += [code[last:s], body]
        last = e
    code = "".join(parts) + code[last:]
    return edited(original, code, ["exact"] * len(edits), crlf=crlf, confine=confine,
                  markers=markers)


def _first_line(text: str) -> str:
    return text.splitlines()[0][:80] if text else ""


__all__ = ["apply_exact_search_replace"]
