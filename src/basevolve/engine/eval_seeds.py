"""The seed of each evaluation: the run seed and the evaluation's own identity (issue 31, item 8).

Every evaluation (and every function-task or task-directory session) starts with
``random`` and ``numpy.random`` seeded in the sandbox (``sandbox/_prepare.py``).  The
seed is ``SHA-256(run seed, SHA-256 of the program, k)``, where ``k`` counts earlier
evaluations of the same program text by this evaluator.  So:

* repeated evaluations of one program draw different numbers, as fresh processes would
  (OpenEvolve evaluates each program in a new process);
* the seed does not depend on the order in which concurrent evaluations finish, so two
  ``--deterministic`` runs with one seed give the same scores to the same programs.

After ``--resume`` the counts start again at 0: a program evaluated both before and
after the interruption may see its first draws again.
"""

from __future__ import annotations

import hashlib
from collections import Counter


class EvaluationSeeds:
    """Hands out the seed of each evaluation (None when the run has no seed)."""

    def __init__(self, run_seed: int | None) -> None:
        self.run_seed = run_seed
        self._seen: Counter[str] = Counter()

    def next(self, code: str) -> int | None:
        """The seed of the next evaluation of ``code`` (call once per evaluation)."""
        if self.run_seed is None:
            return None
        digest = hashlib.sha256(code.encode("utf-8", "surrogatepass")).hexdigest()
        k = self._seen[digest]
        self._seen[digest] += 1
        material = f"basevolve-eval:{self.run_seed}:{digest}:{k}".encode()
        return int.from_bytes(hashlib.sha256(material).digest()[:8], "big")


__all__ = ["EvaluationSeeds"]
