"""The stable Python API of basevolve, re-exported by the top-level package.

``basevolve.run`` / ``resume`` (and ``run_async`` / ``resume_async``), ``sweep``,
``analyze``, ``report``, ``RunResult`` and the ``Task`` base class.  Everything else in the package
may change between versions; these names keep their meaning.  How the engine's event
loop coexists with a notebook's: :mod:`basevolve.api.loop`.
"""

from __future__ import annotations

from basevolve.api.analysis import analyze, report
from basevolve.api.result import RunResult
from basevolve.api.run import DEFAULT_STORE, resume, resume_async, run, run_async
from basevolve.api.sweeps import sweep

__all__ = [
    "DEFAULT_STORE",
    "RunResult",
    "analyze",
    "report",
    "resume",
    "resume_async",
    "run",
    "run_async",
    "sweep",
]
