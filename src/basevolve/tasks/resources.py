"""Package-data text files of the built-in tasks (initial programs, system messages).

Kept as ``.txt`` files (not importable modules) so an initial program is exactly the
text an LLM sees and is never imported by basevolve itself; loaded through
:mod:`importlib.resources` so they work from a wheel as well as an editable install.
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files

from basevolve.errors import TaskError


@cache
def read_text(relative: str) -> str:
    """Text of ``basevolve/tasks/<relative>`` (e.g. ``"prompts/circle_packing.txt"``)."""
    resource = files("basevolve.tasks").joinpath(relative)
    try:
        return resource.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TaskError(
            f"package data file basevolve/tasks/{relative} is missing; reinstall basevolve"
        ) from None


def initial_program(task_name: str) -> str:
    return read_text(f"programs/{task_name}.py.txt")


def system_message(task_name: str) -> str:
    # The appendix boxes end without a trailing newline; strip the file's final one.
    return read_text(f"prompts/{task_name}.txt").rstrip("\n")
