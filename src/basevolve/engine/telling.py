"""Telling results: a child or a text reply goes to its protocol, a finished pull to the
allocator, a snapshot to the live display (paper, Algorithm 2: the tell half).

Part of :class:`~basevolve.engine.core.Engine` (a mixin, as
:class:`~basevolve.engine.decisions.Decisions` is for deciding calls): the engine's
state, the rules that tell here.  Each tell writes its event to the store first (the
program row, the text's ``told_seq``, the allocation ``tell``), so a resume replays it
at the same point (:mod:`basevolve.engine.replay`).  Which pull a gain is credited to:
:mod:`basevolve.engine.credit`; the follow-ups a tell queues:
:mod:`basevolve.engine.followups`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from basevolve.engine.budget import CostLedger
from basevolve.engine.credit import Credit
from basevolve.engine.followups import told_with_followups
from basevolve.engine.models import ModelRouter
from basevolve.engine.state import CallJob, Pull, child_of, program_fields
from basevolve.records import Evaluation


class Telling:
    """The engine's tell rules; the state they read and change is the engine's."""

    C: int
    completed: int
    children: int
    valid_children: int
    flops: float
    started: float
    run_id: str
    store: Any
    allocator: Any
    protocols: list[Any]
    models: ModelRouter
    credit: Credit
    ledger: CostLedger | None
    open_pulls: dict[int, Pull]
    llm: dict[asyncio.Task[Any], CallJob]
    progress: Callable[[dict[str, Any]], None] | None

    def insert_program(self, code: str | None, ev: Evaluation, *, generation: int,
                       **row: Any) -> int:
        """Store an evaluated program (the initial one or a child); its id."""
        return self.store.insert_program(self.run_id, code=code, generation=generation,
                                         **program_fields(ev), **row)

    def record_child(self, job: CallJob, code: str | None, ev: Evaluation) -> None:
        """Store ``job``'s child, then tell it to its protocol and the model bandit."""
        p = job.proposal
        pid = self.insert_program(code, ev, generation=p.generation, call_id=job.call_id,
                                  seq=self.store.next_seq(self.run_id),
                                  trajectory=job.pull.trajectory, parent_id=p.parent_id)
        if self.ledger is not None:
            self.ledger.settle_eval(job.call_index, self.ledger.eval_cost(ev))
        best_now = self.protocols[job.pull.trajectory].best.score
        self.models.tell(job.key, job.call_index,  # the model bandit's reward (issue 25, 34)
                         self.models.reward(job.key, ev.score if ev.valid else None, best_now),
                         live=True)
        told_with_followups(self, job, partial(self.credit.tell_child, job,
                                               child_of(pid, code, ev)))
        self.children += 1
        self.valid_children += int(ev.valid)
        self.pull_told(job.pull)

    def tell_text(self, job: CallJob, text: str) -> None:
        """Hand a judge/meta reply to its protocol (event stored first, for resume)."""
        self.store.mark_told(job.call_id, self.store.next_seq(self.run_id))
        self.models.tell(job.key, job.call_index, None, live=True)  # no child: no reward
        told_with_followups(self, job, partial(self.credit.tell_text, job, text))
        self.pull_told(job.pull)

    def pull_told(self, pull: Pull) -> None:
        """One more call of ``pull`` was told; close the pulls that are ready."""
        pull.told += 1
        for ready in self.credit.ready(pull.trajectory):
            self.close_pull(ready)
        self.emit()

    def close_pull(self, pull: Pull) -> None:
        """Tell the allocator the pull's reward (event stored first; the reward:
        engine/credit.py)."""
        reward = self.credit.reward(pull)
        self.store.insert_allocation(
            self.run_id, seq=self.store.next_seq(self.run_id), kind="tell",
            pull_id=pull.pull_id, trajectory=pull.trajectory, reward=reward,
            summary=self.allocator.summary())
        self.allocator.tell(pull.trajectory, reward, ticket=pull.pull_id)
        del self.open_pulls[pull.pull_id]

    # ---------------------------------------------------------------- reporting
    @property
    def best_score(self) -> float:
        return max(p.best.score for p in self.protocols)

    def snapshot(self) -> dict[str, Any]:
        """The run's progress as the live display and ``wall_s`` read it."""
        return {
            "run_id": self.run_id, "calls_completed": self.completed, "budget": self.C,
            "best_score": self.best_score, "flops": self.flops,
            "valid_rate": self.valid_children / self.children if self.children else None,
            "children": self.children, "elapsed_s": time.monotonic() - self.started,
            "in_flight": len(self.llm),
            **({} if self.ledger is None else self.ledger.summary()),
        }

    def emit(self) -> None:
        """Send a snapshot to the progress callback, if the run has one."""
        if self.progress is not None:
            self.progress(self.snapshot())


__all__ = ["Telling"]
