"""Sandbox child, before the program: its environment and fresh random state (issue 31).

Runs INSIDE the sandbox, loaded by ``_worker.py`` (standard library only; numpy only
when the worker pre-imported it).  Called by ``_child.child_main`` once the request has
arrived, before the limits are set and the program is imported:

* **environment** (issue 31, item 6): the request's ``env`` (the pool's ``PATH`` with the
  host's toolchain directories, ``--env`` variables, ``BASEVOLVE_DATA``) is added to the
  child's environment, so the program and every process it starts (a compiler,
  ``cargo``) see it.  ``TMPDIR`` and ``CARGO_HOME`` point into the evaluation's own
  working directory: the only place the program may write, wiped after it.
* **randomness** (issue 31, item 8): the worker imported numpy once and every
  evaluation is a ``fork()`` of it.  CPython reseeds ``random`` after a fork, numpy does
  not, so without this every evaluation drew the same ``np.random`` numbers.  Both are
  seeded here from the request's ``seed`` (the engine derives it from the run seed and
  the evaluation's identity, so a ``--deterministic`` run replicates) or, when none is
  given, from the operating system, as in a fresh process.
"""

from __future__ import annotations

import os
import random
import sys
from typing import Any

SEED_BITS = 64


def environment(req: dict[str, Any], workdir: str) -> None:
    """Add the request's variables to this process's environment (inherited by children)."""
    env = req.get("env") or {}
    for name, value in env.items():
        if isinstance(name, str) and isinstance(value, str) and name and "=" not in name:
            os.environ[name] = value
    os.environ["TMPDIR"] = workdir
    os.environ["CARGO_HOME"] = os.path.join(workdir, ".cargo")


def reseed(seed: Any) -> int:
    """Seed ``random`` and (when imported) ``numpy.random``; returns the seed used."""
    if isinstance(seed, bool) or not isinstance(seed, int):
        seed = int.from_bytes(os.urandom(SEED_BITS // 8), "big")
    seed %= 1 << SEED_BITS
    random.seed(seed)
    np = sys.modules.get("numpy")
    if np is not None:
        try:
            np.random.seed(seed % (1 << 32))  # the legacy global state np.random.* draws from
        except Exception:
            pass
    return seed


def prepare(req: dict[str, Any], workdir: str) -> None:
    """Both steps, in the child, before the program runs."""
    environment(req, workdir)
    reseed(req.get("seed"))
