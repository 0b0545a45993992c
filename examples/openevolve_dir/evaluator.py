"""Evaluator of examples/openevolve_dir, written in OpenEvolve's layout.

OpenEvolve calls evaluate(program_path) (or, with cascade_evaluation, evaluate_stage1 and
then evaluate_stage2 when stage 1 passes cascade_thresholds[0]).  basevolve runs this
file unchanged, inside its sandbox next to the program.  It imports EvaluationResult
from openevolve; basevolve provides a stand-in when OpenEvolve is not installed.
"""

import importlib.util
import math

import numpy as np
from openevolve.evaluation_result import EvaluationResult

MAX_CALLS = 200
# f(x) = sin(a x) + b cos(c x) + (x / 4)^2 on [-6, 6]: bumpy, one global minimum each.
FUNCTIONS = [(3.0, 0.5, 7.0), (2.0, 1.0, 5.0), (5.0, 0.3, 1.5), (1.0, 0.8, 9.0),
             (4.0, 0.6, 2.5)]
LO, HI = -6.0, 6.0


def _f(a, b, c):
    return lambda x: math.sin(a * x) + b * math.cos(c * x) + (x / 4.0) ** 2


def _true_minimum(a, b, c):
    xs = np.linspace(LO, HI, 200_001)
    return float(np.min(np.sin(a * xs) + b * np.cos(c * xs) + (xs / 4.0) ** 2))


def _load(program_path):
    spec = importlib.util.spec_from_file_location("program", program_path)
    program = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(program)
    return program


def _score_one(search, coeffs):
    """(score in [0, 1], note): 1 / (1 + 10 * gap to the true minimum)."""
    f = _f(*coeffs)
    calls = [0]

    def counted(x):
        calls[0] += 1
        return f(float(x))

    x = float(search(counted, LO, HI))
    if calls[0] > MAX_CALLS:
        return 0.0, f"used {calls[0]} calls of f (limit {MAX_CALLS})"
    if not (LO <= x <= HI) or math.isnan(x):
        return 0.0, f"returned x={x!r}, outside [{LO}, {HI}]"
    gap = f(x) - _true_minimum(*coeffs)
    return 1.0 / (1.0 + 10.0 * max(gap, 0.0)), f"x={x:.4f}, gap {gap:.4g}, {calls[0]} calls"


def evaluate_stage1(program_path):
    """Quick check on the first function only."""
    program = _load(program_path)
    score, note = _score_one(program.search, FUNCTIONS[0])
    return EvaluationResult(metrics={"stage1_score": score},
                            artifacts={"stage1": f"function 1: {note}"})


def evaluate_stage2(program_path):
    """All functions; combined_score is the mean score."""
    program = _load(program_path)
    results = [_score_one(program.search, coeffs) for coeffs in FUNCTIONS]
    scores = [s for s, _ in results]
    worst = min(range(len(results)), key=lambda i: scores[i])
    return EvaluationResult(
        metrics={"combined_score": sum(scores) / len(scores), "worst_score": min(scores),
                 "solved": sum(s > 0.99 for s in scores)},
        artifacts={"stage2": f"worst: function {worst + 1}: {results[worst][1]}"})


def evaluate(program_path):
    """Without the cascade: the full evaluation."""
    return evaluate_stage2(program_path)
