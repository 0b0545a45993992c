"""``--objectives``, ``--reference-point`` and ``--reward-front`` of ``basevolve run``
(issue 36; docs/running.md): a run searching the Pareto front of several metrics, its
reward the front's hypervolume.  Parsed and checked by RunConfig (basevolve.objectives)
and, against the initial program, by basevolve.engine.objective_start."""

from __future__ import annotations

import argparse
from typing import Any

from basevolve.config import REWARD_FRONTS


def add_objective_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--objectives", metavar="NAME:max|min,...",
                   help="two or more metrics of the evaluation to search a Pareto front of, "
                        "e.g. accuracy:max,seconds:min (default: the task's declaration, "
                        "else one score)")
    p.add_argument("--reference-point", metavar="V1,V2,...",
                   help="the hypervolume's reference point, one number per objective "
                        "(default: derived from the initial program and stored)")
    p.add_argument("--reward-front", choices=REWARD_FRONTS, default="trajectory",
                   help="with --objectives: the reward reads the pull's trajectory's front "
                        "or the run's front (default: %(default)s)")


def objective_fields(args: argparse.Namespace) -> dict[str, Any]:
    """The flags as RunConfig fields (strings parsed there)."""
    return {"objectives": args.objectives or {}, "reference_point": args.reference_point or (),
            "reward_front": args.reward_front}


#: run_cmd.RUN_DEFINING's part: with --resume they come from the stored config
OBJECTIVE_FLAGS = ("objectives", "reference_point", "reward_front")

__all__ = ["OBJECTIVE_FLAGS", "add_objective_flags", "objective_fields"]
