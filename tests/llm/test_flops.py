"""FLOPs accounting (paper, Appendix "Effective FLOPs") with hand-checked numbers."""

from __future__ import annotations

import pytest

from basevolve.llm.flops import NoUsagePolicy, attempt_flops, call_flops, total_usage, usage_flops
from basevolve.records import Attempt, AttemptStatus, Completion, Usage

P = 1e9  # 1B active parameters


def _completion(*attempts: Attempt) -> Completion:
    return Completion("", "", "stop", Usage(), 0.0, tuple(attempts))


def test_usage_flops_matches_formula_by_hand() -> None:
    # 2 * 1e9 * (1000 - 600 + 250) = 2 * 1e9 * 650 = 1.3e12
    assert usage_flops(Usage(1000, 600, 250), P) == 1.3e12
    # no cache: 2 * 8e9 * (100 + 50) = 2.4e12
    assert usage_flops(Usage(100, 0, 50), 8e9) == 2.4e12


def test_cached_tokens_are_clamped_to_the_prompt() -> None:
    # a server reporting more cached than prompt tokens cannot make FLOPs negative
    assert usage_flops(Usage(10, 50, 5), P) == 2 * P * 5


def test_call_flops_sums_every_attempt_including_retries() -> None:
    c = _completion(
        Attempt(0, AttemptStatus.EMPTY_CHOICES, 0.1, Usage(100, 0, 0)),  # 2e9 * 100 = 2e11
        Attempt(1, AttemptStatus.OK, 0.1, Usage(100, 90, 40)),  # 2e9 * 50 = 1e11
    )
    assert call_flops(c, P, max_tokens=64) == pytest.approx(3e11)
    assert total_usage(c) == Usage(200, 90, 40)


def test_usage_less_attempts_follow_the_stated_policy() -> None:
    c = _completion(
        Attempt(0, AttemptStatus.HTTP_ERROR, 0.1, None, "HTTP 500", 500),
        Attempt(1, AttemptStatus.OK, 0.1, Usage(100, 0, 10)),
    )
    # worst case: the failed attempt is charged the call's prompt uncached + max_tokens
    # = 2e9 * (100 + 64) = 3.28e11, plus the ok attempt 2e9 * 110 = 2.2e11 -> 5.48e11
    assert call_flops(c, P, max_tokens=64) == pytest.approx(5.48e11)
    # excluded: only the ok attempt
    assert call_flops(c, P, max_tokens=64, no_usage=NoUsagePolicy.EXCLUDE) == pytest.approx(2.2e11)


def test_worst_case_without_any_usage_charges_max_tokens_of_output() -> None:
    a = Attempt(0, AttemptStatus.TIMEOUT, 1.0, None, "timeout")
    assert attempt_flops(a, P, max_tokens=4096) == 2 * P * 4096
    assert attempt_flops(a, P, max_tokens=4096, no_usage="exclude") == 0.0
    assert call_flops(_completion(), P, max_tokens=4096) == 0.0
