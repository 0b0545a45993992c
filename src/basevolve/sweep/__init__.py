"""Sweeps: the paper's grids as one resumable command (issue 11).

``basevolve sweep CONFIG --store FILE`` expands a TOML grid (:mod:`.config`) into
deterministically named runs and drives them to completion: locally on one asyncio
loop that shares each endpoint's in-flight limit and one sandbox pool
(:mod:`.local`), or on a Ray cluster (:mod:`.ray_executor`).  ``--status`` reads the
store read-only (:mod:`.status`); the end-of-sweep reliability summary is
:mod:`.reliability`; ``basevolve sweep init --preset`` writes the paper's grids
(:mod:`.presets`).

>>> from basevolve.sweep import load_sweep, run_sweep       # doctest: +SKIP
>>> result = run_sweep("depth-breadth.toml", "runs.sqlite")  # doctest: +SKIP
"""

from __future__ import annotations

from basevolve.sweep.config import SweepConfig, SweepRun, load_sweep, parse_sweep
from basevolve.sweep.execute import SweepResult, run_sweep
from basevolve.sweep.presets import PRESETS, write_preset
from basevolve.sweep.reliability import reliability
from basevolve.sweep.status import sweep_status

__all__ = [
    "PRESETS",
    "SweepConfig",
    "SweepResult",
    "SweepRun",
    "load_sweep",
    "parse_sweep",
    "reliability",
    "run_sweep",
    "sweep_status",
    "write_preset",
]
