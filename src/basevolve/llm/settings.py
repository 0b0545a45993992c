"""Frozen, validated settings of the LLM layer (docs/design.md, style rule 2).

Defaults follow the paper where it states them (temperature 0.6, top-p 0.95 are the
``complete`` defaults) and otherwise keep a run from hanging: every call has a
per-attempt timeout *and* an overall deadline, so a stalled endpoint costs at most
``call_deadline_s`` before the call is returned as failed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from basevolve.errors import ConfigError
from basevolve.llm.flops import NoUsagePolicy
from basevolve.records import Completion


@dataclass(frozen=True, slots=True)
class CallPolicy:
    """Whether failed attempts count against the LLM-call budget C.

    ``count_failed_attempts=False`` (default): only a call that answered costs one unit
    of budget; its failed retries, and a call that failed outright, cost nothing (they
    are still recorded and their FLOPs charged), so an unreliable endpoint cannot eat
    the search budget.  ``True``: every attempt, failed or not, costs one unit (the
    engine then runs the client with ``max_retries=0`` and re-issues failed calls
    itself, so it can never spend C+1).
    """

    count_failed_attempts: bool = False
    no_usage: NoUsagePolicy = NoUsagePolicy.WORST_CASE

    def budget_units(self, completion: Completion) -> int:
        """Units of the call budget this completion consumed."""
        if self.count_failed_attempts:
            return len(completion.attempts)
        return 1 if completion.ok else 0


@dataclass(frozen=True, slots=True)
class LLMSettings:
    """Retry, timeout, accounting and embedded-runtime settings.

    ``max_retries`` counts retries after the first attempt.  Backoff before retry ``i``
    (0-based) is ``min(backoff_cap_s, backoff_base_s * 2**i)`` (or the server's
    ``Retry-After`` when it is smaller than the cap), never past the call deadline.
    ``enable_thinking``: None sends nothing; True/False is passed to the server as
    ``chat_template_kwargs.enable_thinking`` (Qwen3; the paper used thinking mode).
    The embedded backend always disables thinking; ``embedded_n_ctx`` is one KV-cache
    pool shared by its ``embedded_n_parallel`` slots (prompt + reply of all calls in
    flight must fit).  ``max_reply_bytes``: the largest HTTP reply body accepted per
    attempt; None = ``16 * max_tokens + 64 KiB`` of the request
    (:func:`basevolve.llm.usage.reply_cap`; a larger body fails the attempt unread).
    """

    max_retries: int = 4
    backoff_base_s: float = 0.5
    backoff_cap_s: float = 8.0
    attempt_timeout_s: float = 600.0
    call_deadline_s: float = 1800.0
    max_tokens: int = 4096
    no_usage: NoUsagePolicy = NoUsagePolicy.WORST_CASE
    count_failed_attempts: bool = False
    enable_thinking: bool | None = None
    embedded_n_ctx: int = 8192
    embedded_n_parallel: int = 2
    embedded_threads: int = 0  # 0 = os.cpu_count()
    max_reply_bytes: int | None = None

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise ConfigError(f"max_retries must be >= 0, got {self.max_retries}")
        for name in ("backoff_base_s", "backoff_cap_s"):
            value = getattr(self, name)
            if not math.isfinite(value) or value < 0:
                raise ConfigError(f"{name} must be a finite number >= 0, got {value}")
        for name in ("attempt_timeout_s", "call_deadline_s"):
            value = getattr(self, name)
            if not (value > 0) or math.isnan(value):
                raise ConfigError(f"{name} must be > 0 seconds, got {value}")
        if self.max_tokens < 1:
            raise ConfigError(f"max_tokens must be >= 1, got {self.max_tokens}")
        if self.embedded_n_ctx < 256:
            raise ConfigError(f"embedded_n_ctx must be >= 256, got {self.embedded_n_ctx}")
        if self.embedded_n_parallel < 1:
            raise ConfigError(f"embedded_n_parallel must be >= 1, got {self.embedded_n_parallel}")
        if self.max_reply_bytes is not None and self.max_reply_bytes < 1024:
            raise ConfigError(f"max_reply_bytes must be >= 1024 (or None for the default "
                              f"16 bytes per max_tokens token + 64 KiB), got "
                              f"{self.max_reply_bytes}")
        if self.embedded_threads < 0:
            raise ConfigError(f"embedded_threads must be >= 0, got {self.embedded_threads}")
        object.__setattr__(self, "no_usage", NoUsagePolicy(self.no_usage))

    @property
    def call_policy(self) -> CallPolicy:
        return CallPolicy(self.count_failed_attempts, self.no_usage)

    def backoff_s(self, retry: int) -> float:
        return min(self.backoff_cap_s, self.backoff_base_s * (2.0**retry))


def default_max_tokens(model: str | None) -> int:
    """The completion cap of a run without ``--max-tokens``: the catalog's default for
    ``model`` (16,000 for the paper's thinking-mode Qwen3 models, issue 23, item 8),
    else :attr:`LLMSettings.max_tokens`."""
    from basevolve.llm.catalog import catalog_max_tokens

    return catalog_max_tokens(model) or LLMSettings().max_tokens


__all__ = ["CallPolicy", "LLMSettings", "default_max_tokens"]
