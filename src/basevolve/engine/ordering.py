"""When the engine decides a call, sends it, and tells its result (issue 23, parts 2 and 3).

The engine (:mod:`basevolve.engine.core`) does the I/O; this module holds the two rules
that say *when*.  Both keep the budget exact (a decision is only taken while
``completed + reserved < C``) and both write every event to the store before acting
on it; they differ only in the order of the tells.

**Arrival order** (the default, :class:`ArrivalOrder`).  A result is told to its protocol
and the allocator as soon as it is ready, so the fastest reply goes first.  Two bounds:

* an *LLM slot* is held from the request until the reply arrives (``--max-in-flight``);
* the untold pulls -- calls in flight plus children awaiting evaluation -- are at most
  ``max_in_flight`` + :func:`evaluation_places` (the sandbox workers plus
  :data:`EVAL_MARGIN`).

A new call is decided when both have room.  Why (issue 23, part 3): when the slot was
held until the child was told, the server idled while children were scored (measured
1.45x the saturated bound C*L/16 with real circle-packing programs at L = 0.25 s); when
only the HTTP requests were counted (before issue 9), the unevaluated pulls grew without
bound behind a busy sandbox and the bandit decided blind.  Now the server keeps all its
slots while up to ``evaluation_places`` children are scored, and the allocator never
decides with more than ``max_in_flight + evaluation_places`` pulls without feedback.
Why not a gate on the children awaiting evaluation alone (no decision while more than
``evaluation_places`` wait): replies that arrive together (a wave of 16) then held every
decision until the wave was nearly scored, the server idle meanwhile -- measured 2.2x the
bound against 1.5x for the old rule and 1.46x for this one on the same (loaded) box.
``--max-in-flight 1`` is still sequential Algorithm 2: the next decision waits until
every earlier child is told.

**Issue order** (``--deterministic``, :class:`IssueOrder`).  Results are told in the
order the calls were issued, never in the order they arrive, and every decision is
taken at the same logical point: the run is the one the engine would make if every call
took the same time.  Precisely, with W = ``--window`` (``RunConfig.decision_window``)::

    repeat: decide calls while fewer than W are decided and not yet told
            (and the budget and the protocols allow one);
            tell the oldest untold call (wait for its reply and evaluation)

A decision that is logically due waits for a free LLM slot before it is taken (so a
call row is still written just before its request), and the tells that follow it wait
for it; replies that arrive early are stored at once and their children evaluated at
once, only the *tell* waits.  So with a server that answers a seeded request the same
way, the same seed gives the same calls, allocation events, programs and scores at any
``--max-in-flight`` up to W, and across a kill and ``--resume``: the store's event order
is the logical one, which is what resume replays.  A failed or lost call is sent again
in its place with its own seed (not a new one), so a lost call's reply is the same.
The price is head-of-line waiting: a slow reply holds back the tells after it, and after
W - max_in_flight of them the decisions too (measured in benchmarks/README.md).

What it relies on: a protocol's ``parse_reply`` depends only on the proposal, the reply
and what the protocol knew when it asked (the engine parses a reply when it arrives, so
that its child can be evaluated at once), and every state change happens in ``ask``,
``tell`` or ``tell_text`` (``observe_reply`` only keeps the reply under its proposal).
Every built-in protocol keeps to this (ShinkaEvolve's novelty check reads the island
snapshot taken at ask time; its judge is queued at tell time).

What ``--deterministic`` cannot fix: a server whose reply to a seeded request varies,
failed calls that are counted (``--count-failed-attempts``: the budget changes when they
happen), and evaluation timeouts on a loaded machine.  A cost budget (FLOPs, tokens,
``--count-eval-calls``) is settled by each reply's usage as it arrives, so the run's
config refuses it together with ``--deterministic``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from basevolve.engine.budget import afford
from basevolve.engine.state import CallJob

if TYPE_CHECKING:
    from basevolve.engine.core import Engine

#: Children that may wait for a sandbox worker beyond those being evaluated while every
#: LLM slot stays busy (issue 23): few, so that the bandit's untold pulls stay close to
#: ``max_in_flight``.
EVAL_MARGIN = 2

Tell = Callable[[], None]


def evaluation_places(evaluator: Any) -> int:
    """How many untold pulls beyond ``max_in_flight`` the allocator may have, so that the
    LLM slots stay busy while children are scored: the evaluator's ``concurrency``
    (sandbox workers) plus :data:`EVAL_MARGIN`."""
    import os

    n = getattr(evaluator, "concurrency", None)
    return max(1, int(n if n is not None else (os.cpu_count() or 1))) + EVAL_MARGIN


class ArrivalOrder:
    """The default: tell on arrival; decide when an LLM slot is free and the untold pulls
    are under ``max_in_flight + evaluation_places`` (module docstring)."""

    deterministic = False

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.eval_places = evaluation_places(engine.evaluator)
        self.sequential = engine.cfg.max_in_flight == 1

    def busy(self) -> bool:
        """Whether anything in flight may still change the run's state."""
        return bool(self.engine.llm or self.engine.evals)

    def opened(self, job: CallJob) -> None:
        """A new call (not a re-issue) was decided."""

    def dropped(self, job: CallJob) -> None:
        """A failed call will not be asked again (its budget is spent)."""

    def restore(self, jobs: Iterable[CallJob]) -> None:
        """Resume: the calls decided and not yet told, as the store holds them."""

    def deliver(self, job: CallJob, tell: Tell) -> None:
        tell()

    def fill(self) -> None:
        e = self.engine
        if self.sequential and (e.llm or e.evals):
            return
        untold = e.cfg.max_in_flight + self.eval_places
        while (len(e.llm) < e.cfg.max_in_flight and len(e.llm) + len(e.evals) < untold
               and e.completed + len(e.llm) < e.C and not e.exhausted):
            item, e.parked = e.parked or e.next_call(), None
            if item is None:
                return
            if e.ledger is not None and not afford(e, item):
                return
            e.issue(*item)
            if self.sequential:
                return


class IssueOrder:
    """``--deterministic``: tell in issue order, decide at fixed logical points (module
    docstring).  ``open`` holds the keys (:attr:`CallJob.key`) of the calls decided and
    not yet told, oldest first; ``ready`` the tells whose result is in."""

    deterministic = True

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.window = engine.cfg.decision_window
        self.open: deque[int] = deque()
        self.ready: dict[int, Tell] = {}

    def busy(self) -> bool:
        return bool(self.open)

    def opened(self, job: CallJob) -> None:
        self.open.append(job.key)

    def dropped(self, job: CallJob) -> None:
        self.open.remove(job.key)

    def restore(self, jobs: Iterable[CallJob]) -> None:
        self.open = deque(sorted({j.key for j in jobs}))

    def deliver(self, job: CallJob, tell: Tell) -> None:
        self.ready[job.key] = tell

    def fill(self) -> None:
        """Advance the logical schedule as far as the results and the free slots allow."""
        e = self.engine
        while True:
            self._resend()
            step = self._decide()
            if step == "decided":
                continue
            if step == "wait":  # a decision is due: no tell may pass it
                return
            if self.open and self.open[0] in self.ready:
                self.ready.pop(self.open.popleft())()
                continue
            if self.open and not e.llm and not e.evals and not e.reissue:
                raise RuntimeError(f"--deterministic: call {self.open[0]} is neither in "
                                   "flight nor told (an engine bug; resume the run)")
            return

    def _resend(self) -> None:
        """A failed or lost call goes out again first, in its place and with its seed."""
        e = self.engine
        while e.reissue and len(e.llm) < e.cfg.max_in_flight:
            e.issue(*e.reissue.popleft())

    def _decide(self) -> str:
        """``decided``, ``wait`` (one is due but no LLM slot is free) or ``no``."""
        e = self.engine
        if len(self.open) >= self.window:
            return "no"
        continuing = any(p.to_issue > 0 for p in e.open_pulls.values())
        if not continuing and e.completed + e.reserved() >= e.C:
            return "no"
        if len(e.llm) >= e.cfg.max_in_flight:
            return "wait"
        item = e.next_decision()
        if item is None:
            return "no"
        e.issue(*item)
        return "decided"


def order_for(engine: Engine) -> ArrivalOrder | IssueOrder:
    """The rule of ``engine``'s run (``--deterministic`` or not)."""
    return IssueOrder(engine) if engine.cfg.deterministic else ArrivalOrder(engine)
