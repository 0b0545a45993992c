"""Tasks: the three geometric problems of the paper plus user-defined ones.

Public API::

    from basevolve.tasks import TASKS, load_task
    task = load_task("circle_packing")        # or load_task("path/to/my_task.py")
    task.initial_program, task.entry, task.timeout_s, task.system_message
    evaluation = task.evaluate(exec_result)    # trusted scoring of sandbox output
    task.draw(value, "best.png")               # picture of a solution

Importing this package registers the built-ins in :data:`TASKS` (paper, Appendix
"Task Details"): ``circle_packing``, ``min_max_distance``, ``heilbronn_triangle``, and
the text task ``prompt_optimization`` (appendix, Table "LPO"; ``--task-param`` keys).
"""

from __future__ import annotations

from basevolve.tasks import (  # noqa: F401  (imported to register the built-ins)
    circle_packing,
    heilbronn_triangle,
    min_max_distance,
    prompt_optimization,
)
from basevolve.tasks.base import REFERENCE_TOL, STRICT_TOL, TASKS, ScoreResult, Task
from basevolve.tasks.text import TextTask
from basevolve.tasks.user_task import check_task, load_task, load_task_file


def get_task(name: str) -> Task:
    """Alias of :func:`load_task` (registered name or task file path)."""
    return load_task(name)


__all__ = [
    "REFERENCE_TOL",
    "STRICT_TOL",
    "TASKS",
    "ScoreResult",
    "Task",
    "TextTask",
    "check_task",
    "get_task",
    "load_task",
    "load_task_file",
]
