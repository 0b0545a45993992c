"""LLMSettings validation and the budget CallPolicy (issue 3, part 2)."""

from __future__ import annotations

import pytest

from basevolve.errors import ConfigError
from basevolve.llm import CallPolicy, LLMSettings, NoUsagePolicy
from basevolve.records import Attempt, AttemptStatus, Completion, Usage


def _completion(n_failed: int, ok: bool = True) -> Completion:
    attempts = [
        Attempt(i, AttemptStatus.HTTP_ERROR, 0.0, None, "500", 500) for i in range(n_failed)
    ]
    if ok:
        attempts.append(Attempt(n_failed, AttemptStatus.OK, 0.0, Usage(1, 0, 1)))
    return Completion("x", "x", "stop", Usage(1, 0, 1), 0.0, tuple(attempts))


def test_call_policy_counts_failed_attempts_only_when_asked() -> None:
    c = _completion(n_failed=2)
    assert CallPolicy(count_failed_attempts=False).budget_units(c) == 1
    assert CallPolicy(count_failed_attempts=True).budget_units(c) == 3
    failed = _completion(n_failed=2, ok=False)
    assert CallPolicy(count_failed_attempts=False).budget_units(failed) == 0
    assert CallPolicy(count_failed_attempts=True).budget_units(failed) == 2
    s = LLMSettings(count_failed_attempts=True, no_usage="exclude")
    assert s.call_policy == CallPolicy(True, NoUsagePolicy.EXCLUDE)


def test_backoff_doubles_up_to_the_cap() -> None:
    s = LLMSettings(backoff_base_s=0.5, backoff_cap_s=3.0)
    assert [s.backoff_s(i) for i in range(4)] == [0.5, 1.0, 2.0, 3.0]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_retries": -1},
        {"attempt_timeout_s": 0},
        {"call_deadline_s": float("nan")},
        {"max_tokens": 0},
        {"embedded_n_parallel": 0},
        {"backoff_base_s": -1.0},
    ],
)
def test_invalid_settings_name_the_field(kwargs: dict) -> None:
    with pytest.raises(ConfigError, match=next(iter(kwargs))):
        LLMSettings(**kwargs)
