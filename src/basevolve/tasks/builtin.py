"""Shared base of the built-in tasks: package-data prompts and a named picture.

The three geometric tasks of the paper differ only in their constants, their scorer and
their drawing.  Their initial program and system message are package-data files named
after the task (:mod:`basevolve.tasks.resources`), and their picture is a function of
:mod:`basevolve.viz.geometry`.  :class:`BuiltinTask` reads both by name so each task
module states only what differs (``name``, ``entry``, ``description``, ``drawing`` and
``score_value``).

``drawing`` is the *name* of the function, not the function: the viz module imports
matplotlib, which scoring and the sandbox must not pay for, so it is imported only when
a picture is actually drawn.
"""

from __future__ import annotations

from importlib import import_module
from pathlib import Path
from typing import Any, ClassVar

from basevolve.tasks.base import Task
from basevolve.tasks.resources import initial_program, system_message

_DRAWINGS_MODULE = "basevolve.viz.geometry"


class BuiltinTask(Task):
    """A task whose prompts are package data and whose picture lives in viz.geometry."""

    drawing: ClassVar[str]  # name of a function in basevolve.viz.geometry

    @property
    def initial_program(self) -> str:
        return initial_program(self.name)

    @property
    def system_message(self) -> str:
        return system_message(self.name)

    def draw(self, value: Any, path: Path) -> None:
        draw = getattr(import_module(_DRAWINGS_MODULE), self.drawing)
        draw(value, path, score=self.score_value(value))
