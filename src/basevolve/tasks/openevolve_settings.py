"""The ``evaluator:`` settings of an OpenEvolve task directory's config, checked.

Split from :mod:`basevolve.tasks.openevolve_dir` (issue 31): what one evaluation applies
-- ``evaluator.timeout`` (an over-long one clamped with a note, issue 31 item 5),
``cascade_evaluation``, ``cascade_thresholds``, ``evaluator_args`` -- and which stage
functions the evaluator defines (found by parsing it, never importing it here).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from basevolve.errors import TaskError
from basevolve.sandbox.config import MAX_TIMEOUT_S

CONFIG_FILE, EVALUATOR_FILE = "config.yaml", "evaluator.py"
STAGE_FUNCTIONS = ("evaluate", "evaluate_stage1", "evaluate_stage2", "evaluate_stage3")
# OpenEvolve's EvaluatorConfig defaults (openevolve/config.py), used when the config is
# silent.
DEFAULT_TIMEOUT_S = 300.0
DEFAULT_CASCADE = True
DEFAULT_THRESHOLDS = (0.5, 0.75, 0.9)


def fail(path: Path, problem: str) -> TaskError:
    """One line naming the task directory and the problem."""
    return TaskError(f"task directory {str(path)!r}: {problem}")


@dataclass(frozen=True, slots=True)
class EvaluatorSettings:
    """What of ``config.yaml``'s ``evaluator:`` section (and evaluator.py) a run applies."""

    timeout_s: float = DEFAULT_TIMEOUT_S  # per evaluate() / per stage, as OpenEvolve
    cascade_evaluation: bool = DEFAULT_CASCADE
    cascade_thresholds: tuple[float, ...] = DEFAULT_THRESHOLDS
    evaluator_args: dict[str, Any] = field(default_factory=dict)
    functions: tuple[str, ...] = ()  # of STAGE_FUNCTIONS, found in evaluator.py by ast
    notes: tuple[str, ...] = ()  # what was adjusted (an over-long timeout clamped)

    @property
    def cascade(self) -> bool:
        """True when evaluations go stage by stage (else one ``evaluate`` call)."""
        return self.cascade_evaluation and "evaluate_stage1" in self.functions

    @property
    def stages(self) -> tuple[str, ...]:
        """The functions one evaluation may call, in order."""
        if not self.cascade:
            return ("evaluate",)
        return tuple(f for f in STAGE_FUNCTIONS[1:] if f in self.functions)


def section(path: Path, config: dict[str, Any], key: str, cfg: str = CONFIG_FILE
             ) -> dict[str, Any]:
    value = config.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise fail(path, f"{cfg}: {key} must be a mapping, got {value!r}")
    return value


def number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def plain_data(value: Any, depth: int = 0) -> bool:
    """Plain data that a sandbox call can carry (for ``evaluator_args``)."""
    if depth > 20:
        return False
    if value is None or isinstance(value, bool | int | float | str):
        return True
    if isinstance(value, list):
        return all(plain_data(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and plain_data(v, depth + 1) for k, v in value.items())
    return False


def evaluator_settings(path: Path, config: dict[str, Any], functions: tuple[str, ...],
                       cfg: str = CONFIG_FILE, evaluator: str = EVALUATOR_FILE
                       ) -> EvaluatorSettings:
    """The checked ``evaluator:`` settings; one clear error for each bad value."""
    evaluator_section = section(path, config, "evaluator", cfg)
    timeout = evaluator_section.get("timeout", DEFAULT_TIMEOUT_S)
    if not number(timeout) or not 0 < timeout:
        raise fail(path, f"{cfg}: evaluator.timeout={timeout!r} must be a number of "
                    "seconds > 0")
    notes: tuple[str, ...] = ()
    if timeout > MAX_TIMEOUT_S / 8:  # issue 31, item 5: clamped with a warning, not refused
        notes = (f"{cfg}: evaluator.timeout={timeout:g} s is clamped to basevolve's cap of "
                 f"{MAX_TIMEOUT_S / 8:g} s per evaluate/stage call",)
        timeout = MAX_TIMEOUT_S / 8
    cascade = evaluator_section.get("cascade_evaluation", DEFAULT_CASCADE)
    if not isinstance(cascade, bool):
        raise fail(path, f"{cfg}: evaluator.cascade_evaluation={cascade!r} must be "
                    "true or false")
    thresholds = evaluator_section.get("cascade_thresholds", list(DEFAULT_THRESHOLDS))
    if not isinstance(thresholds, list) or not all(number(t) for t in thresholds):
        raise fail(path, f"{cfg}: evaluator.cascade_thresholds={thresholds!r} must "
                    "be a list of numbers, e.g. [0.5, 0.75]")
    args = evaluator_section.get("evaluator_args") or {}
    if not isinstance(args, dict) or not plain_data(args):
        raise fail(path, f"{cfg}: evaluator.evaluator_args must be a mapping of "
                    "plain values (numbers, strings, lists, mappings)")
    if "evaluate" not in functions:
        raise fail(path, f"{evaluator} defines no evaluate(program_path) function")
    if cascade and "evaluate_stage1" in functions and not thresholds:
        raise fail(path, f"{cfg}: evaluator.cascade_thresholds is empty, but the "
                    "cascade (evaluate_stage1) needs one threshold per stage after the first;"
                    " give e.g. [0.5] or set cascade_evaluation: false")
    return EvaluatorSettings(float(timeout), cascade, tuple(float(t) for t in thresholds),
                             dict(args), functions, notes)


__all__ = ["DEFAULT_TIMEOUT_S", "EvaluatorSettings", "evaluator_settings", "fail", "number",
           "plain_data", "section"]
