"""Pictures of solutions (PNG, matplotlib Agg).

Tasks expose ``task.draw(value, path)``; the geometric drawings live in
:mod:`basevolve.viz.geometry`.  :func:`draw_solution` is the one call the CLI and the
run engine need.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # only annotated: viz sits below tasks (issue 33)
    from basevolve.tasks.base import Task


def draw_solution(task: Task, value: Any, path: str | Path) -> Path:
    """Write ``task``'s picture of ``value`` to ``path`` (a .png); returns the path.

    Raises :class:`~basevolve.errors.TaskError` when the value cannot be drawn and
    ``NotImplementedError`` when the task has no picture.
    """
    out = Path(path)
    task.draw(value, out)
    return out


__all__ = ["draw_solution"]
