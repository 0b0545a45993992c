"""A call's place in its run, sent with the request (issue 34, item 4).

``X-Basevolve-Call: <run>/<position>``: ``<run>`` names one run (its id and creation
time, so two runs with the same id in different stores differ, and a resume keeps it),
``<position>`` counts the run's calls to this model in issue order (a call sent again
keeps its position).  The engine sets it around the creation of each call's request
(:data:`CALL_ORDER`, a context variable, so no client signature changes); the OpenAI
backend sends it as a header.  A real server ignores an unknown header; the repo's test
server and simulator key their emulated prefix cache by it, so ``cached_tokens`` (and
the FLOPs) of a ``--deterministic`` run replicate (:mod:`basevolve.testing.prefix_cache`).
"""

from __future__ import annotations

from contextvars import ContextVar

CALL_HEADER = "X-Basevolve-Call"
#: the header's value for the request being created (None: no header)
CALL_ORDER: ContextVar[str | None] = ContextVar("basevolve_call_order", default=None)


def order_value(run: str, position: int) -> str:
    """The header's value; ``/`` and control characters in ``run`` are replaced."""
    clean = "".join(c if c.isprintable() and c != "/" else "_" for c in run)
    return f"{clean}/{int(position)}"


__all__ = ["CALL_HEADER", "CALL_ORDER", "order_value"]
