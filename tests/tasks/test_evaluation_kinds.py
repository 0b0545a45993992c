"""The evaluation kinds a task may declare live with the task (issue 33: a task does not
import the engine); the engine registers exactly one evaluator for each of them."""

from __future__ import annotations

from basevolve.engine.evaluators import EVALUATORS
from basevolve.tasks.base import EVALUATION_KINDS


def test_every_evaluation_kind_has_one_engine_evaluator():
    assert EVALUATORS.names() == sorted(EVALUATION_KINDS)
