"""Which trajectory gets the next call, and what a pull consists of (paper, Algorithm 2).

Part of :class:`~basevolve.engine.core.Engine` (a mixin: the engine's state, its
decision rules here).  Every free LLM slot is filled by an allocator decision over all
K arms: arm i is *eligible* when it is under its call cap (``--cap``), under its
in-flight cap (``--arm-in-flight``, default: none) and its protocol can ask.  "No call
pending" is *not* a condition: with greedy N = 1 under a bandit the trajectories are
asynchronous (see :mod:`basevolve.protocols.greedy`) -- a call asked while others of the
same trajectory are pending takes the trajectory's current best as parent, exactly what
sequential Algorithm 2 would send if it chose that arm again, and a returning child is
accepted iff it is strictly better than the trajectory's best at that moment.  With
``--pull generation`` (or N > 1) a trajectory keeps its generation barrier and the other
trajectories keep the slots busy.  How each allocator counts the pending pulls of a busy
arm is stated in its own docstring (UCB and Thompson: provisional observations; EXP3.P:
the probability actually used).  Each decision's number of eligible arms is stored
(``allocations.n_eligible``) and summarised as ``decisions_with_choice``.

The first K pulls are ``assign`` pulls (trajectory 0..K-1 from the initial program,
charged to C); every later pull is ``allocator.ask(eligible)``.  A pull is one call
(``--pull call``) or one generation of N calls (``--pull generation``), plus the
follow-up calls its tells ask for (:mod:`basevolve.engine.followups`); its calls are sent
before any new decision, and the budget counts every call not yet answered as
*reserved*, so a run never decides past C.

Why no per-arm in-flight cap by default: the allocators already discount arms with pulls
in flight (their pending-pull rules), so a cap would override the bandit's own choice;
``--arm-in-flight`` is there for users who want to bound how many siblings share one
parent.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any

from basevolve.engine.state import CallJob, Pull
from basevolve.protocols import Proposal

#: A call the engine is about to send: (proposal, pull, reissue_of[, call_index, seq]) with
#: reissue_of the failed or lost call's job (None: a new call); the last two only once a
#: call waiting for cost budget has taken its place in the order.
Issue = tuple[Any, ...]


class Decisions:
    """The engine's decision rules; the state they read is the engine's."""

    cfg: Any
    C: int
    K: int
    completed: int
    next_assign: int
    next_call_index: int
    traj_calls: list[int]
    open_pulls: dict[int, Pull]
    reissue: deque[tuple[Proposal, Pull, CallJob]]
    llm: dict[asyncio.Task[Any], CallJob]
    protocols: list[Any]
    allocator: Any
    store: Any
    run_id: str

    def reserved(self) -> int:
        """Calls in flight, queued for re-issue, or still owed by open pulls."""
        return len(self.llm) + len(self.reissue) + sum(p.to_issue + p.owed
                                                       for p in self.open_pulls.values())

    def next_call(self) -> Issue | None:
        """A failed or lost call to send again, else :meth:`next_decision`."""
        if self.reissue:
            return self.reissue.popleft()
        return self.next_decision()

    def next_decision(self) -> Issue | None:
        """The next call of an open pull, else a new pull's (allocator decision); None
        when the budget is reserved or no trajectory can take a call now."""
        for pull in self.open_pulls.values():
            proto = self.protocols[pull.trajectory]
            if pull.to_issue > 0 and proto.can_ask():
                pull.to_issue -= 1
                return proto.ask(), pull, None
        if self.completed + self.reserved() >= self.C:
            return None
        pull = self._new_pull()
        if pull is None:
            return None
        pull.to_issue -= 1
        return self.protocols[pull.trajectory].ask(), pull, None

    def _eligible(self, i: int) -> bool:
        """Arm i can take the next call: under its caps and its protocol can ask.

        ``unissued``: a generation pull of arm i still has calls to send, which
        ``next_decision`` sends first, so a second decision for arm i would be premature.
        """
        cap_ok = self.cfg.cap is None or self.traj_calls[i] < self.cfg.cap
        arm_cap = self.cfg.arm_in_flight
        room = arm_cap is None or self.protocols[i].n_outstanding < arm_cap
        unissued = any(p.trajectory == i and p.to_issue > 0 for p in self.open_pulls.values())
        return cap_ok and room and not unissued and self.protocols[i].can_ask()

    def _units(self, i: int) -> int:
        n = self.cfg.breadth if self.cfg.pull == "generation" else 1
        n = min(n, self.C - self.completed - self.reserved())
        if self.cfg.cap is not None:
            n = min(n, self.cfg.cap - self.traj_calls[i])
        return n

    def _new_pull(self) -> Pull | None:
        if self.next_assign < self.K:  # Algorithm 2, lines 1-5: one pull per trajectory
            arm, kind, mask = self.next_assign, "assign", None
            self.next_assign += 1
            seq = self.store.next_seq(self.run_id)
        else:
            mask = [self._eligible(i) for i in range(self.K)]
            if not any(mask):
                return None
            seq = self.store.next_seq(self.run_id)  # the pull's id names its ticket
            arm, kind = self.allocator.ask(mask, ticket=seq), "ask"
        units = self._units(arm)
        self.store.insert_allocation(
            self.run_id, seq=seq, kind=kind, pull_id=seq, trajectory=arm, units=units,
            call_index=self.next_call_index, eligible=mask,
            n_eligible=None if mask is None else sum(mask),
            summary=self.allocator.summary() if kind == "ask" else None)
        if kind == "assign":
            self.allocator.assign(arm, ticket=seq)
        return self.open_pull(seq, arm, units)

    def open_pull(self, pull_id: int, arm: int, units: int) -> Pull:
        pull = Pull(pull_id, arm, units, self.protocols[arm].best.score, units)
        self.open_pulls[pull_id] = pull
        self.traj_calls[arm] += units
        return pull


__all__ = ["Decisions", "Issue"]
