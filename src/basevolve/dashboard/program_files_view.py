"""The dashboard's view of a program of several files (issue 31, item 3).

A program of several files is stored as one text (:mod:`basevolve.program_files`); the
program panel shows it as one section per file and its diff against the parent **per
file**: each changed, added or removed file has its own unified diff headed by its path
(``--- a/PATH (program P)`` / ``+++ b/PATH (program C)``), unchanged files are named
once.  Text only: the page puts every string into the DOM as text, never as HTML.
"""

from __future__ import annotations

import difflib
from typing import Any

from basevolve.program_files import ProgramFilesError, is_packed, unpack


def files_of(code: str | None) -> dict[str, str] | None:
    """The files of a stored program of several files (``None``: one file, or not valid)."""
    if code is None or not is_packed(code):
        return None
    try:
        return unpack(code)
    except ProgramFilesError:
        return None  # shown as one text, as stored


def file_diffs(parent: dict[str, str], child: dict[str, str], parent_id: int, child_id: int
               ) -> list[dict[str, Any]]:
    """One entry per file of either program: ``path``, ``status`` (``changed``, ``added``,
    ``removed``, ``same``) and ``lines`` (its unified diff; empty when the same)."""
    out = []
    for path in sorted(set(parent) | set(child)):
        before, after = parent.get(path), child.get(path)
        status = ("added" if before is None else "removed" if after is None
                  else "same" if before == after else "changed")
        lines = [] if status == "same" else list(difflib.unified_diff(
            (before or "").splitlines(), (after or "").splitlines(),
            fromfile=f"a/{path} (program {parent_id})" if before is not None else "/dev/null",
            tofile=f"b/{path} (program {child_id})" if after is not None else "/dev/null",
            lineterm="", n=3))
        out.append({"path": path, "status": status, "lines": lines})
    return out


def diff_lines(diffs: list[dict[str, Any]]) -> list[str]:
    """The per-file diffs as one list of lines (the panel's diff box), unchanged files
    named in one line each."""
    lines: list[str] = []
    for d in diffs:
        lines += d["lines"] if d["lines"] else [f"=== {d['path']}: unchanged"]
    return lines


__all__ = ["diff_lines", "file_diffs", "files_of"]
