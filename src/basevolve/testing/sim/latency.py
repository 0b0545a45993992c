"""Latency of the simulated LLM: a prefill/decode token-rate model with slots.

Why: a real serving engine (vLLM, llama.cpp) spends time reading the *uncached* part of
the prompt (prefill) and generating the reply (decode), and serves a bounded number of
sequences at once.  The paper's effective-FLOPs accounting (Appendix "Effective FLOPs")
charges exactly these two parts, so a dry run with this latency shows how depth (long
serial chains) and breadth (many parallel calls) trade off in wall time, not only in
calls.  ``seconds(usage)`` = ``overhead_s`` + uncached prompt tokens / ``prefill_tps``
+ completion tokens / ``decode_tps``; at most ``slots`` requests are served at once,
the rest queue (first come, first served by the semaphore).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from basevolve.errors import ConfigError


@dataclass(frozen=True)
class TokenRateLatency:
    """Service time from usage; ``slots`` concurrent requests (module doc)."""

    prefill_tps: float = 5000.0
    decode_tps: float = 50.0
    slots: int = 8
    overhead_s: float = 0.0

    def __post_init__(self) -> None:
        if not self.prefill_tps > 0 or not self.decode_tps > 0:
            raise ConfigError(
                f"--prefill-tps and --decode-tps must be > 0 tokens/s, got "
                f"{self.prefill_tps} and {self.decode_tps}")
        if self.slots < 1:
            raise ConfigError(f"--slots must be >= 1, got {self.slots}")
        if self.overhead_s < 0:
            raise ConfigError(f"the per-request overhead must be >= 0 s, got {self.overhead_s}")

    def seconds(self, usage: dict[str, Any]) -> float:
        prompt = int(usage.get("prompt_tokens") or 0)
        cached = int((usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0)
        out = int(usage.get("completion_tokens") or 0)
        return self.overhead_s + max(0, prompt - cached) / self.prefill_tps + out / self.decode_tps
