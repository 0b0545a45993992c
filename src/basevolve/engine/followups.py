"""A follow-up call continues the pull whose tell asked for it (issue 23, fidelity).

Island protocols answer some tells with a call they must make next, before anything new:
CodeEvolve's code call after its meta-prompt call, ShinkaEvolve's novelty-judge call
after a too-similar proposal and its patch retries, AdaEvolve's paradigm calls and error
retries (:attr:`~basevolve.protocols.Protocol.queued_followups`).  Under BaSE with K
populations such a call used to wait in its population's queue until the allocator chose
that population again, and the run's end dropped it: the call that asked for it was
wasted.  Measured on the simulator (MinMaxDist, C = 128, seed 0, ``--deterministic``):
CodeEvolve under ``thompson_plain`` with K = 10 made 83 meta-prompt calls of which only
45 were followed by their code call (CodeEvolve alone: 55, 49).  A meta call's value is
its code call, and the bandit should judge the two together.

A call that is sure to need a follow-up declares it (``meta["followups"]``; CodeEvolve's
meta-prompt call): from its request until its tell the follow-up is *owed* by its pull and
counted as reserved budget (:meth:`Engine.reserved`), so the run does not start more
such calls at its end than it can follow up.  After every tell the engine extends the
told pull by the follow-ups the tell queued:
its ``units`` and ``to_issue`` grow, the engine sends a pull's remaining calls before any
new decision (:meth:`Engine.next_decision`), the arm is not eligible for a new pull
meanwhile, and the pull is told to the allocator once the follow-ups' children are told,
so its reward includes them.  The budget stays exact: only as many as fit in ``C`` (and
the arm's ``--cap``) are added; the rest stay queued in the protocol as before.  The
extension is stored (the pull's ``units`` in its allocation event) before the follow-up
is sent, so a resume reopens the pull whole and sends what it still owes; in issue order
(``--deterministic``) the decision depends only on the logical state (``completed +
reserved`` does not depend on which replies have arrived).  Protocols without follow-ups
(greedy) are unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from basevolve.engine.core import Engine
    from basevolve.engine.state import CallJob, Pull
    from basevolve.protocols import Proposal


def declared_followups(proposal: Proposal) -> int:
    """Follow-up calls ``proposal`` is sure to need once told (``meta["followups"]``:
    CodeEvolve's meta-prompt call is always followed by its code call)."""
    try:
        return max(0, int(proposal.meta.get("followups", 0)))
    except (TypeError, ValueError):
        return 0


def release_followups(pull: Pull, proposal: Proposal) -> None:
    """``proposal`` was told (or will never be): what it declared is no longer owed."""
    pull.owed = max(0, pull.owed - declared_followups(proposal))


def told_with_followups(engine: Engine, job: CallJob, tell: Callable[[], None]) -> None:
    """Tell ``job``'s result to its protocol (``tell``), then continue its pull with the
    follow-ups that tell queued; what ``job`` declared is no longer owed."""
    pull = job.pull
    queued = engine.protocols[pull.trajectory].queued_followups
    release_followups(pull, job.proposal)
    tell()
    continue_pull(engine, pull, queued)


def continue_pull(engine: Engine, pull: Pull, queued_before: int) -> int:
    """Extend ``pull`` by the follow-ups its protocol queued since it had
    ``queued_before``, as far as the budget and the arm's cap allow; the calls added."""
    arm = pull.trajectory
    new = engine.protocols[arm].queued_followups - queued_before
    if new <= 0:
        return 0
    room = engine.C - engine.completed - engine.reserved()
    if engine.cfg.cap is not None:
        room = min(room, engine.cfg.cap - engine.traj_calls[arm])
    n = min(new, room)
    if n <= 0:
        return 0
    engine.store.extend_pull(engine.run_id, pull.pull_id, n)
    pull.units += n
    pull.to_issue += n
    engine.traj_calls[arm] += n
    return n


__all__ = ["continue_pull", "declared_followups", "release_followups", "told_with_followups"]
