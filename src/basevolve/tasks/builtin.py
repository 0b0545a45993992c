"""Shared base of the built-in tasks: package-data prompts and the points a picture needs.

The three geometric tasks of the paper differ only in their constants, their scorer and
their drawing.  Their initial program and system message are package-data files named
after the task (:mod:`basevolve.tasks.resources`), and their picture is a function of
:mod:`basevolve.viz.geometry`.  :class:`BuiltinTask` reads the files by name so each task
module states only what differs (``name``, ``entry``, ``description``, ``draw`` and
``score_value``).

Each task's ``draw`` parses the value with its scorer's trusted parsing and hands plain
arrays to :mod:`basevolve.viz.geometry` (viz sits below tasks in the layers, issue 33).
The viz module imports matplotlib, which scoring and the sandbox must not pay for, so
the tasks import it only when a picture is actually drawn (a lazy import that points
down).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from basevolve.errors import TaskError
from basevolve.geometry import as_float_array
from basevolve.tasks.base import Task
from basevolve.tasks.resources import initial_program, system_message


class BuiltinTask(Task):
    """A task whose prompts are package data and whose picture lives in viz.geometry."""

    @property
    def initial_program(self) -> str:
        return initial_program(self.name)

    @property
    def system_message(self) -> str:
        return system_message(self.name)

    @staticmethod
    def points_to_draw(value: Any, shape: tuple[int, int]) -> np.ndarray:
        """The value as the scorer reads it, or TaskError saying why it cannot be drawn."""
        arr, err = as_float_array(value, shape, "points")
        if err or arr is None:
            raise TaskError(f"cannot draw: {err}")
        return arr
