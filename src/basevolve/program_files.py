"""Programs of several files as ONE text (issue 31, item 3).

OpenEvolve's ``language: "mixed"`` evolves a *folder* (``initial_program/`` of C++,
Python and JSON files).  basevolve keeps such a program as one string in a stable,
documented encoding, so the store, the budget, dedup, resume and every protocol keep
working on text unchanged; only the edges know the encoding: the prompt (the LLM sees
every file with its path), the reply parsers (:mod:`basevolve.prompts.files_reply`), the
sandbox harness (writes the folder), ``export`` (writes the files) and the dashboard
(per-file sections and diffs).

The encoding (version 1)::

    # === FILE: src/solver.cpp ===
    <the file's lines>
    # === FILE: params.json ===
    <the file's lines>

* every file starts with a header line ``# === FILE: <path> ===`` and runs to the next
  header line (or the end); files are in path order;
* a file whose last line has no newline gets the header suffix ``(no newline at end)``,
  so packing and unpacking give back the exact bytes;
* a file may not contain a line that reads as a header (it would split the file): such a
  folder is refused when packed.

Paths are checked everywhere a name enters (a folder read from disk, a stored program,
an LLM's reply): relative POSIX paths of at most :data:`MAX_DEPTH` parts, each of
letters, digits and ``. _ + - @``, none empty, ``.``/``..``, hidden (leading dot) or
starting with ``-``; at most :data:`MAX_PATH_CHARS` characters; no two names where one
is a folder of the other; at most :data:`MAX_FILES` files and :data:`MAX_TOTAL_CHARS`
characters together.  Why so strict: a name comes from an LLM and becomes a path the
sandbox writes and ``export`` writes under the user's folder; a name that cannot be
checked cheaply (``../../etc/passwd``, ``/etc/passwd``, a control character, a shell
option) is refused with the reason, and nothing is written.

This module is at the bottom of the package (standard library only): the prompts, the
tasks, the store and the dashboard all read the encoding.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

LANGUAGE = "mixed"  # OpenEvolve's name for a program of several files
HEADER_PREFIX = "# === FILE: "
HEADER_SUFFIX = " ==="
NO_EOL = " (no newline at end)"
MAX_FILES = 64
MAX_TOTAL_CHARS = 2_000_000
MAX_PATH_CHARS = 200
MAX_DEPTH = 8
SKIPPED_PARTS = frozenset({"__pycache__"})
_HEADER = re.compile(r"^# === FILE: (?P<path>.*?) ===(?P<noeol> \(no newline at end\))?$")
_PART = re.compile(r"^[A-Za-z0-9_+@][A-Za-z0-9._+@-]*$")


class ProgramFilesError(ValueError):
    """A folder, a stored text or a reply that is not a valid program of several files;
    the message is one line saying which name or limit and why."""


def path_problem(path: str) -> str | None:
    """Why ``path`` may not name a file of a program (``None`` when it may)."""
    shown = ascii(path)[:MAX_PATH_CHARS + 20]
    if not path:
        return "an empty file name"
    if any(ord(c) < 32 or ord(c) == 127 or 0x80 <= ord(c) < 0xA0 for c in path):
        return f"the file name {shown} holds a control character"
    if len(path) > MAX_PATH_CHARS:
        return f"the file name {shown} is longer than {MAX_PATH_CHARS} characters"
    if path.startswith("/") or "\\" in path or re.match(r"^[A-Za-z]:", path):
        return f"the file name {shown} is absolute; give a path relative to the program folder"
    parts = path.split("/")
    if any(p in ("..", ".") for p in parts):
        return f"the file name {shown} steps out of the program folder ('..' or '.')"
    if len(parts) > MAX_DEPTH:
        return f"the file name {shown} is more than {MAX_DEPTH} folders deep"
    for part in parts:
        if not part:
            return f"the file name {shown} has an empty part ('//' or a trailing '/')"
        if part.startswith("."):
            return f"the file name {shown} names a hidden file or folder"
        if not _PART.match(part):
            return (f"the file name {shown} may hold only letters, digits and . _ + - @ "
                    "(and may not start with '-')")
    return None


def check_files(files: Mapping[str, str]) -> None:
    """Raise :class:`ProgramFilesError` for a bad name, too many files or too much text."""
    if not files:
        raise ProgramFilesError("a program of several files needs at least one file")
    if len(files) > MAX_FILES:
        raise ProgramFilesError(f"{len(files)} files; a program may have at most {MAX_FILES}")
    total = 0
    for path, text in files.items():
        why = path_problem(path)
        if why is not None:
            raise ProgramFilesError(why)
        if not isinstance(text, str):
            raise ProgramFilesError(f"the file {path!r} is not text")
        total += len(text)
    if total > MAX_TOTAL_CHARS:
        raise ProgramFilesError(f"the files hold {total:,} characters together; the cap is "
                                f"{MAX_TOTAL_CHARS:,}")
    names = set(files)
    for path in names:
        parts = path.split("/")
        for i in range(1, len(parts)):
            if "/".join(parts[:i]) in names:
                raise ProgramFilesError(f"{'/'.join(parts[:i])!r} is both a file and the "
                                        f"folder of {path!r}")


def header(path: str, *, no_eol: bool = False) -> str:
    return f"{HEADER_PREFIX}{path}{HEADER_SUFFIX}{NO_EOL if no_eol else ''}"


def pack(files: Mapping[str, str]) -> str:
    """The one text of ``files`` ({relative path: content}), in path order (checked)."""
    check_files(files)
    out: list[str] = []
    for path in sorted(files):
        text = files[path]
        bad = next((ln for ln in text.splitlines() if _HEADER.match(ln)), None)
        if bad is not None:
            raise ProgramFilesError(f"the file {path!r} holds a line that reads as a file "
                                    f"header ({bad[:80]!r}); rename that line")
        no_eol = bool(text) and not text.endswith("\n")
        out.append(header(path, no_eol=no_eol) + "\n" + text + ("\n" if no_eol else ""))
    return "".join(out)


def is_packed(text: str) -> bool:
    """Whether ``text`` starts as a program of several files (its first line a header)."""
    first = text.split("\n", 1)[0]
    return _HEADER.match(first) is not None


def unpack(text: str) -> dict[str, str]:
    """{path: content} of a packed text; :class:`ProgramFilesError` when it is not one."""
    if not is_packed(text):
        raise ProgramFilesError(f"not a program of several files: the first line must be "
                                f"{header('PATH')!r}")
    files: dict[str, str] = {}
    current: str | None = None
    no_eol = False
    lines: list[str] = []

    def close() -> None:
        if current is None:
            return
        if current in files:
            raise ProgramFilesError(f"the file {current!r} appears twice")
        body = "".join(lines)
        files[current] = body[:-1] if no_eol and body.endswith("\n") else body

    for line in text.splitlines(keepends=True):
        m = _HEADER.match(line.rstrip("\r\n"))
        if m is None:
            lines.append(line)
            continue
        close()
        current, no_eol, lines = m.group("path"), m.group("noeol") is not None, []
        if len(files) >= MAX_FILES:
            raise ProgramFilesError(f"more than {MAX_FILES} files; a program may have at "
                                    f"most {MAX_FILES}")
    close()
    check_files(files)
    return files


def read_folder(folder: Path) -> dict[str, str]:
    """Every file of ``folder`` as text (hidden files and ``__pycache__`` left out).

    Refused with the reason: a symbolic link, a file that is not UTF-8 text, a name that
    :func:`path_problem` refuses, more than :data:`MAX_FILES` files or
    :data:`MAX_TOTAL_CHARS` characters.
    """
    if folder.is_symlink() or not folder.is_dir():
        raise ProgramFilesError(f"{str(folder)!r} is not a folder (or is a symbolic link)")
    files: dict[str, str] = {}
    total = 0
    for entry in sorted(folder.rglob("*")):
        rel = entry.relative_to(folder).as_posix()
        if any(p.startswith(".") or p in SKIPPED_PARTS for p in rel.split("/")):
            continue
        if entry.is_symlink():
            raise ProgramFilesError(f"{rel!r} in the program folder is a symbolic link; copy "
                                    "the file in instead")
        if not entry.is_file():
            continue
        why = path_problem(rel)
        if why is not None:
            raise ProgramFilesError(why)
        if len(files) >= MAX_FILES:
            raise ProgramFilesError(f"the program folder holds more than {MAX_FILES} files")
        try:
            data = entry.read_bytes()
        except OSError as exc:
            raise ProgramFilesError(f"cannot read {rel!r}: {exc.strerror or exc}") from None
        total += len(data)
        if total > MAX_TOTAL_CHARS:
            raise ProgramFilesError(f"the program folder holds more than {MAX_TOTAL_CHARS:,} "
                                    "bytes; move data the program does not evolve out of it")
        try:
            files[rel] = data.decode("utf-8")
        except UnicodeDecodeError:
            raise ProgramFilesError(f"{rel!r} in the program folder is not UTF-8 text; a "
                                    "program's files are evolved as text") from None
    if not files:
        raise ProgramFilesError(f"the program folder {str(folder)!r} holds no file")
    return files


def write_folder(files: Mapping[str, str], root: Path) -> list[Path]:
    """Write ``files`` under the existing folder ``root`` (checked first; nothing is
    written when a name is bad).  Never follows a symbolic link met on the way and never
    leaves ``root``: every target is resolved and checked to lie inside it."""
    check_files(files)
    base = root.resolve(strict=True)
    written: list[Path] = []
    for path in sorted(files):
        target = base.joinpath(*path.split("/"))
        parent = target.parent
        parent.mkdir(parents=True, exist_ok=True)
        if parent.resolve() != parent or not parent.is_relative_to(base):
            raise ProgramFilesError(f"{path!r} would be written outside {str(base)!r}")
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(files[path])
        written.append(target)
    return written


def write_program_folder(text: str, folder: Path) -> Path:
    """Write the packed program ``text`` as the files of ``folder`` (made when missing;
    ``best_program/`` of a run's outputs, ``export``'s program folders); its path."""
    files = unpack(text)
    folder.mkdir(parents=True, exist_ok=True)
    write_folder(files, folder)
    return folder


__all__ = ["LANGUAGE", "MAX_FILES", "MAX_TOTAL_CHARS", "ProgramFilesError", "check_files",
           "header", "is_packed", "pack", "path_problem", "read_folder", "unpack",
           "write_folder", "write_program_folder"]
