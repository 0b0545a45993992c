"""The seed of each evaluation: the run seed and the evaluation's own identity (issue 31, item 8).

Every evaluation (and every function-task or task-directory session) starts with
``random`` and ``numpy.random`` seeded in the sandbox (``sandbox/_prepare.py``).  The
seed is ``SHA-256(run seed, call key, SHA-256 of the program, k)``: the *call key* is the
issue-order key of the LLM call whose child is evaluated (:class:`~basevolve.engine.state.
CallJob`; the engine starts each evaluation with :func:`keyed`), absent for the initial
program and outside the engine; ``k`` counts earlier evaluations of the same text under
the same key by this evaluator.  So:

* repeated evaluations of one program draw different numbers, as fresh processes would
  (OpenEvolve evaluates each program in a new process);
* the seed depends neither on the order in which replies arrive nor on when
  evaluations finish, and call keys survive ``--resume``: two ``--deterministic`` runs
  with one seed give the same scores.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections import Counter
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any

#: The issue-order key of the call whose child the current task evaluates (or None).
EVALUATION_KEY: ContextVar[int | None] = ContextVar("basevolve_evaluation_key", default=None)


def keyed(key: int, start: Callable[[], Awaitable[Any]]) -> asyncio.Future[Any]:
    """Start ``start()`` as a task whose evaluations are seeded by call ``key``."""
    token = EVALUATION_KEY.set(key)
    try:
        return asyncio.ensure_future(start())  # the task copies the context now
    finally:
        EVALUATION_KEY.reset(token)


class EvaluationSeeds:
    """Hands out the seed of each evaluation (None when the run has no seed)."""

    def __init__(self, run_seed: int | None) -> None:
        self.run_seed = run_seed
        self._seen: Counter[str] = Counter()

    def next(self, code: str) -> int | None:
        """The seed of the next evaluation of ``code`` (call once per evaluation)."""
        if self.run_seed is None:
            return None
        key = EVALUATION_KEY.get()
        digest = hashlib.sha256(code.encode("utf-8", "surrogatepass")).hexdigest()
        identity = f"{key}:{digest}"
        k = self._seen[identity]
        self._seen[identity] += 1
        material = f"basevolve-eval:{self.run_seed}:{identity}:{k}".encode()
        return int.from_bytes(hashlib.sha256(material).digest()[:8], "big")


__all__ = ["EVALUATION_KEY", "EvaluationSeeds", "keyed"]
