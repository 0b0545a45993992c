"""Which runs a sweep still has to do, and in what order (issue 11, part 2).

Order: longest critical path first.  A run's wall time is bounded below by its
sequential rounds, about C / width calls one after another, where width is how many
calls it can have in flight (N for greedy, K x N for BaSE over greedy trajectories, the
run's ``max_in_flight`` for protocols that are asynchronous).  Starting the longest
chains first and filling the endpoint with the wide runs is the classic
longest-processing-time-first rule: the grid's tail is one short run, not a T = C run
started last.  The same rank is the call priority at the endpoint limiter.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from basevolve.config import RunConfig
from basevolve.errors import StoreError
from basevolve.sweep.config import NOT_IDENTITY, SweepConfig
from basevolve.sweep.grid import GridRuns, SweepRun

#: Runs admitted per endpoint until their widths add up to this many times its limit.
#: Why more than 1x: a greedy run has no call in flight while its generation is being
#: evaluated, so exactly 1x would leave slots idle; why bounded at all: every admitted
#: run holds engine state and, when the process dies, in-flight calls to re-issue.
ADMIT_FACTOR = 2.0
#: Beyond ADMIT_FACTOR, one more run is admitted whenever the endpoint has an idle slot
#: and no call waiting (its active runs are all evaluating), up to this many times the
#: limit.  Why: wide greedy runs spend a noticeable time evaluating a whole generation
#: in the sandbox while holding no slot; on a busy machine that left the server idle.
ADMIT_MAX_FACTOR = 4.0
IDLE_CHECK_S = 0.2


def may_admit(busy: float, limit: int, idle: bool) -> bool:
    """Admission rule for one endpoint (see ADMIT_FACTOR and ADMIT_MAX_FACTOR)."""
    if busy < ADMIT_FACTOR * limit:
        return True
    return idle and busy < ADMIT_MAX_FACTOR * limit


def width(cfg: RunConfig) -> int:
    """Calls the run can have in flight at once (an estimate for ordering/admission).

    Greedy alone: one generation of N.  BaSE over greedy trajectories: K generations of
    N, except that with N = 1 the trajectories are asynchronous (several calls of one
    arm in flight) and only ``arm_in_flight`` and ``max_in_flight`` bound them, as for
    the island protocols.
    """
    arm_cap = getattr(cfg, "arm_in_flight", None)
    if cfg.protocol == "greedy" and (cfg.arms == 1 or cfg.breadth > 1):
        w = cfg.arms * cfg.breadth
    else:
        w = cfg.arms * arm_cap if arm_cap else cfg.max_in_flight
    if arm_cap:
        w = min(w, cfg.arms * arm_cap)
    return max(1, min(w, cfg.max_in_flight, cfg.budget))


def rounds(cfg: RunConfig) -> float:
    """Sequential rounds of LLM calls: the run's critical path in service times."""
    return cfg.budget / width(cfg)


@dataclass(frozen=True, slots=True)
class PlannedRun:
    """A run to do, its rank and action.  Small on purpose (issue 22, item 6): a grid of
    100,000 runs is planned as 100,000 of these; ``run`` is a handle made on access."""

    runs: GridRuns
    index: int
    rank: int  # 0 = first to start and first served at the endpoint
    action: str  # "start" | "resume" | "done"

    @property
    def run(self) -> SweepRun:
        return self.runs[self.index]


def plan(sweep: SweepConfig, stored: dict[str, dict[str, Any]]) -> list[PlannedRun]:
    """Every run of the sweep with its rank and what to do; refuses id clashes.

    ``stored`` maps run ids already in the store to their ``runs`` row.  A stored run
    whose config differs from the expanded one (someone reused the id by hand) is
    refused: resuming it would mix two experiments under one name.
    """
    runs = sweep.runs
    per_template = [rounds(t.config) for t in runs.templates]  # a run's rounds: its cell's
    order = sorted(range(len(runs)),
                   key=lambda i: (-per_template[runs.template_index(i)], i))
    out = []
    for rank, i in enumerate(order):
        row = stored.get(runs.run_id_at(i))
        if row is None:
            action = "start"
        else:
            check_same(runs[i], json.loads(row["config_json"]))
            action = "done" if row["status"] == "finished" else "resume"
        out.append(PlannedRun(runs, i, rank, action))
    return out


def check_same(run: SweepRun, stored: dict[str, Any]) -> None:
    # as stored (JSON): a tuple reads back as a list, e.g. ``models`` (issue 25); each
    # model without its base_url (where it is served is not what runs), and a horizon
    # the engine set for a cost budget (sweep/cost.py) is not the file's
    from basevolve.sweep.models import identity

    expected = json.loads(json.dumps(run.config.to_dict(), default=str))
    for key, value in expected.items():
        if key in NOT_IDENTITY or key == "run_id" or key not in stored:
            continue
        if key == "horizon" and value is None:
            continue
        theirs = stored[key]
        if key == "models" and isinstance(theirs, list) and isinstance(value, list):
            value, theirs = identity(value), identity(theirs)
        if theirs != value:
            raise StoreError(
                f"run {run.run_id!r} is already in the store with {key} = {stored[key]!r}, "
                f"but the sweep config gives {value!r}; use another --store or remove the "
                "clash from the config")


__all__ = ["ADMIT_FACTOR", "ADMIT_MAX_FACTOR", "IDLE_CHECK_S", "PlannedRun", "may_admit", "plan", "rounds", "width"]
