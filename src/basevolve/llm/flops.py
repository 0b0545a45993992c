"""Effective FLOPs of LLM calls (paper, Section "Post-hoc FLOPs accounting" and
Appendix "Effective FLOPs").

Per attempt: ``2 * P_active * (prompt_tokens - cached_tokens + completion_tokens)``;
per call: the sum over *all* attempts, retries included (the paper: "Per-run FLOPs sums
over all attempts, including retries").  Cached prompt tokens are subtracted because the
server reused their KV states instead of recomputing them.

An attempt that provably never reached a server (``AttemptStatus.NOT_SENT``: connection
refused, DNS or TLS failure, connect timeout) costs 0: nothing was computed.  An attempt
that was sent but returned no usage (timeout, 5xx, dropped connection) is charged by a
stated :class:`NoUsagePolicy` (``basevolve run --charge-unanswered worst|none``):

* ``WORST_CASE`` (default, ``worst``): the server may have run the whole request before
  failing, so charge the call's prompt as uncached plus ``max_tokens`` of output.  The
  prompt size is taken from any attempt of the same call that did report usage (same
  messages), else 0.
* ``EXCLUDE`` (``none``): charge nothing (an optimistic lower bound).

A call *lost* in flight (the run was interrupted or killed before it was answered) has
no attempt to charge; it is charged by the same policy, its worst case being its
prompt's upper bound plus ``max_tokens`` (:mod:`basevolve.engine.lost_calls`, issue
24, item 3).

Such charged-but-unmeasured FLOPs are reported separately (``flops_unmeasured`` in the
run summary; lost calls also as ``flops_lost`` / ``calls_lost_charged``), so a reader
sees how much of a total is an estimate.  An attempt whose
usage was impossible (negative, absurd, fewer tokens than its bytes) counts as one that
reported none (:mod:`basevolve.llm.usage`), and an answered attempt is never charged
fewer completion tokens than its reply's bytes imply (``Attempt.reply_bytes``), under
either policy.

Pure functions: no I/O, hand-checkable (tests/llm/test_flops.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum

from basevolve.llm.usage import implied_tokens
from basevolve.records import Attempt, AttemptStatus, Completion, Usage


class NoUsagePolicy(StrEnum):
    """How to charge an attempt that was sent and reported no usage."""

    WORST_CASE = "worst_case"
    EXCLUDE = "exclude"


#: ``--charge-unanswered`` values and the policy each names.
CHARGE_UNANSWERED = {"worst": NoUsagePolicy.WORST_CASE, "none": NoUsagePolicy.EXCLUDE}


def usage_flops(usage: Usage, active_params: float) -> float:
    """``2 * P_active * (prompt - cached + completion)``; cached is clamped to [0, prompt]."""
    cached = min(max(usage.cached_tokens, 0), usage.prompt_tokens)
    uncached = usage.prompt_tokens - cached
    return 2.0 * float(active_params) * float(uncached + usage.completion_tokens)


def attempt_flops(
    attempt: Attempt,
    active_params: float,
    *,
    max_tokens: int,
    no_usage: NoUsagePolicy = NoUsagePolicy.WORST_CASE,
    prompt_tokens_hint: int = 0,
) -> float:
    """FLOPs of one attempt; ``prompt_tokens_hint`` sizes the worst case of a usage-less one."""
    return 2.0 * float(active_params) * float(attempt_tokens(
        attempt, max_tokens=max_tokens, no_usage=no_usage, prompt_tokens_hint=prompt_tokens_hint,
        uncached=True))


def attempt_tokens(
    attempt: Attempt,
    *,
    max_tokens: int,
    no_usage: NoUsagePolicy = NoUsagePolicy.WORST_CASE,
    prompt_tokens_hint: int = 0,
    uncached: bool = False,
) -> int:
    """Tokens one attempt processed, for ``--budget-tokens``: prompt (cached included:
    they were sent) + completion; ``uncached``: cached prompt tokens left out (what
    :func:`attempt_flops` charges).  A usage-less attempt: 0 when never sent, else the
    completion tokens its reply's bytes imply (``EXCLUDE``), or prompt hint +
    ``max_tokens`` (at least the implied tokens; ``WORST_CASE``)."""
    usage = attempt.usage
    if usage is not None:
        cached = min(max(usage.cached_tokens, 0), usage.prompt_tokens) if uncached else 0
        return int(usage.prompt_tokens - cached + usage.completion_tokens)
    if attempt.status is AttemptStatus.NOT_SENT:
        return 0
    floor = implied_tokens(attempt.reply_bytes)
    if NoUsagePolicy(no_usage) is NoUsagePolicy.EXCLUDE:
        return floor
    return max(prompt_tokens_hint, 0) + max(max_tokens, floor, 0)


def _prompt_hint(attempts: Iterable[Attempt]) -> int:
    return max((a.usage.prompt_tokens for a in attempts if a.usage is not None), default=0)


def call_flops(
    completion: Completion,
    active_params: float,
    *,
    max_tokens: int,
    no_usage: NoUsagePolicy = NoUsagePolicy.WORST_CASE,
) -> float:
    """FLOPs of one call: the sum over all its attempts (retries included)."""
    hint = _prompt_hint(completion.attempts)
    return sum(
        attempt_flops(
            a, active_params, max_tokens=max_tokens, no_usage=no_usage, prompt_tokens_hint=hint
        )
        for a in completion.attempts
    )


def total_usage(completion: Completion) -> Usage:
    """Token usage summed over all attempts that reported usage."""
    total = Usage()
    for a in completion.attempts:
        if a.usage is not None:
            total = total + a.usage
    return total


__all__ = ["CHARGE_UNANSWERED", "NoUsagePolicy", "attempt_flops", "attempt_tokens", "call_flops",
           "total_usage", "usage_flops"]
