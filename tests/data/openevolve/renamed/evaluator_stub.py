"""The evaluator of the renamed-files fixture (named evaluator_stub.py on purpose).

Returns the closeness to sqrt(2) as a score, a boolean flag and a feature value (and an
artifact, which reaches the next prompt when the config lets artifacts in): by
OpenEvolve's fitness rule only ``closeness`` counts (booleans and the feature
dimensions ``complexity``/``diversity`` stay out of the mean).
"""

import importlib.util

from openevolve.evaluation_result import EvaluationResult
from target import TARGET  # a module beside the evaluator (the directory is on sys.path)


def evaluate(program_path):
    spec = importlib.util.spec_from_file_location("candidate", program_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    value = float(module.estimate())
    error = abs(value - TARGET)
    metrics = {"closeness": 1.0 / (1.0 + error), "exact": error < 1e-9, "complexity": 12.0}
    return EvaluationResult(metrics=metrics, artifacts={"hint": f"estimate() gave {value!r}"})
