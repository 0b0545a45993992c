"""Budgets in FLOPs or tokens: reserve the worst case, settle the real cost (issue 16).

The paper counts LLM calls (C) and admits (Section 3) that a call is not a fair unit of
cost across models; its cost axis is effective FLOPs (Section "Post-hoc FLOPs
accounting").  ``basevolve run --budget-flops X`` / ``--budget-tokens X`` make that the
budget itself.  The rule that keeps such a run from ever exceeding its budget:

* before a call is sent, its **worst case** is reserved: an upper bound on its prompt
  tokens plus ``max_tokens`` of output (FLOPs: ``2 * P_active *`` that, as if nothing
  were cached);
* when it returns, the reservation is replaced by what it really cost (FLOPs as
  :func:`basevolve.llm.flops.call_flops` charges them; tokens = prompt + completion of
  every attempt, cached prompt tokens included because they were sent);
* a call whose worst case does not fit waits while other calls are in flight (their
  unused reservations may free room) and ends the run when nothing is in flight.  The
  unused remainder is then smaller than one worst-case call.

Evaluation calls (issue 15, ``--count-eval-calls``): a text task's answering-LLM calls
are evaluation cost and by default not charged.  With the flag they are charged to the
run's budget in its own unit (one call each for a call budget C, their tokens or FLOPs
-- at the *answering* model's parameter count -- otherwise), under the same rule: a
mutation call reserves, besides its own worst case, the worst case of evaluating its
child (every question asked, uncached, with the longest template and ``answer_max_tokens``
of reply), released when the evaluation is told with its real cost (cache hits cost
nothing).  A call budget then becomes a ledger of kind ``calls`` (each call worth 1), so
such a run ends when the next call and its evaluation would not fit: the unused
remainder is smaller than one call plus one evaluation.  The initial program's
evaluation is charged too.

Why the client does not retry internally under a cost budget (``llm_settings``): a call
with hidden retries could cost several worst cases against one reservation.  Each
attempt is its own reserved call instead, re-issued by the engine.

The prompt bound: a byte-level BPE token covers at least one byte, so a message costs at
most its UTF-8 length in tokens, plus the chat template's role markers
(:data:`TOKENS_PER_MESSAGE`, :data:`TOKENS_PER_PROMPT`).  A server whose template adds
more (a default system prompt) is noticed: the largest excess any answered call showed
is added to every later bound.  Calls lost in a crash (sent, never answered) are charged
their worst case under ``--charge-unanswered worst`` when the run resumes (``none``:
nothing), the rule the FLOPs accounting applies to unanswered attempts.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from basevolve.llm.flops import NoUsagePolicy, attempt_flops, attempt_tokens
from basevolve.llm.usage import TOKENS_PER_MESSAGE as TOKENS_PER_MESSAGE
from basevolve.llm.usage import TOKENS_PER_PROMPT as TOKENS_PER_PROMPT
from basevolve.llm.usage import prompt_bound as static_prompt_bound
from basevolve.objectives import objectives_from_stored
from basevolve.records import IMPOSSIBLE_USAGE, Completion

#: Budget kinds: ``calls`` is the paper's C; the others are ``--budget-flops/-tokens/-usd``.
BUDGET_KINDS: tuple[str, ...] = ("calls", "flops", "tokens", "usd")


def impossible_usage(completion: Completion) -> bool:
    """Whether any attempt's reported usage was refused as impossible
    (:mod:`basevolve.llm.usage`; ``Attempt.error`` starts with IMPOSSIBLE_USAGE)."""
    return any(str(a.error or "").startswith(IMPOSSIBLE_USAGE) for a in completion.attempts)


@dataclass(slots=True)
class CostLedger:
    """The FLOPs or token budget of one run: spent, reserved, and the worst-case rule.

    ``limit`` is in the budget's unit (FLOPs or tokens).  ``reserved`` maps a call's
    index to the worst case reserved for it while it is in flight.
    """

    kind: str
    limit: float
    active_params: float
    max_tokens: int
    no_usage: NoUsagePolicy = NoUsagePolicy.WORST_CASE
    spent: float = 0.0
    excess: int = 0  # largest (reported prompt tokens - static bound) seen so far
    reserved: dict[int, float] = field(default_factory=dict)
    unfit: float | None = None  # worst case of the call that did not fit (the run's end)
    eval_worst: float = 0.0  # --count-eval-calls: one evaluation's worst case (0: free)
    eval_reserved: dict[int, float] = field(default_factory=dict)
    price: Any = None  # --budget-usd: the run's (first) model's llm.prices.Price

    def __post_init__(self) -> None:
        if self.kind not in BUDGET_KINDS:
            raise ValueError(f"a budget ledger is for {', '.join(BUDGET_KINDS)}, got {self.kind!r}")

    # ----------------------------------------------------------------- worst case
    def _in_unit(self, tokens: float, params: float | None = None) -> float:
        p = self.active_params if params is None else params
        return 2.0 * p * tokens if self.kind == "flops" else float(tokens)

    def worst_case(self, messages: Sequence[Mapping[str, Any]],
                   params: float | None = None, price: Any = None,
                   max_tokens: int | None = None) -> float:
        """The most one call with these messages can cost (one attempt); ``params``,
        ``price`` and ``max_tokens``: those of the model chosen for it (issues 25, 34;
        default: the run's)."""
        cap = self.max_tokens if max_tokens is None else max_tokens
        if self.kind == "calls":
            return 1.0
        if self.kind == "usd":  # every prompt token at the dearer prompt rate
            from basevolve.llm.prices import worst_case_usd

            return worst_case_usd(static_prompt_bound(messages) + self.excess,
                                  cap, price or self.price)
        return self._in_unit(static_prompt_bound(messages) + self.excess + cap, params)

    def fits(self, cost: float) -> bool:
        committed = self.spent + sum(self.reserved.values()) + sum(self.eval_reserved.values())
        return committed + cost <= self.limit

    def reserve(self, key: int, cost: float) -> None:
        self.reserved[key] = cost

    def reserve_eval(self, key: int) -> None:
        """Set aside the worst case of evaluating call ``key``'s child (if charged)."""
        if self.eval_worst > 0:
            self.eval_reserved[key] = self.eval_worst

    def settle_eval(self, key: int, cost: float) -> None:
        """Replace call ``key``'s evaluation reservation by what it cost (0: none ran)."""
        self.eval_reserved.pop(key, None)
        self.spent += cost

    def eval_cost(self, evaluation: Any) -> float:
        """What an evaluation cost in the budget's unit (0 unless evaluations are charged):
        answering calls sent (cache hits are free), their tokens, or their FLOPs."""
        if self.eval_worst <= 0:
            return 0.0
        if self.kind == "calls":
            return float(sum(1 for r in evaluation.eval_calls if not r.get("cache_hit")))
        return float(evaluation.eval_flops if self.kind == "flops" else evaluation.eval_tokens)

    # ------------------------------------------------------------------- settling
    def cost_of(self, completion: Completion, params: float | None = None,
                price: Any = None, max_tokens: int | None = None) -> float:
        """What an answered (or failed) call really cost, in the budget's unit."""
        cap = self.max_tokens if max_tokens is None else max_tokens
        if self.kind == "calls":
            return 1.0
        if self.kind == "usd":
            return usd_of(completion, price or self.price, cap, self.no_usage)
        hint = max((a.usage.prompt_tokens for a in completion.attempts if a.usage), default=0)
        if self.kind == "flops":
            p = self.active_params if params is None else params
            return sum(attempt_flops(a, p, max_tokens=cap,
                                     no_usage=self.no_usage, prompt_tokens_hint=hint)
                       for a in completion.attempts)
        return float(sum(attempt_tokens(a, max_tokens=cap, no_usage=self.no_usage,
                                        prompt_tokens_hint=hint)
                         for a in completion.attempts))

    def capped(self, reserved: float | None, cost: float, completion: Completion) -> float:
        """A call's charge: never more than ``reserved`` (issue 32, item 1), and exactly
        ``reserved`` -- its worst case -- when any attempt's usage was impossible (the
        server's counts are not believed, so nothing smaller is either)."""
        if reserved is None:
            return cost
        return reserved if impossible_usage(completion) else min(cost, reserved)

    def reservation(self, key: int) -> float | None:
        """What was set aside for call ``key`` (None: nothing, e.g. a call budget)."""
        return self.reserved.get(key)

    def settle(self, key: int, completion: Completion,
               messages: Sequence[Mapping[str, Any]], counted: bool = True,
               params: float | None = None, price: Any = None,
               max_tokens: int | None = None) -> float:
        """Replace call ``key``'s reservation by its real cost; learn the prompt excess.

        ``counted``: for a call budget, whether the call counts (an uncounted failed call
        is re-issued and costs nothing, as C counts it).

        The invariant (issue 32, item 1): a call is never charged more than was reserved
        for it, in any unit.  Usage a server could not have measured is refused before
        (:mod:`basevolve.llm.usage`); what is left above the reservation (a prompt of a
        server template longer than the excess learned so far) is cut to it here, and
        :meth:`restore` cuts a stored call the same way, so a resume spends the same."""
        reserved = self.reserved.pop(key, None)
        cost = self.cost_of(completion, params, price, max_tokens) \
            if counted or self.kind != "calls" \
            else 0.0
        cost = self.capped(reserved, cost, completion) if self.kind != "calls" else cost
        self.spent += cost
        self.learn(max((a.usage.prompt_tokens for a in completion.attempts if a.usage),
                       default=0), messages)
        return cost

    def learn(self, prompt_tokens: int | None, messages: Sequence[Mapping[str, Any]]) -> None:
        if prompt_tokens:
            self.excess = max(self.excess, int(prompt_tokens) - static_prompt_bound(messages))

    # -------------------------------------------------------------------- resume
    def restore(self, calls: Iterable[Mapping[str, Any]],
                attempts: Iterable[Mapping[str, Any]],
                evaluations: Mapping[str, float] | None = None,
                params_of: Mapping[str | None, float] | None = None) -> None:
        """Rebuild ``spent`` and ``excess`` from stored rows (resume).

        ``calls``: rows with ``status, messages_json, meta_json, prompt_tokens`` (and
        ``call_id``); ``attempts``: rows with ``prompt_tokens, completion_tokens, flops``
        (and ``call_id``: then each call's charge is cut to what was reserved for it, as
        :meth:`settle` cuts it).  An
        attempt's tokens are its reported prompt + completion, or (no usage) its stored
        FLOPs charge converted back (``flops / 2P``: the same worst case).  A call lost in
        the crash (sent, never answered) is charged what was reserved for it (stored in
        its ``meta_json``) unless ``--charge-unanswered none``: the same worst-case rule
        as for unanswered attempts, and never more than the live run had set aside.
        ``evaluations`` (``--count-eval-calls``): the stored evaluation cost, as
        :meth:`basevolve.store.RunStore.eval_totals` gives it.  A call budget's ledger
        counts calls: counted calls plus evaluation calls sent.  ``params_of``: each
        model's active parameters by name, for attempts rows that carry ``model``
        (several models, issue 25).
        """
        self.spent, self.reserved, self.eval_reserved = 0.0, {}, {}
        if self.eval_worst > 0 and evaluations is not None:
            self.spent += float({"calls": evaluations["eval_calls"],
                                 "flops": evaluations["eval_flops"],
                                 "tokens": evaluations["eval_tokens"]}[self.kind])
        if self.kind == "calls":
            self.spent += float(sum(int(c["counted"]) for c in calls))
            return
        unanswered = 0.0
        charged: dict[Any, float] = {}  # call_id (None: rows without one) -> its charge
        lied: set[Any] = set()  # calls with an attempt whose usage was impossible
        for a in attempts:
            cid = a["call_id"] if "call_id" in a.keys() else None
            charged[cid] = charged.get(cid, 0.0) + self._stored_attempt(a, params_of)
            if "error" in a.keys() and str(a["error"] or "").startswith(IMPOSSIBLE_USAGE):
                lied.add(cid)
        for c in calls:
            messages = json.loads(c["messages_json"])
            meta = json.loads(c["meta_json"]) if c["meta_json"] else {}
            if c["status"] == "ok":
                self.learn(c["prompt_tokens"], messages)
            elif c["status"] in ("lost", "pending"):
                unanswered += float(meta.get("budget_reserved", self.worst_case(messages)))
            cid = c["call_id"] if "call_id" in c.keys() else None
            cost = float(c["cost_usd"] or 0.0) if self.kind == "usd" else \
                charged.pop(cid, 0.0) if cid is not None else 0.0
            if "budget_reserved" in meta:  # never more than was reserved (as settle), and
                # the reservation itself when the usage was impossible (as capped)
                cost = float(meta["budget_reserved"]) if cid is not None and cid in lied \
                    else min(cost, float(meta["budget_reserved"]))
            self.spent += cost
        if self.kind != "usd":  # attempts of rows that name no call: uncut
            self.spent += sum(charged.values())
        if NoUsagePolicy(self.no_usage) is NoUsagePolicy.WORST_CASE:
            self.spent += unanswered

    def _stored_attempt(self, a: Any, params_of: Mapping[str | None, float] | None) -> float:
        """One stored attempt's charge in the budget's unit (tokens or FLOPs)."""
        if self.kind == "flops":
            return float(a["flops"] or 0.0)
        if a["prompt_tokens"] is not None:
            return float(a["prompt_tokens"] + (a["completion_tokens"] or 0))
        # no usage: FLOPs back to tokens at the size of the call's model
        p = (params_of or {}).get(a["model"] if "model" in a.keys() else None,
                                  self.active_params)
        return float(a["flops"] or 0.0) / (2.0 * p) if p > 0 else 0.0

    def summary(self) -> dict[str, Any]:
        if self.kind == "calls":  # --count-eval-calls: C counts calls and evaluation calls
            return {"budget_spent": self.spent, "budget_left": self.limit - self.spent,
                    "budget_unfit_call": self.unfit}
        return {"budget_kind": self.kind, "budget_limit": self.limit,
                "budget_spent": self.spent, "budget_left": self.limit - self.spent,
                "budget_unfit_call": self.unfit}


def usd_of(completion: Completion, price: Any, max_tokens: int,
           no_usage: NoUsagePolicy = NoUsagePolicy.WORST_CASE) -> float:
    """A call's dollars over all its attempts (issue 25): an attempt with usage at its
    model's price, one without as its tokens are charged (:func:`attempt_tokens`: the
    worst case under ``--charge-unanswered worst``), every prompt token uncached."""
    from basevolve.llm.prices import call_cost_usd, worst_case_usd

    hint = max((a.usage.prompt_tokens for a in completion.attempts if a.usage), default=0)
    total = 0.0
    for a in completion.attempts:
        if a.usage is not None:
            total += call_cost_usd(a.usage, price)
        else:
            tokens = attempt_tokens(a, max_tokens=max_tokens, no_usage=no_usage,
                                    prompt_tokens_hint=hint)
            total += worst_case_usd(min(hint, tokens), tokens - min(hint, tokens), price)
    return total


def parse_amount(text: str | float | int, what: str) -> float:
    """``3e15``, ``3.5P``, ``200k``, ``2M`` -> a positive number (SI suffixes k M G T P E).

    Raises ``ValueError`` naming ``what`` and the bad value.
    """
    if isinstance(text, bool):
        raise ValueError(f"{what} must be a number, got {text!r}")
    if isinstance(text, int | float):
        value = float(text)
    else:
        s = str(text).strip().replace("_", "").replace(",", "")
        scale = 1.0
        suffixes = {"k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18}
        if s and s[-1] in suffixes:
            scale, s = suffixes[s[-1]], s[:-1]
        try:
            value = float(s) * scale
        except ValueError:
            raise ValueError(f"{what} must be a number such as 3e15, 3.5P or 200k, "
                             f"got {text!r}") from None
    if not value > 0 or value != value or value == float("inf"):
        raise ValueError(f"{what} must be a finite number > 0, got {text!r}")
    return value


def eval_worst_case(task: Any, kind: str, active_params: float) -> float:
    """The most one evaluation of a text task's child can cost (``--count-eval-calls``):
    every question asked uncached with the longest allowed template, each reply at
    ``answer_max_tokens``; in the budget's unit, FLOPs at the answering model's
    ``active_params``."""
    requests = task.worst_case_requests()
    if kind == "calls":
        return float(len(requests))
    max_tokens = int(task.answer_settings()["max_tokens"])
    tokens = sum(static_prompt_bound(m) + max_tokens for m in requests)
    return 2.0 * active_params * tokens if kind == "flops" else float(tokens)


def plan_cost_budget(cfg: Any, task: Any, active_params: float, max_tokens: int,
                     eval_params: float | None = None,
                     models: Sequence[tuple[float, Any]] = ()) -> Any:
    """Check a FLOPs/token budget against the run's first calls; set the bandit horizon.

    The first call's prompt is built by a scratch instance of the run's protocol (the
    initial program as parent), so "a budget smaller than one call" is caught before the
    store is written: Algorithm 2 needs one call per trajectory, so K worst cases must
    fit.  The horizon (EXP3.P's T, the fixed-budget allocators' plan) is the number of
    decisions left if every call cost that worst case, a lower bound on the real number.
    With ``--count-eval-calls`` (text tasks; ``eval_params`` = the answering model's
    active parameters) the initial evaluation and each call's evaluation count too, for
    a call budget as well.  Returns ``cfg`` unchanged for a plain call budget.
    """
    import dataclasses

    import numpy as np

    from basevolve.errors import ConfigError
    from basevolve.protocols import PROTOCOLS, Child

    evals = bool(getattr(cfg, "count_eval_calls", False))
    if evals and not callable(getattr(task, "evaluate_text", None)):  # answering calls
        raise ConfigError(f"--count-eval-calls charges the answering-LLM calls of a text task "
                          f"(e.g. prompt_optimization); task {task.name!r} makes none")
    if cfg.budget_kind == "calls" and not evals:
        return cfg
    eval_worst = eval_worst_case(task, cfg.budget_kind, float(eval_params or active_params)) \
        if evals else 0.0
    if cfg.budget_kind == "calls":
        need = eval_worst + cfg.arms * (1 + eval_worst)
        if need > cfg.budget:
            raise ConfigError(
                f"--count-eval-calls: the initial evaluation ({eval_worst:.0f} answer calls) and "
                f"{cfg.arms} first call(s) with their evaluations need up to {need:.0f} calls, "
                f"more than --budget {cfg.budget}; raise --budget or lower --task-param limit")
        return cfg
    proto = PROTOCOLS.get(cfg.protocol)(task=task, breadth=cfg.breadth, trajectory=0,
                                        rng=np.random.default_rng([cfg.seed, 0]),
                                        asynchronous=cfg.arms > 1, feedback=cfg.feedback,
                                        objectives=objectives_from_stored(cfg.objectives),
                                        **cfg.protocol_params)
    proto.set_initial(Child(None, task.initial_program, 0.0, True))
    ledger = CostLedger(cfg.budget_kind, cfg.budget_limit, active_params, max_tokens,
                        price=None if not models else models[0][1])
    messages = proto.ask().messages
    # each model's (params, price, max_tokens): its own cap (issue 34)
    first = max(ledger.worst_case(messages, *m) for m in models or
                [(active_params, None)]) + eval_worst
    unit = {"flops": "FLOPs", "usd": "USD"}.get(cfg.budget_kind, "tokens")
    if eval_worst + cfg.arms * first > cfg.budget_limit:
        need = f"{cfg.arms} x " if cfg.arms > 1 else ""
        evaluated = (f" with its evaluation (--count-eval-calls), after the initial "
                     f"evaluation's {eval_worst:.4g}" if evals else "")
        raise ConfigError(
            f"--budget-{cfg.budget_kind} {cfg.budget_limit:.4g} is smaller than "
            f"{need}one call's worst case ({first:.4g} {unit}: prompt bound + --max-tokens "
            f"{max_tokens}{evaluated}); raise the budget, lower --max-tokens"
            + (" or --arms" if cfg.arms > 1 else "")
            + (" (the evaluation's worst case shrinks with --task-param limit, "
               "max_template_chars and answer_max_tokens)" if evals else ""))
    horizon = max(1, int((cfg.budget_limit - eval_worst) // first) - cfg.arms)
    return dataclasses.replace(cfg, horizon=horizon)


def budget_report(store: Any, cfg: Any, active_params: float | None,
                  params_of: Mapping[str | None, float] | None = None) -> dict[str, Any]:
    """The budget fields of a run's summary and ``runs --json``, from the store alone.

    ``budget`` is C for a call budget and null for a FLOPs/token budget (such a run has no
    C; its ``budget`` column holds only the call cap, :func:`basevolve.config.cost_call_cap`);
    ``budget_spent`` / ``budget_left`` are in the budget's unit, computed as a resume
    computes them (lost calls charged what was reserved for them).
    """
    from basevolve.llm.flops import CHARGE_UNANSWERED
    from basevolve.llm.settings import default_max_tokens

    kind = cfg.budget_kind
    evals = bool(getattr(cfg, "count_eval_calls", False))
    out: dict[str, Any] = {"budget": cfg.budget if kind == "calls" else None,
                           "budget_kind": kind, "budget_flops": cfg.budget_flops,
                           "budget_tokens": cfg.budget_tokens,
                           "budget_usd": getattr(cfg, "budget_usd", None)}
    if kind == "calls":
        totals = store.totals(cfg.run_id)
        done = totals["calls_completed"] + (totals["eval_calls"] if evals else 0)
        return out | {"budget_spent": done, "budget_left": cfg.budget - done}
    ledger = CostLedger(kind, cfg.budget_limit, float(active_params or 0.0),
                        cfg.max_tokens or default_max_tokens(cfg.model),
                        CHARGE_UNANSWERED[cfg.charge_unanswered], eval_worst=float(evals))
    run = (cfg.run_id,)
    ledger.restore(
        store.query("SELECT call_id, status, messages_json, meta_json, prompt_tokens, counted, "
                    "cost_usd FROM calls WHERE run_id=?", run),
        store.query("SELECT a.call_id, a.prompt_tokens, a.completion_tokens, a.flops, a.error, "
                    "c.model FROM attempts a JOIN calls c USING (call_id) WHERE c.run_id=?", run),
        store.eval_totals(cfg.run_id), params_of)
    return out | {"budget_spent": ledger.spent, "budget_left": ledger.limit - ledger.spent}


def afford(engine: Any, item: tuple[Any, ...]) -> bool:
    """Whether the call's worst case fits the cost budget; if not, park it while calls
    are in flight (their unused reservations may free room), else end the run.

    A parked call keeps the place of its ask in the run's event order: its call index
    and ``seq`` are taken now and used when it is sent, so a resume replays the ask
    where it happened.  A call that never fits is never sent nor stored.
    """
    assert engine.ledger is not None
    # the dearest model this call may go to, or of those that fit (issue 25): the
    # reservation made once the model is chosen is no larger
    reissued = item[2] if len(item) > 2 else None
    worst = engine.models.worst_case(engine.ledger, item[0],
                                     None if reissued is None else reissued.model)
    if not item[0].is_text:  # a program/template child: its evaluation may be charged
        worst += engine.ledger.eval_worst
    if engine.ledger.fits(worst):
        return True
    if not engine.llm and not engine.evals:  # nothing in flight can free room
        engine.exhausted = True
        engine.ledger.unfit = worst
        return False
    if len(item) == 3:
        item = (*item, engine.next_call_index, engine.store.next_seq(engine.run_id))
        engine.next_call_index += 1
    engine.parked = item
    return False


def close_unfinished_pulls(engine: Any) -> None:
    """End of a cost-budget run: a pull that lost calls to the budget (never asked,
    or a failed call never re-sent) is told with the children it got, or cancelled
    when it got none, so the allocator log is complete.  Nothing is in flight here,
    so every answered call of the pull has been told."""
    for pull in list(engine.open_pulls.values()):
        if pull.told > 0:
            pull.units = pull.told
            engine.close_pull(pull)
        else:
            engine.store.insert_allocation(
                engine.run_id, seq=engine.store.next_seq(engine.run_id), kind="cancel",
                pull_id=pull.pull_id, trajectory=pull.trajectory,
                summary=engine.allocator.summary())
            engine.allocator.cancel(pull.trajectory, ticket=pull.pull_id)
            engine.credit.forget(pull.pull_id)
            del engine.open_pulls[pull.pull_id]
