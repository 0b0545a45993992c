"""Which engine evaluator scores a task: one registry keyed by ``Task.evaluation``.

docs/design.md, "one registry for named things": a task says *how* its programs are
scored (``evaluation``, one of :data:`basevolve.tasks.base.EVALUATION_KINDS`) and the engine builds
the matching evaluator from here, instead of branching on task types.  Every factory is
called as ``factory(task, pool, scorer_log=..., notify=...)`` and returns an object with
``async evaluate(code) -> Evaluation``, ``async execute(code) -> ExecResult``,
``async aclose()`` and ``task``.  Text tasks (issue 15) are scored by the answering
LLM, not the sandbox (:mod:`basevolve.engine.text_eval`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from basevolve.engine.evaluator import SandboxEvaluator
from basevolve.engine.function_eval import FunctionEvaluator
from basevolve.engine.openevolve_eval import OpenEvolveEvaluator
from basevolve.registry import Registry

EVALUATORS: Registry[Callable[..., Any]] = Registry("evaluation kind")
EVALUATORS.register("entry", SandboxEvaluator)  # entry() once, its value scored here
EVALUATORS.register("calls", FunctionEvaluator)  # a trusted evaluator calls the program
EVALUATORS.register("openevolve", OpenEvolveEvaluator)  # a task directory's evaluator, sandboxed


def evaluator_for(task: Any, pool: Any | None, **kwargs: Any) -> Any:
    """The engine evaluator of ``task`` (by its ``evaluation`` kind)."""
    return EVALUATORS.get(getattr(task, "evaluation", "entry"))(task, pool, **kwargs)


__all__ = ["EVALUATORS", "evaluator_for"]
