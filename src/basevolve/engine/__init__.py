"""The run engine: the async budget-owning loop, resume, and the run entry points.

Public API::

    from basevolve.engine import start_run, resume_run, Engine
    from basevolve.config import RunConfig
    summary = start_run(RunConfig(task="circle_packing", budget=8, depth=2,
                                  base_url="http://127.0.0.1:8000/v1"), "runs.sqlite",
                        out_dir=Path("out"))
    summary = resume_run("circle_packing-...", "runs.sqlite")

``summary`` is the dict printed by ``basevolve run --json`` (see
:func:`basevolve.engine.summary.build_summary`).
"""

from __future__ import annotations

from basevolve.engine.core import Engine
from basevolve.engine.endpoints import probe_endpoint
from basevolve.engine.runner import (
    resume_run,
    resume_run_async,
    start_run,
    start_run_async,
)
from basevolve.engine.state import call_seed

__all__ = ["Engine", "call_seed", "probe_endpoint", "resume_run", "resume_run_async", "start_run",
           "start_run_async"]
