"""The language of an OpenEvolve task directory's program (issue 31, item 2).

OpenEvolve's command line is given the initial program's path; its config names the
``language`` and the ``file_suffix`` the evolved file keeps (``.rs``, ``.r``, ``.cpp``;
default ``.py``).  A directory gives neither path, so :func:`initial_file` finds the
initial program as ``initial_program<file_suffix>`` (``file_suffix`` peeked from the
config), else ``initial_program.py``, else the one ``initial_program.*`` there is.  The
language (:mod:`basevolve.languages`) comes from ``language``, else from the suffix.

The program is evolved as text in its own language: prompts fence it as that language
(```` ```rust ````), the reply parser takes blocks tagged so (no Python syntax check), and
the directory's evaluator (Python, as in OpenEvolve) compiles and runs the candidate,
written as ``program<file_suffix>``, inside the sandbox with the host's toolchains
visible read-only (:mod:`basevolve.sandbox.passthrough`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from basevolve.languages import Language, resolve
from basevolve.outside_parse import RefusedText, load_yaml

STEM = "initial_program"
DEFAULT_SUFFIX = ".py"
CONFIG_NAMES = ("config.yaml", "config.yml")
#: What a ``file_suffix`` may be: a dot and up to 16 letters, digits, ``_+-`` (a bad one
#: is refused with one line when the config is read in full).
SUFFIX = re.compile(r"\.[A-Za-z0-9_+-]{1,16}")


def peek_suffix(path: Path, config: Path | None = None) -> str | None:
    """``file_suffix`` of the task's config (``config``, else the directory's
    config.yaml / config.yml), if it says one.  Read with the bounded parser (issue 32);
    errors are left for the full read of the config to report."""
    for candidate in ([config] if config is not None else [path / n for n in CONFIG_NAMES]):
        try:
            data = load_yaml(candidate.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, RefusedText):
            continue
        if isinstance(data, dict) and isinstance(data.get("file_suffix"), str):
            return str(data["file_suffix"])
    return None


def initial_file(path: Path, config: Path | None = None) -> str:
    """The initial program's file name in directory ``path`` (see the module docstring)."""
    suffix = peek_suffix(path, config)
    if suffix and SUFFIX.fullmatch(suffix):  # never a path: '/../x' stays in the folder
        return STEM + suffix
    if (path / (STEM + DEFAULT_SUFFIX)).exists():
        return STEM + DEFAULT_SUFFIX
    found = sorted(p.name for p in path.glob(f"{STEM}.*") if p.is_file())
    return found[0] if len(found) == 1 else STEM + DEFAULT_SUFFIX


def program_language(config: dict[str, Any], initial: str) -> tuple[Language, str]:
    """(the language, the file suffix) of a directory whose initial program is ``initial``."""
    suffix = config.get("file_suffix")
    if not isinstance(suffix, str) or not suffix:
        suffix = initial[len(STEM):] if initial.startswith(STEM) else DEFAULT_SUFFIX
    language = config.get("language")
    return resolve(language if isinstance(language, str) else None, suffix), suffix


def system_message(language: Language) -> str:
    """The default system message for a program in ``language`` that is not Python."""
    return (f"You are an expert software engineer. Improve the {language.title} program so "
            "that its evaluator scores it higher. Keep the functions the evaluator calls, "
            "with their names and signatures, and return the complete program in one "
            f"```{language.name} code block.")


__all__ = ["initial_file", "peek_suffix", "program_language", "system_message"]
