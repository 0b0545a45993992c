"""Which pull earned a gain, and when a pull may be told (issue 23, item 2).

``--reward improvement`` tells the allocator how much a pull improved its trajectory.
Measured as "best when the pull is told minus best when it was opened", one gain is
counted again by every pull of the same arm that was in flight while it happened
(BaSE under concurrency, issue 9), and with greedy N > 1 and ``--pull call`` the whole
generation's gain lands on whichever sibling is told last.  Here a gain is credited
once, to the pull that produced it:

* around every tell of a child (or a text reply) to its protocol the trajectory's best
  is read before and after; a change is a gain of ``max(0, after - before)``;
* it goes to the pull whose child *is* the new best (a greedy generation accepts its
  best child only when its last sibling is told, so that child's pull gets the gain,
  not the last one told); a best that is no told child of an open pull (none today)
  is credited to the pull being told;
* under ``improvement`` a pull is told to the allocator only once its children are
  *settled* (:meth:`Protocol.settled`: the protocol has decided what they do to the
  best, e.g. greedy's generation closed), so its credit is complete; the run's end
  tells what is left (a generation cut short by the budget never decides).

The pull's reward is then the sum of the gains credited to it, so over a trajectory the
rewards add up to the best's whole rise.  ``--reward best`` (the paper's Algorithm 2:
the trajectory's best after the pull) is unchanged: a pull is told as soon as its last
child is.  The credit is rebuilt on resume by the same calls (``engine/replay.py``).

With several objectives (issue 36) a gain is the hypervolume a told child adds to its
trajectory's (or the run's) Pareto front, credited to that child's own pull, and
``best`` is the front's hypervolume: :mod:`basevolve.engine.front_credit`.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from basevolve.engine.front_credit import front_credit_for

if TYPE_CHECKING:
    from basevolve.engine.state import CallJob, Pull
    from basevolve.protocols import Child, Proposal, Protocol


class Credit:
    """Per open pull: the gains it produced and the proposals told so far."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self.improvement = engine.cfg.reward == "improvement"
        self.gain: dict[int, float] = {}  # pull id -> credited gain
        self.told: dict[int, list[Proposal]] = {}  # pull id -> its told proposals
        self.owner: dict[int, int] = {}  # program id -> the pull whose child it is
        # several objectives (issue 36): fronts and hypervolume rewards, else None
        self.fronts = front_credit_for(engine.cfg, engine.K)

    def set_initial(self, child: Child) -> None:
        """Every front starts from the initial program (several objectives only)."""
        if self.fronts is not None:
            self.fronts.set_initial(child.program_id, child.valid, child.metrics)

    def tell_child(self, job: CallJob, child: Child) -> None:
        """Tell ``child`` to its protocol and credit the gain it caused."""
        proto = self.engine.protocols[job.pull.trajectory]
        before = proto.best
        proto.tell(job.proposal, child)
        if child.program_id is not None:
            self.owner[child.program_id] = job.pull.pull_id
        # the model bandit's mark (issue 34): a later child must beat this one to gain
        self.engine.models.seen(job.pull.trajectory, child.score if child.valid else None)
        if self.fronts is not None:  # the hypervolume gain is this child's own: its pull's
            gain = self.fronts.tell(job.pull.trajectory, child.program_id, child.valid,
                                    child.metrics)
            self.told.setdefault(job.pull.pull_id, []).append(job.proposal)
            if gain > 0:
                self.gain[job.pull.pull_id] = self.gain.get(job.pull.pull_id, 0.0) + gain
            return
        self._told(job, proto, before)

    def tell_text(self, job: CallJob, text: str) -> None:
        """Hand a judge/meta reply to its protocol (a text reply may change the best)."""
        proto = self.engine.protocols[job.pull.trajectory]
        before = proto.best
        proto.tell_text(job.proposal, text)
        if self.fronts is not None:  # no child: no front grows (a gate's child is told
            self.told.setdefault(job.pull.pull_id, []).append(job.proposal)  # as a child)
            return
        self._told(job, proto, before)

    def _told(self, job: CallJob, proto: Protocol, before: Child) -> None:
        pull = job.pull
        self.told.setdefault(pull.pull_id, []).append(job.proposal)
        after = proto.best
        if after is before:
            return
        gain = after.score - before.score  # as pull_reward: an unusable best scores 0
        if not math.isfinite(gain) or gain <= 0:
            return
        owner = self.owner.get(after.program_id, pull.pull_id) \
            if after.program_id is not None else pull.pull_id
        if owner not in self.engine.open_pulls:
            owner = pull.pull_id
        self.gain[owner] = self.gain.get(owner, 0.0) + gain

    def ready(self, trajectory: int) -> list[Pull]:
        """Open pulls of ``trajectory`` that may be told now, oldest first."""
        proto = self.engine.protocols[trajectory]
        out = [p for p in self.engine.open_pulls.values()
               if p.trajectory == trajectory and p.done
               and (not self.improvement
                    or all(proto.settled(q) for q in self.told.get(p.pull_id, ())))]
        return sorted(out, key=lambda p: p.pull_id)

    def leftover(self) -> list[Pull]:
        """End of the run: pulls whose calls were all told but whose children never
        settled (a generation the budget cut short)."""
        return sorted((p for p in self.engine.open_pulls.values() if p.done),
                      key=lambda p: p.pull_id)

    def reward(self, pull: Pull) -> float:
        """The reward to tell for ``pull`` (and forget its credit)."""
        gain = self.gain.pop(pull.pull_id, 0.0)
        self.told.pop(pull.pull_id, None)
        if self.improvement:
            return gain
        if self.fronts is not None:  # the front's hypervolume (issue 36)
            return self.fronts.level(pull.trajectory)
        best = self.engine.protocols[pull.trajectory].best.score
        return self.engine.allocator.reward_of(pull.best_before, best)

    def forget(self, pull_id: int) -> None:
        """A cancelled pull: nothing to tell."""
        self.gain.pop(pull_id, None)
        self.told.pop(pull_id, None)


__all__ = ["Credit"]
