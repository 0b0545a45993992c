"""The programs ``basevolve evaluate`` scores, read from the files it is given.

A file is read as text (undecodable bytes replaced, so the sandbox reports what the
program does with them); for a task whose program is a folder of several files
(``language = "mixed"``, issue 31) a folder is read whole and packed into the one text
the task evolves (:mod:`basevolve.program_files`: links, binary files and bad names are
refused).  A missing or unreadable path is one ConfigError line (exit 2).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from basevolve.errors import ConfigError
from basevolve.program_files import LANGUAGE, ProgramFilesError, pack, read_folder


def read_programs(task: Any, names: Sequence[str]) -> list[tuple[str, str]]:
    """``(name, source)`` of each program path in ``names``, in order."""
    sources: list[tuple[str, str]] = []
    for name in names:
        path = Path(name)
        if path.is_dir() and getattr(task, "language", "") == LANGUAGE:
            try:
                sources.append((name, pack(read_folder(path))))
            except ProgramFilesError as exc:
                raise ConfigError(f"program folder {name!r}: {exc}") from None
            continue
        if not path.is_file():
            raise ConfigError(f"program file {name!r} does not exist (or is not a file)")
        try:
            sources.append((name, path.read_text(encoding="utf-8", errors="replace")))
        except OSError as exc:
            raise ConfigError(f"cannot read program file {name!r}: {exc.strerror}") from None
    return sources


__all__ = ["read_programs"]
