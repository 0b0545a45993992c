"""The cost ledger of a FLOPs, token or dollar budget: reserve, settle, restore (issue 16).

What a run's budget holds at any moment, and the one rule that keeps a run inside it
(the rule and the prompt bound are explained in :mod:`basevolve.engine.budget`, which
applies the ledger to each unit of work: planning a run, a call that does not fit, the
summary).  Split from it (issue 33) so the ledger imports nothing but the LLM layer's
cost functions and the records.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from basevolve.llm.flops import NoUsagePolicy, attempt_flops, attempt_tokens
from basevolve.llm.prices import call_cost_usd, worst_case_usd
from basevolve.llm.usage import prompt_bound as static_prompt_bound
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


__all__ = ["BUDGET_KINDS", "CostLedger", "impossible_usage", "static_prompt_bound", "usd_of"]
