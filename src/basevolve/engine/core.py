"""The run engine: one asyncio loop that owns the budget (paper, Algorithms 1 and 2).

The engine drives two kinds of pure ask/tell objects and does all the I/O:

* K :class:`~basevolve.protocols.Protocol` instances, one per trajectory (parent
  sampling + prompt, paper Section 3; greedy by default);
* one :class:`~basevolve.allocators.Allocator` that picks the trajectory of each pull
  (Algorithm 2).  ``single`` with K = 1 is Algorithm 1: greedy T generations x N.

Algorithm 2, exactly: the first K pulls are ``assign`` pulls (trajectory 0..K-1 from the
initial program, charged to C), every later pull is ``allocator.ask(eligible)`` with
``eligible[i] = protocols[i].can_ask()`` and trajectory i under its cap.  A pull is told
(reward = trajectory best after the pull, or the improvement) when all its calls have
been evaluated.

Concurrency (issue 9): up to ``max_in_flight`` LLM calls are outstanding; evaluations
run on the sandbox pool while other calls are in flight.  Every free slot is filled by an
allocator decision over all K arms (which arms are eligible, and what a pull consists
of: :mod:`basevolve.engine.decisions`).

When a call is decided, sent and told is :mod:`basevolve.engine.ordering`'s rule (issue
23): an LLM slot is held until the reply arrives, the untold pulls are at most
``max_in_flight`` + a few evaluation places, results are told as they arrive -- or, with
``--deterministic``, in the order the calls were issued, every decision at the same
logical point.

``max_in_flight == 1`` (without ``--deterministic``) is the sequential algorithm: the next
decision waits until every earlier call has been evaluated and told, so the allocation
sequence is reproducible for a given seed (and identical to the engine before issue 9; a
regression test pins it).

Text replies: a proposal whose purpose is a :data:`~basevolve.protocols.TEXT_PURPOSES`
(judge, meta prompt) costs one unit of C like any call; its reply goes back to the
protocol with ``tell_text`` (no program is run or stored) and ``calls.told_seq`` records
when, so a resume replays it at the same point.

FLOPs and token budgets (issue 16): with ``--budget-flops`` / ``--budget-tokens`` C is
only a call cap; each call's worst case is reserved in a :class:`CostLedger` before it is
sent and settled when it returns, a call that does not fit waits for calls in flight and
otherwise ends the run (:mod:`basevolve.engine.budget`).  With ``--count-eval-calls`` (a
text task, issue 15) a call budget uses the same ledger, and each call also reserves the
worst case of evaluating its child, settled when the child is told.

The engine's parts (each imports downward only; none imports this module at run time):
deciding calls (:class:`~basevolve.engine.decisions.Decisions`, a mixin), the call path
(here: record, send, receive, parse, evaluate), telling results
(:class:`~basevolve.engine.telling.Telling`, a mixin), when each happens
(:mod:`basevolve.engine.ordering`), follow-ups (:mod:`basevolve.engine.followups`) and
resume (:mod:`basevolve.engine.replay`); the helpers name :class:`Engine` only in
annotations (under ``TYPE_CHECKING``).

Durability (store contract, :mod:`basevolve.store`): a call row is written before the
request, its completion before evaluation, the program before ``tell``, and every
allocation event before the decision is acted on.  Budget: exactly C counted calls
(``CallPolicy``: a call counts once it answered; with ``count_failed_attempts`` every
attempt counts, so the client runs without internal retries and the engine re-issues).
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections import deque
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from basevolve.allocators import ALLOCATORS
from basevolve.config import RunConfig
from basevolve.engine.budget import CostLedger, close_unfinished_pulls, eval_worst_case
from basevolve.engine.credit import Credit
from basevolve.engine.decisions import Decisions, Issue
from basevolve.engine.eval_seeds import keyed
from basevolve.engine.followups import declared_followups, release_followups
from basevolve.engine.models import CallCost, ModelRouter
from basevolve.engine.ordering import order_for
from basevolve.engine.replay import replay_into
from basevolve.engine.state import (
    CallJob,
    Pull,
    attempt_rows,
    call_seed,
    child_from_row,
    child_of,
)
from basevolve.engine.telling import Telling
from basevolve.errors import BudgetError, LLMError, TaskError
from basevolve.llm.flops import call_flops
from basevolve.llm.sending import UnsentCalls
from basevolve.llm.settings import LLMSettings
from basevolve.objectives import objectives_from_stored
from basevolve.prompts import ParsedProgram
from basevolve.protocols import PROTOCOLS, Proposal
from basevolve.records import Completion, Evaluation, Trust
from basevolve.store import RunStore
from basevolve.store.failures import NO_SPACE, kind_of, store_failure
from basevolve.tasks.base import Task

MAX_CONSECUTIVE_FAILURES = 3  # failed calls in a row before the run is failed cleanly


class Engine(Decisions, Telling):
    """Runs (or resumes) one stored run to exactly ``config.budget`` counted calls."""

    def __init__(self, config: RunConfig, *, task: Task, client: Any, evaluator: Any,
                 store: RunStore, settings: LLMSettings | None = None,
                 progress: Callable[[dict[str, Any]], None] | None = None,
                 initial: Evaluation | None = None) -> None:
        self.cfg, self.task, self.client, self.evaluator, self.store = (
            config, task, client, evaluator, store)
        self.settings = settings or LLMSettings()
        self.progress = progress
        self.initial = initial  # the initial program's evaluation, made by the start check
        self.run_id = config.run_id
        self.C = config.budget
        self.K = config.arms
        self.active_params = float(client.model_spec.active_params)
        # which model answers each call (issue 25): one entry unless --model is repeated
        self.models = ModelRouter(config, client, self.settings, store=store,
                                  run_id=config.run_id)
        self.max_tokens = self.models.models[0].max_tokens  # each model has its own (#34)
        proto_cls = PROTOCOLS.get(config.protocol)
        asynchronous = self.K > 1 and config.pull == "call"  # BaSE: arms may share slots
        self.protocols = [proto_cls(task=task, breadth=config.breadth, trajectory=i,
                                    rng=np.random.default_rng([config.seed, i]),
                                    asynchronous=asynchronous, feedback=config.feedback,
                                    objectives=objectives_from_stored(config.objectives),
                                    **config.protocol_params)
                          for i in range(self.K)]
        self.allocator = ALLOCATORS.get(config.allocator)(
            n_arms=self.K, rng=np.random.default_rng(config.seed), horizon=config.bandit_horizon,
            reward_mode=config.reward, **config.allocator_params)
        self.completed = 0
        self.next_call_index = 0
        self.next_key = 0  # calls decided (a re-issue is not a decision): CallJob.key
        self.next_assign = 0
        self.traj_calls = [0] * self.K
        self.open_pulls: dict[int, Pull] = {}
        self.credit = Credit(self)  # which pull earned a gain (engine/credit.py)
        self.reissue: deque[tuple[Proposal, Pull, CallJob]] = deque()
        self.llm: dict[asyncio.Task[Completion], CallJob] = {}
        self.unsent = UnsentCalls()  # waiting for their turn: cost nothing if lost (issue 37)
        self.evals: dict[asyncio.Task[Evaluation], tuple[CallJob, str]] = {}
        self.pending_evals: list[tuple[CallJob, str | None, str | None]] = []
        self.pending_texts: list[tuple[CallJob, str]] = []
        self.failures_in_row = 0
        self.children = 0
        self.valid_children = 0
        self.flops = 0.0
        self.started = time.monotonic()
        # FLOPs/token budgets (issue 16): worst case reserved per call; a call that does
        # not fit waits here while others are in flight (budget.afford).
        self.ledger: CostLedger | None = None
        if config.budget_kind != "calls" or config.count_eval_calls:
            eval_worst = 0.0
            if config.count_eval_calls:  # a text task's answering calls are charged too
                eval_worst = eval_worst_case(task, config.budget_kind, float(getattr(
                    evaluator, "active_params", self.active_params)))
            self.ledger = CostLedger(config.budget_kind, config.budget_limit, self.active_params,
                                     self.max_tokens, self.settings.call_policy.no_usage,
                                     eval_worst=eval_worst, price=self.models.models[0].price)
        self.parked: Issue | None = None
        self.exhausted = False  # the next call's worst case does not fit the cost budget
        self.order = order_for(self)  # when to decide, send and tell (engine/ordering.py)

    # ------------------------------------------------------------------ run
    async def run(self, *, resume: bool = False) -> None:
        """Drive the run to completion; the run's status is ``finished`` on success."""
        self.store.set_status(self.run_id, "running")
        try:
            await self._start_initial()
            if resume:
                replay_into(self)
            for job, text in self.pending_texts:
                self.order.deliver(job, partial(self.tell_text, job, text))
            for job, code, error in self.pending_evals:
                if self.ledger is not None:  # an answered call whose child awaits scoring
                    self.ledger.reserve_eval(job.call_index)
                self._evaluate_or_record(job, code, error)
            self.pending_texts.clear()
            self.pending_evals.clear()
            await self._loop()
        except BaseException as exc:
            for t in (*self.llm, *self.evals):
                t.cancel()
            status = "interrupted" if isinstance(exc, KeyboardInterrupt | asyncio.CancelledError) else "failed"
            try:
                self.store.set_status(self.run_id, status, f"{type(exc).__name__}: {exc}")
            except sqlite3.Error:  # e.g. the disk is still full: the run stays "running",
                pass               # which --resume treats as a crash; keep the first error
            if (isinstance(exc, OSError) and exc.errno in NO_SPACE) or (
                    isinstance(exc, sqlite3.Error) and kind_of(exc) in ("full", "io")):
                # a full disk (issue 22, item 9): one line naming the file and the resume
                raise store_failure(exc, self.store.path, run_id=self.run_id) from None
            raise
        self.store.set_status(self.run_id, "finished")

    async def _loop(self) -> None:
        while True:
            self.order.fill()
            waiting = set(self.llm) | set(self.evals)
            if not waiting:
                if self.exhausted:
                    close_unfinished_pulls(self)
                if self.completed >= self.C or self.exhausted:
                    for pull in self.credit.leftover():  # children that never settled
                        self.close_pull(pull)
                    return
                raise BudgetError(
                    f"no trajectory can take a call with {self.C - self.completed} of {self.C} "
                    "calls left (check --cap and the protocol)")
            done, _ = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
            # Handle in call order so concurrent completions are processed deterministically.
            for t in sorted(done, key=self._order):
                if t in self.llm:
                    self._on_completion(self.llm.pop(t), t.result())
                else:
                    job, code = self.evals.pop(t)
                    self.order.deliver(job, partial(self.record_child, job, code, t.result()))

    def _order(self, t: asyncio.Task[Any]) -> int:
        job = self.llm.get(t) or self.evals[t][0]  # type: ignore[index]
        return job.call_index

    # -------------------------------------------------------------- initial program
    async def _start_initial(self) -> None:
        rows = self.store.query(
            "SELECT * FROM programs WHERE run_id=? AND is_initial=1", (self.run_id,))
        if rows:
            child = child_from_row(rows[0])
        else:
            code = self.task.initial_program
            ev = self.initial if self.initial is not None else await self.evaluator.evaluate(code)
            pid = self.insert_program(code, ev, generation=0, is_initial=1)
            if (stop := self.task.start_failure(ev)) is not None:
                raise TaskError(stop)  # before any LLM call (issue 31, item 9)
            if self.ledger is not None:
                self.ledger.settle_eval(-1, self.ledger.eval_cost(ev))
            child = child_of(pid, code, ev)
        for p in self.protocols:
            p.set_initial(child)
        self.credit.set_initial(child)  # several objectives: the fronts start (issue 36)

    # ------------------------------------------------------------------ calls
    def issue(self, proposal: Proposal, pull: Pull, reissue_of: CallJob | None,
              index: int | None = None, seq: int | None = None) -> None:
        """Record the call (its row before the request) and send it."""
        if index is None:
            index = self.next_call_index
            self.next_call_index += 1
        key = self.next_key if reissue_of is None else reissue_of.key
        seed = call_seed(self.cfg.seed, index)
        if self.order.deterministic:  # by its place in the issue order, not the call index
            seed = call_seed(self.cfg.seed, key) if reissue_of is None else reissue_of.seed
        meta = proposal.meta or None
        arm = self.models.choose(proposal, key=key, call_index=index,
                                 best=self.protocols[pull.trajectory].best.score,
                                 trajectory=pull.trajectory) \
            if reissue_of is None else reissue_of.model
        served = self.models.models[arm]
        if self.ledger is not None:  # stored, so a resume charges a lost call exactly this
            reserved = self.ledger.worst_case(proposal.messages, served.active_params,
                                              served.price, served.max_tokens)
            self.ledger.reserve(index, reserved)
            if not proposal.is_text:
                self.ledger.reserve_eval(index)
            meta = {**(meta or {}), "budget_reserved": reserved}
        call_id = self.store.insert_call(
            self.run_id, call_index=index,
            seq=self.store.next_seq(self.run_id) if seq is None else seq,
            trajectory=pull.trajectory, pull_id=pull.pull_id, generation=proposal.generation,
            slot=proposal.slot, parent_id=proposal.parent_id,
            reissue_of=None if reissue_of is None else reissue_of.call_id,
            seed=seed, messages=proposal.messages, purpose=proposal.purpose, meta=meta,
            model=served.name)
        job = CallJob(call_id, index, proposal, pull, seed, key=key, model=arm)
        if reissue_of is None:
            self.next_key += 1
            self.order.opened(job)
            pull.owed += declared_followups(proposal)  # engine/followups.py
        self.models.sent(arm)
        coro = self.unsent.track(call_id, partial(
            served.complete, proposal.messages, temperature=self.cfg.temperature,
            top_p=self.cfg.top_p, max_tokens=served.max_tokens, seed=seed))
        with self.models.placed(arm, key):  # the call's place in the run (issue 34)
            self.llm[asyncio.ensure_future(coro)] = job
        self.emit()  # "in flight" changed: the live display shows it at once

    def _on_completion(self, job: CallJob, c: Completion) -> None:
        policy = self.settings.call_policy
        served = self.models.models[job.model]  # FLOPs at the answering model's size
        flops = call_flops(c, served.active_params, max_tokens=served.max_tokens,
                           no_usage=policy.no_usage)
        counted = c.ok or policy.count_failed_attempts
        attempts = attempt_rows(c, served.active_params, served.max_tokens, policy.no_usage)
        usd = self.models.cost_usd(job.model, c)
        if usd is not None and self.ledger is not None and self.ledger.kind == "usd":
            # the stored dollars are the charge: capped at (an impossible usage: exactly)
            # what was reserved (issue 32)
            usd = self.ledger.capped(self.ledger.reservation(job.call_index), usd, c)
        last_error = c.attempts[-1].error if c.attempts and not c.ok else None
        self.store.finish_call(job.call_id, status="ok" if c.ok else "failed", counted=counted,
                               fields={
            "raw_text": c.raw_text, "text": c.text, "finish_reason": c.finish_reason,
            "prompt_tokens": c.usage.prompt_tokens, "cached_tokens": c.usage.cached_tokens,
            "completion_tokens": c.usage.completion_tokens, "flops": flops,
            "latency_s": c.latency_s, "error": last_error,
            "cost_usd": usd}, attempts=attempts)
        self.models.answered(job.key, job.model, CallCost(  # for a per-cost model reward
            flops, (c.usage.prompt_tokens or 0) + (c.usage.completion_tokens or 0), usd))
        self.completed += int(counted)
        self.flops += flops
        if self.ledger is not None:
            self.ledger.settle(job.call_index, c, job.proposal.messages, counted,
                               served.active_params, served.price, served.max_tokens)
            if not c.ok:  # no child to evaluate
                self.ledger.settle_eval(job.call_index, 0.0)
        if c.ok:
            self.failures_in_row = 0
            if job.proposal.is_text:
                self.order.deliver(job, partial(self.tell_text, job, c.text))
                return
            parsed = self.parse(job, c.text)
            self._evaluate_or_record(job, parsed.code, parsed.error)
            return
        self.failures_in_row += 1
        if self.failures_in_row >= MAX_CONSECUTIVE_FAILURES:
            raise LLMError(
                f"{self.failures_in_row} LLM calls in a row failed (last: {last_error}); "
                "check --base-url / the server, then continue with "
                f"`basevolve run --resume {self.run_id} --store {self.store.path}`")
        if self.completed + self.reserved() < self.C:
            self.reissue.append((job.proposal, job.pull, job))
        else:
            self.order.dropped(job)
            release_followups(job.pull, job.proposal)  # never told: its follow-ups neither
            self.models.cancel(job.key, job.call_index, live=True)
        self.emit()

    def parse(self, job: CallJob, text: str) -> ParsedProgram:
        """The reply's program, as the trajectory's protocol reads it (full rewrite with
        the task's entry function preferred; diff protocols apply their edits)."""
        proto = self.protocols[job.pull.trajectory]
        proto.observe_reply(job.proposal, text)
        parsed = proto.parse_reply(job.proposal, text)
        check = getattr(self.task, "check_artifact", None)  # text tasks (issue 15)
        if parsed.code is not None and check is not None:
            why = check(parsed.code)
            if why is not None:
                return ParsedProgram(None, why, parsed.method)
        return parsed

    def _evaluate_or_record(self, job: CallJob, code: str | None, error: str | None) -> None:
        if code is None:
            # recorded at the evaluator's trust level: the run has one level, not two
            trust = getattr(self.evaluator, "trust", Trust.SCORER)
            ev = Evaluation(score=0.0, valid=False, trust=trust,
                            error=error or "no program in the reply")
            self.order.deliver(job, partial(self.record_child, job, None, ev))
        else:
            self.evals[keyed(job.key, partial(self.evaluator.evaluate, code))] = (job, code)
