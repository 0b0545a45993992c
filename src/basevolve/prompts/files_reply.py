"""Replies that change a program of several files (issue 31, item 3).

A program of several files is one text in the encoding of :mod:`basevolve.program_files`
(``# === FILE: path ===`` header lines).  The prompt shows that text, so the LLM sees
every file with its path; a reply names each file it changes with the same header line:

* **full rewrite** (``format`` ``full``, ShinkaEvolve's ``<CODE>``): after a file's header
  line its complete new content, in a fenced block (or, when the whole reply is one
  fenced block of header-separated files, up to the next header); files the reply does
  not name stay as the parent has them; a reply may add a file.  A section that holds
  SEARCH/REPLACE blocks edits its file instead (models answer with edits unasked);
* **SEARCH/REPLACE** (``format`` ``diff``, ShinkaEvolve's ``<DIFF>``): after a file's
  header line, SEARCH/REPLACE blocks applied to that file by the one strict applier
  (:func:`~basevolve.prompts.diff.apply_search_replace`), confined to the file's
  EVOLVE-BLOCK regions when the protocol confines and the file has markers.  A header
  followed by a fenced block and no SEARCH block replaces that file whole.  Edits before
  any header apply to the program's only file, and are refused when it has several.

All-or-nothing, as for one file: a name :func:`~basevolve.program_files.path_problem`
refuses (``../x``, ``/etc/passwd``, a control character), an edit that does not apply,
a Python file (``.py``) that does not parse, or a result over the file caps gives
``code=None`` and the reason (a child with score 0); nothing is written anywhere here.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from basevolve.program_files import ProgramFilesError, pack, path_problem, unpack
from basevolve.prompts.diff import MARKERS, apply_search_replace, evolve_blocks, parse_edits
from basevolve.prompts.formats import section
from basevolve.prompts.parse import ParsedProgram, strip_think

#: Added to a program of several files' system message: how the files are shown and how
#: a reply names the files it changes.
FORMAT_NOTE = (
    "The program consists of several files. Each file is shown after a line "
    "'# === FILE: path ===' that gives its path. To change files, write for each file you "
    "change its line '# === FILE: path ===' followed by the file's complete new content in "
    "a fenced code block (or, when asked for SEARCH/REPLACE edits, that line followed by "
    "the edits for that file). Files you do not name stay as they are; paths are relative "
    "to the program folder.")
_REPLY_HEADER = re.compile(
    r"^[ \t]*(?:#{1,6}[ \t]*)?(?:\*\*)?=== FILE:[ \t]*`?(?P<path>[^`\n]*?)`?[ \t]*==="
    r"(?P<noeol>[ \t]*\(no newline at end\))?(?:\*\*)?[ \t]*$")
_FENCE_OPEN = re.compile(r"^[ \t]{0,3}(?P<fence>`{3,}|~{3,})[^`\n]*$")


@dataclass(frozen=True, slots=True)
class Section:
    """One file named in a reply: its path, the text after its header, whether the header
    stood inside a fenced block (one block of header-separated files), and the flag."""

    path: str
    text: str
    no_eol: bool
    inside: bool = False


def _closer(line: str) -> re.Pattern[str] | None:
    m = _FENCE_OPEN.match(line)
    if m is None:
        return None
    fence = m.group("fence")
    return re.compile(rf"^[ \t]{{0,3}}{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")


def sections(reply: str) -> tuple[str, list[Section]]:
    """The text before the first header line, and every header's section in order."""
    lines = reply.replace("\r\n", "\n").split("\n")
    before: list[str] = []
    found: list[tuple[str, bool, bool, list[str]]] = []
    close: re.Pattern[str] | None = None  # the open fence's closing line, if one is open
    for line in lines:
        m = _REPLY_HEADER.match(line)
        if m is not None:
            found.append((m.group("path").strip(), m.group("noeol") is not None,
                          close is not None, []))
            continue
        if close is not None and close.match(line):
            close = None
        elif close is None:
            close = _closer(line)
        (found[-1][3] if found else before).append(line)
    return "\n".join(before), [Section(p, "\n".join(body), e, i) for p, e, i, body in found]


def file_content(section: Section) -> str:
    """The new content of a file from its section (module docstring, full rewrite): the
    first fenced block after its header, or -- a header inside one fenced block of
    header-separated files -- its lines up to the next header or that block's end."""
    lines = section.text.split("\n")
    body = lines
    if section.inside:
        body = next((lines[:j] for j, ln in enumerate(lines) if _FENCE_OPEN.match(ln)), lines)
    else:
        for i, line in enumerate(lines):
            close = _closer(line)
            if close is not None:
                end = next((j for j in range(i + 1, len(lines)) if close.match(lines[j])),
                           len(lines))
                body = lines[i + 1:end]
                break
    while body and not body[-1].strip():
        body = body[:-1]
    while body and not body[0].strip() and not section.inside:
        body = body[1:]
    text = "\n".join(body)
    return text if section.no_eol or not text else text + "\n"


def _checked(files: dict[str, str], method: str) -> ParsedProgram:
    for path, text in files.items():
        if path.endswith(".py"):
            try:
                ast.parse(text)
            except SyntaxError as exc:
                return ParsedProgram(None, f"{path}: SyntaxError line {exc.lineno}: {exc.msg}",
                                     "none")
            except (ValueError, RecursionError, MemoryError) as exc:
                return ParsedProgram(None, f"{path}: {type(exc).__name__}: {exc}", "none")
    try:
        return ParsedProgram(pack(files), None, method)
    except ProgramFilesError as exc:
        return ParsedProgram(None, f"the changed program is refused: {exc}", "none")


def _parent(parent_code: str) -> dict[str, str] | ParsedProgram:
    try:
        return unpack(parent_code)
    except ProgramFilesError as exc:
        return ParsedProgram(None, f"the parent is not a program of several files: {exc}",
                             "none")


def _named(found: list[Section]) -> ParsedProgram | None:
    if not found:
        return ParsedProgram(None, "the reply names no file: put '# === FILE: path ===' on "
                                   "its own line before each file you change", "none")
    for s in found:
        why = path_problem(s.path)
        if why is not None:
            return ParsedProgram(None, f"the reply names a file the program may not have: "
                                       f"{why}", "none")
    return None


def _apply(files: dict[str, str], found: list[Section], confine: bool, kind: str
           ) -> ParsedProgram:
    """Each named file replaced whole, or edited by its SEARCH/REPLACE blocks."""
    refused = _named(found)
    if refused is not None:
        return refused
    changed = dict(files)
    methods: list[str] = []
    for s in found:
        parsed = parse_edits(s.text)
        if not parsed.edits and parsed.error is None:
            changed[s.path] = file_content(s)  # a file given whole
            methods.append(s.path)
            continue
        if s.path not in changed:
            return ParsedProgram(None, f"diff not applied: the program has no file {s.path!r} "
                                       "(a new file is given whole, in a fenced block)", "none")
        code = changed[s.path]
        res = apply_search_replace(code, s.text, require_in_evolve_block=confine and bool(
            evolve_blocks(code, MARKERS)))
        if res.code is None:
            return ParsedProgram(None, f"diff not applied to {s.path}: {res.error}", "none")
        changed[s.path] = res.code
        methods.append(f"{s.path}=" + ",".join(res.methods))
    return _checked(changed, f"{kind}:" + ";".join(methods))


def parse_files_rewrite(parent_code: str, reply: str) -> ParsedProgram:
    """The parent with each file the reply names replaced by its new content (a section
    of SEARCH/REPLACE blocks edits its file instead)."""
    files = _parent(parent_code)
    if isinstance(files, ParsedProgram):
        return files
    _, found = sections(strip_think(reply or ""))
    return _apply(files, found, False, "files")


def parse_files_diff(parent_code: str, reply: str, *, confine: bool = True) -> ParsedProgram:
    """The parent with each named file's SEARCH/REPLACE edits applied (all or nothing)."""
    files = _parent(parent_code)
    if isinstance(files, ParsedProgram):
        return files
    before, found = sections(strip_think(reply or ""))
    if parse_edits(before).edits:
        if len(files) != 1:
            return ParsedProgram(None, "SEARCH/REPLACE blocks before any '# === FILE: path ===' "
                                       "line; name the file each edit belongs to", "none")
        found = [Section(next(iter(files)), before, False), *found]
    return _apply(files, found, confine, "files-diff")


def parse_files_reply(parent_code: str, reply: str, fmt: str = "full", *,
                      confine: bool = True) -> ParsedProgram:
    """Dispatch on the protocol's reply format (``full``, ``diff``, ``tagged_code``,
    ``tagged_diff``; the tagged ones read the ``<CODE>`` / ``<DIFF>`` section)."""
    if fmt in ("tagged_code", "tagged_diff"):
        body = "CODE" if fmt == "tagged_code" else "DIFF"
        content = section(strip_think(reply or ""), body)
        if content is None:
            return ParsedProgram(None, f"reply has no <{body}> section (expected <NAME>, "
                                       f"<DESCRIPTION> and <{body}>...</{body}>)", "none")
        reply, fmt = content, ("full" if body == "CODE" else "diff")
    if fmt == "diff":
        return parse_files_diff(parent_code, reply, confine=confine)
    return parse_files_rewrite(parent_code, reply)


__all__ = ["FORMAT_NOTE", "Section", "file_content", "parse_files_diff", "parse_files_reply",
           "parse_files_rewrite", "sections"]
