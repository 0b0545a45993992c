"""The trusted side of an OpenEvolve task directory: cascade, thresholds, fitness, timeouts.

The directory's ``evaluator.py`` runs in the sandbox beside the program
(:mod:`basevolve.tasks.openevolve_harness`); this module, in the basevolve process,
decides everything from the plain data that comes back, as OpenEvolve's ``Evaluator``
does (its ``_cascade_evaluate`` / ``_passes_threshold`` and ``get_fitness_score``; read
for behaviour, reimplemented here):

* **direct**: one ``evaluate(program_path)`` call, limited to ``evaluator.timeout``;
* **cascade** (``cascade_evaluation`` and ``evaluate_stage1`` defined): stage 1; when its
  metrics pass ``cascade_thresholds[0]`` and ``evaluate_stage2`` exists, stage 2, whose
  numeric metrics (but ``error``) are merged with stage 1's; likewise stage 3 behind
  ``cascade_thresholds[1]``.  Each stage has its own ``evaluator.timeout``.  A stage that
  fails after stage 1 keeps the earlier metrics and adds ``stageN_passed = 0``;
* **threshold test**: ``combined_score`` when it is a number, else the mean of the
  numeric metrics except ``error``;
* **fitness** (the run's score): OpenEvolve 0.4.0's rule,
  :func:`basevolve.tasks.openevolve_keys.fitness_score` -- ``combined_score`` when it is a
  number, else the mean of the numeric metrics but booleans, NaN and the
  ``database.feature_dimensions`` (default complexity, diversity) (issue 31, item 7).

Where basevolve differs, on purpose: the evaluation (direct, or stage 1) that raises,
times out or returns neither a dict nor an ``EvaluationResult`` scores 0, **invalid**,
with the reason (OpenEvolve scores such a program by its error metrics); a timeout is
noted in the artifacts, never as a ``timeout: True`` metric that would count as 1 in a
mean; a fitness that is not finite is invalid; ``max_retries`` is not applied (a failed
evaluation is final; evaluations are meant to be deterministic).

Stored: numeric, finite metrics in ``metrics``; every other metric (text, or not finite)
as the artifact ``metric.NAME``; the evaluator's artifacts as text (bytes decoded, or
described); ``basevolve.cascade`` says which stages ran and why it stopped.  Every
evaluation is recorded at trust level ``evaluator-in-sandbox``.
"""

from __future__ import annotations

import base64
import math
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from basevolve.errors import TaskError
from basevolve.records import CallResult, Evaluation, ExecStatus, Trust
from basevolve.tasks.function import MAX_ARTIFACT_CHARS
from basevolve.tasks.openevolve_keys import DEFAULT_FEATURES, fitness_score

SETUP_MIN_TIMEOUT_S = 60.0  # writing the files and importing evaluator.py (not the program)
SESSION_SLACK_S = 10.0  # the harness's own import and the call round trips
MAX_ENTRIES = 256  # metrics or artifacts kept per evaluation
TRACEBACK_CHARS = 4000


@lru_cache(maxsize=1)
def harness_source() -> str:
    """The source of :mod:`basevolve.tasks.openevolve_harness` (the sandboxed 'program')."""
    return Path(__file__).with_name("openevolve_harness.py").read_text(encoding="utf-8")


def session_timeout(stage_timeout_s: float, n_stages: int) -> float:
    """The whole limit of one evaluation's sandbox session (setup + every stage)."""
    return max(SETUP_MIN_TIMEOUT_S, stage_timeout_s) + n_stages * stage_timeout_s + SESSION_SLACK_S


# ------------------------------------------------------------------ OpenEvolve's rules
def is_number(value: Any) -> bool:
    """A metric OpenEvolve counts as numeric (``isinstance(v, (int, float))``)."""
    return isinstance(value, int | float)


def as_float(value: Any) -> float:
    try:
        return float(value)
    except OverflowError:  # an int beyond float range
        return math.inf if value > 0 else -math.inf


def fitness(metrics: dict[str, Any], feature_dimensions: tuple[str, ...] = DEFAULT_FEATURES
            ) -> float:
    """OpenEvolve's fitness: ``combined_score``, else the mean of the numeric metrics but
    booleans and feature dimensions (:func:`~basevolve.tasks.openevolve_keys.fitness_score`)."""
    return fitness_score(metrics, feature_dimensions)


def passes_threshold(metrics: dict[str, Any], threshold: float) -> bool:
    """``combined_score`` when numeric, else the mean of numeric metrics but ``error``."""
    if not metrics:
        return False
    if is_number(metrics.get("combined_score")):
        return as_float(metrics["combined_score"]) >= threshold
    values = [as_float(v) for k, v in metrics.items() if k != "error" and is_number(v)]
    return bool(values) and sum(values) / len(values) >= threshold


def merged(*parts: dict[str, Any]) -> dict[str, Any]:
    """Numeric metrics but ``error`` of each stage, as floats, later stages winning."""
    out: dict[str, Any] = {}
    for metrics in parts:
        out.update({k: as_float(v) for k, v in metrics.items() if is_number(v) and k != "error"})
    return out


# ------------------------------------------------------------------ one stage
@dataclass
class Stage:
    """What one stage call gave: metrics + artifacts, or a failure (``kind``)."""

    name: str
    kind: str  # "ok", "timeout" or "error"
    metrics: dict[str, Any] = field(default_factory=dict)
    artifacts: dict[str, str] = field(default_factory=dict)
    error: str = ""
    traceback: str = ""


def _answer(value: Any) -> tuple[dict[str, Any], dict[str, str]] | str:
    """The harness's answer checked as untrusted data: (metrics, artifacts) or why not."""
    if not isinstance(value, dict) or value.get("kind") not in ("dict", "result", "other"):
        return "its answer is not what the harness sends (the program may have tampered with it)"
    if value["kind"] == "other":
        return (f"returned a {str(value.get('type'))[:100]}, not a dict or EvaluationResult")
    metrics, artifacts = value.get("metrics"), value.get("artifacts")
    if not (isinstance(metrics, dict) and isinstance(artifacts, dict)
            and all(isinstance(v, int | float | str) for v in metrics.values())
            and all(isinstance(v, str) for v in artifacts.values())):
        return "its metrics or artifacts are not plain numbers and text"
    return (dict(list(metrics.items())[:MAX_ENTRIES]),
            {k: v[:MAX_ARTIFACT_CHARS] for k, v in list(artifacts.items())[:MAX_ENTRIES]})


def run_stage(session: Any, name: str, timeout_s: float, kwargs: dict[str, Any]) -> Stage:
    """Call ``evaluator.<name>`` in the sandbox and classify what came back."""
    r: CallResult = session.call("run_stage", name, kwargs, timeout_s=timeout_s)
    if r.status is ExecStatus.TIMEOUT:
        return Stage(name, "timeout", error=f"{name} exceeded evaluator.timeout "
                     f"({timeout_s:g} s): {r.error}")
    if not r.ok:
        return Stage(name, "error", error=f"{name} failed ({r.status.value}): {r.error}",
                     traceback=r.stderr[-TRACEBACK_CHARS:])
    parsed = _answer(r.value)
    if isinstance(parsed, str):
        return Stage(name, "error", error=f"{name} {parsed}")
    return Stage(name, "ok", parsed[0], parsed[1])


# ------------------------------------------------------------------ one evaluation
def setup_session(task: Any, session: Any, code: str) -> tuple[str, ...]:
    """Send the directory and the program, import evaluator.py; the functions it defines.

    A failure here is the evaluator's (the program has not run yet): a TaskError, which
    the engine reports as a scorer error naming the directory.
    """
    directory = task.directory
    binary = {k: base64.b64encode(v).decode("ascii") for k, v in directory.binary_files.items()}
    limit = max(SETUP_MIN_TIMEOUT_S, task.settings.timeout_s)
    evaluator = directory.files.evaluator_name if directory.files else "evaluator.py"
    # a folder or a prompt file travels as the task says (openevolve_layouts, issue 31)
    program, name = (task.sandbox_program(code) if hasattr(task, "sandbox_program")
                     else (code, None))
    r = session.call("setup", directory.text_files, binary, program, evaluator,
                     getattr(task, "file_suffix", ".py"), program_name=name, timeout_s=limit)
    value = r.value if r.ok else None
    if not (isinstance(value, dict) and isinstance(value.get("functions"), list)):
        detail = r.error or "its answer was malformed"
        tail = f"\n{r.stderr[-TRACEBACK_CHARS:]}" if r.stderr else ""
        raise TaskError(f"{evaluator} could not be loaded in the sandbox ({r.status.value}): "
                        f"{detail} (task directory {str(directory.path)!r}){tail}")
    return tuple(str(f) for f in value["functions"])


def evaluate_in_session(task: Any, session: Any, code: str, timeout_s: float) -> Evaluation:
    """Score ``code``: setup, then the direct evaluation or the cascade (module docstring)."""
    functions = setup_session(task, session, code)
    settings = task.settings
    if settings.cascade_evaluation and "evaluate_stage1" in functions:
        return _cascade(task, session, functions, timeout_s)
    if "evaluate" not in functions:
        raise TaskError(f"evaluator.py of task directory {str(task.directory.path)!r} has no "
                        "callable evaluate(program_path) once imported")
    stage = run_stage(session, "evaluate", timeout_s, settings.evaluator_args)
    if stage.kind != "ok":
        return _failed(session, stage, "evaluation")
    return _scored(task, session, stage.metrics, stage.artifacts)


def _cascade(task: Any, session: Any, functions: tuple[str, ...], timeout_s: float
             ) -> Evaluation:
    thresholds = task.settings.cascade_thresholds
    first = run_stage(session, "evaluate_stage1", timeout_s, {})
    if first.kind != "ok":
        return _failed(session, first, "stage1", {"stage1_passed": 0.0})
    metrics, artifacts = first.metrics, dict(first.artifacts)
    notes = []
    for number, (stage_name, threshold) in enumerate(
            zip(("evaluate_stage2", "evaluate_stage3"), thresholds, strict=False), start=2):
        score = fitness_for_threshold(metrics)
        if not passes_threshold(metrics, threshold):
            notes.append(f"stage {number - 1} scored {score:.6g} < threshold {threshold:g}: "
                         f"stage {number} not run")
            break
        if stage_name not in functions:
            notes.append(f"stage {number - 1} passed threshold {threshold:g}; no {stage_name}")
            break
        notes.append(f"stage {number - 1} passed threshold {threshold:g}")
        stage = run_stage(session, stage_name, timeout_s, {})
        if stage.kind != "ok":
            metrics = {**metrics, f"stage{number}_passed": 0.0}
            prefix = f"stage{number}"
            artifacts.update({"failure_stage": prefix, f"{prefix}_stderr": stage.error})
            if stage.kind == "timeout":
                artifacts[f"{prefix}_timeout"] = "True"
            if stage.traceback:
                artifacts[f"{prefix}_traceback"] = stage.traceback
            notes.append(f"stage {number} failed: {stage.error}")
            break
        metrics = merged(metrics, stage.metrics)
        artifacts.update(stage.artifacts)
    else:
        notes.append("no further threshold" if len(thresholds) < 2 else "all stages run")
    artifacts["basevolve.cascade"] = "; ".join(notes)
    return _scored(task, session, metrics, artifacts)


def fitness_for_threshold(metrics: dict[str, Any]) -> float:
    """The number the threshold test compares (for the cascade's note)."""
    if is_number(metrics.get("combined_score")):
        return as_float(metrics["combined_score"])
    values = [as_float(v) for k, v in metrics.items() if k != "error" and is_number(v)]
    return sum(values) / len(values) if values else math.nan


def _common(session: Any) -> dict[str, Any]:
    return {"isolation": session.isolation, "seconds": session.timeout_s - session.remaining_s,
            "stdout": session.stdout, "stderr": session.stderr, "trust": Trust.IN_SANDBOX}


def stored(metrics: dict[str, Any], artifacts: dict[str, str]
           ) -> tuple[dict[str, float], dict[str, str]]:
    """Finite numeric metrics as floats; every other metric as artifact ``metric.NAME``."""
    numbers: dict[str, float] = {}
    texts = dict(artifacts)
    for key, value in metrics.items():
        number = as_float(value) if is_number(value) else math.nan
        if is_number(value) and math.isfinite(number):
            numbers[key] = number
        else:
            texts[f"metric.{key}"] = str(value)[:MAX_ARTIFACT_CHARS]
    return numbers, texts


def _scored(task: Any, session: Any, metrics: dict[str, Any], artifacts: dict[str, str]
            ) -> Evaluation:
    score = fitness(metrics, task.options.feature_dimensions)
    numbers, texts = stored(metrics, artifacts)
    if not math.isfinite(score):
        return Evaluation(score=0.0, valid=False, metrics=numbers, artifacts=texts,
                          error=f"bad_output: the evaluator's fitness is {score} (not finite)",
                          **_common(session))
    return Evaluation(score=score, valid=True, metrics=numbers, artifacts=texts,
                      strict_score=score, strict_valid=True, **_common(session))


def _failed(session: Any, stage: Stage, where: str, metrics: dict[str, float] | None = None
            ) -> Evaluation:
    """Score 0, invalid, with the reason: the first evaluation call did not give metrics."""
    artifacts = {"failure_stage": where, "stderr": stage.error}
    if stage.kind == "timeout":
        artifacts.update(timeout="True", error_type="timeout")
    if stage.traceback:
        artifacts["traceback"] = stage.traceback
    status = "timeout" if stage.kind == "timeout" else "error"
    return Evaluation(score=0.0, valid=False, metrics=dict(metrics or {}), artifacts=artifacts,
                      error=f"{status}: {stage.error}", **_common(session))


__all__ = ["evaluate_in_session", "fitness", "harness_source", "merged", "passes_threshold",
           "run_stage", "session_timeout", "stored"]
