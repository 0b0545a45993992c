"""How fast the embedded-small model runs on this machine now, and what that means for
the embedded-model tests' token counts and waits (issue 37, item 4).

Why: on a 2-core box at load 9-15 the 0.5B model read prompts at ~5 tokens/s and
decoded at ~0.3 tokens/s (measured 2026-11-28), so tests written for a quiet box (256
tokens a reply, fixed 300 s / 900 s limits) were killed by pytest-timeout.  Now each
such test declares its work with ``@pytest.mark.embedded_work(waits=fn)``; the
session measures the rate once (:func:`measure`, a few seconds on a quiet box, ~1.5
minutes at load 15) before the first such test runs, sets that test's pytest-timeout
from it (``tests/cli/conftest.py``), and the test sizes its tokens and internal waits
from the same :class:`Rate` -- so every wait fits inside the limit by construction,
and nothing is skipped.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

SRC = str(Path(__file__).resolve().parents[2] / "src")
#: Margins: an estimate times SAFETY plus SLACK_S (the load can rise during a test).
SAFETY = 3.0
SLACK_S = 60.0
#: The limit a test gets at least (pyproject's pytest-timeout default).
FLOOR_S = 300.0
#: Fixed costs of a run beyond the model: imports, store, sandboxed evaluations.
RUN_OVERHEAD_S = 30.0
#: Prompt tokens of a min_max_distance greedy call (~2,750 characters; 2026-11-28).
RUN_PROMPT_TOKENS = 800

_PROBE = r"""
import asyncio, json, time
t0 = time.monotonic()
from basevolve.llm import LLMSettings, make_client

async def main():
    client = make_client("embedded-small", None, settings=LLMSettings(max_retries=0))
    await client.load()
    start_s = time.monotonic() - t0
    words = " ".join(f"w{i}" for i in range(60))
    a = await client.complete([{"role": "user", "content": words}], max_tokens=1, seed=0)
    b = await client.complete([{"role": "user", "content": "Count from 1 to 50."}],
                              max_tokens=8, seed=0)
    await client.aclose()
    print(json.dumps({"start_s": start_s, "a": [a.usage.prompt_tokens, a.latency_s, a.ok],
                      "b": [b.usage.prompt_tokens, b.usage.completion_tokens, b.latency_s,
                            b.ok]}))

asyncio.run(main())
"""


@dataclass(frozen=True)
class Rate:
    """Measured costs: process start with model load (s), prompt and decode tokens/s."""

    start_s: float
    prefill_tps: float
    decode_tps: float

    def call_s(self, prompt_tokens: int, completion_tokens: int) -> float:
        """Expected seconds of one call (no prefix cache assumed)."""
        return prompt_tokens / self.prefill_tps + completion_tokens / self.decode_tps

    def run_s(self, calls: int, prompt_tokens: int, completion_tokens: int,
              processes: int = 1) -> float:
        """Expected seconds of ``processes`` runs making ``calls`` calls between them."""
        return (processes * (self.start_s + RUN_OVERHEAD_S)
                + calls * self.call_s(prompt_tokens, completion_tokens))

    def tokens_lasting(self, seconds: float, lo: int, hi: int) -> int:
        """Tokens the model decodes in ``seconds``, clamped to ``[lo, hi]``."""
        return max(lo, min(hi, math.ceil(seconds * self.decode_tps)))

    @staticmethod
    def limit(estimate_s: float) -> float:
        """A wait (or a test's timeout) for work expected to take ``estimate_s``."""
        return SAFETY * estimate_s + SLACK_S

    def describe(self) -> str:
        return (f"embedded-small here: start+load {self.start_s:.1f} s, prompt "
                f"{self.prefill_tps:.3g} tok/s, decode {self.decode_tps:.3g} tok/s")


def measure(timeout_s: float = 1800.0) -> Rate:
    """One probe process: load embedded-small, read a ~130-token prompt, decode 8 tokens."""
    proc = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True,
                          timeout=timeout_s, env=dict(os.environ, PYTHONPATH=SRC))
    if proc.returncode != 0:
        raise RuntimeError(f"measuring the embedded model failed (exit {proc.returncode}): "
                           f"{proc.stderr[-2000:]}")
    data = json.loads(proc.stdout.strip().splitlines()[-1])
    (pa, la, oka), (pb, cb, lb, okb) = data["a"], data["b"]
    if not (oka and okb and pa > 0 and cb > 0):
        raise RuntimeError(f"the embedded model's probe calls failed: {data}")
    prefill = pa / max(la, 1e-3)
    decode = cb / max(lb - pb / prefill, lb / 10, 1e-3)
    return Rate(start_s=float(data["start_s"]), prefill_tps=prefill, decode_tps=decode)


_RATE: Rate | None = None


def rate() -> Rate:
    """The session's measurement (made once, on first use)."""
    global _RATE
    if _RATE is None:
        _RATE = measure()
    return _RATE


def timeout_for(waits_s: float) -> float:
    """The pytest-timeout of a test that may wait ``waits_s`` in all (the sum of its
    :meth:`Rate.limit` waits): that plus SLACK_S, never under FLOOR_S."""
    return max(FLOOR_S, waits_s + SLACK_S)


__all__ = ["RUN_OVERHEAD_S", "RUN_PROMPT_TOKENS", "Rate", "measure", "rate", "timeout_for"]
