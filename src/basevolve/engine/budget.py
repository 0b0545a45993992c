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
from basevolve.records import Completion

#: Budget kinds: ``calls`` is the paper's C; the others are ``--budget-flops/-tokens``.
BUDGET_KINDS: tuple[str, ...] = ("calls", "flops", "tokens")
TOKENS_PER_MESSAGE = 16  # role markers and separators of a chat template, per message
TOKENS_PER_PROMPT = 64  # start/end markers and the generation prompt, per request


def static_prompt_bound(messages: Sequence[Mapping[str, Any]]) -> int:
    """Upper bound on a chat prompt's tokens: bytes of every content + template markers."""
    size = sum(len(str(m.get("content") or "").encode()) for m in messages)
    return size + TOKENS_PER_MESSAGE * len(messages) + TOKENS_PER_PROMPT


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

    def __post_init__(self) -> None:
        if self.kind not in ("flops", "tokens"):
            raise ValueError(f"a cost ledger is for 'flops' or 'tokens', got {self.kind!r}")

    # ----------------------------------------------------------------- worst case
    def _in_unit(self, tokens: float) -> float:
        return 2.0 * self.active_params * tokens if self.kind == "flops" else float(tokens)

    def worst_case(self, messages: Sequence[Mapping[str, Any]]) -> float:
        """The most one call with these messages can cost (one attempt)."""
        return self._in_unit(static_prompt_bound(messages) + self.excess + self.max_tokens)

    def fits(self, cost: float) -> bool:
        return self.spent + sum(self.reserved.values()) + cost <= self.limit

    def reserve(self, key: int, cost: float) -> None:
        self.reserved[key] = cost

    # ------------------------------------------------------------------- settling
    def cost_of(self, completion: Completion) -> float:
        """What an answered (or failed) call really cost, in the budget's unit."""
        hint = max((a.usage.prompt_tokens for a in completion.attempts if a.usage), default=0)
        if self.kind == "flops":
            return sum(attempt_flops(a, self.active_params, max_tokens=self.max_tokens,
                                     no_usage=self.no_usage, prompt_tokens_hint=hint)
                       for a in completion.attempts)
        return float(sum(attempt_tokens(a, max_tokens=self.max_tokens, no_usage=self.no_usage,
                                        prompt_tokens_hint=hint)
                         for a in completion.attempts))

    def settle(self, key: int, completion: Completion,
               messages: Sequence[Mapping[str, Any]]) -> float:
        """Replace call ``key``'s reservation by its real cost; learn the prompt excess."""
        self.reserved.pop(key, None)
        cost = self.cost_of(completion)
        self.spent += cost
        self.learn(max((a.usage.prompt_tokens for a in completion.attempts if a.usage),
                       default=0), messages)
        return cost

    def learn(self, prompt_tokens: int | None, messages: Sequence[Mapping[str, Any]]) -> None:
        if prompt_tokens:
            self.excess = max(self.excess, int(prompt_tokens) - static_prompt_bound(messages))

    # -------------------------------------------------------------------- resume
    def restore(self, calls: Iterable[Mapping[str, Any]],
                attempts: Iterable[Mapping[str, Any]]) -> None:
        """Rebuild ``spent`` and ``excess`` from stored rows (resume).

        ``calls``: rows with ``status, messages_json, meta_json, prompt_tokens``;
        ``attempts``: rows with ``prompt_tokens, completion_tokens, flops``.  An
        attempt's tokens are its reported prompt + completion, or (no usage) its stored
        FLOPs charge converted back (``flops / 2P``: the same worst case).  A call lost in
        the crash (sent, never answered) is charged what was reserved for it (stored in
        its ``meta_json``) unless ``--charge-unanswered none``: the same worst-case rule
        as for unanswered attempts, and never more than the live run had set aside.
        """
        self.spent, self.reserved = 0.0, {}
        unanswered = 0.0
        for c in calls:
            messages = json.loads(c["messages_json"])
            if c["status"] == "ok":
                self.learn(c["prompt_tokens"], messages)
            elif c["status"] in ("lost", "pending"):
                meta = json.loads(c["meta_json"]) if c["meta_json"] else {}
                unanswered += float(meta.get("budget_reserved", self.worst_case(messages)))
        for a in attempts:
            if self.kind == "flops":
                self.spent += float(a["flops"] or 0.0)
            elif a["prompt_tokens"] is not None:
                self.spent += float(a["prompt_tokens"] + (a["completion_tokens"] or 0))
            elif self.active_params > 0:
                self.spent += float(a["flops"] or 0.0) / (2.0 * self.active_params)
        if NoUsagePolicy(self.no_usage) is NoUsagePolicy.WORST_CASE:
            self.spent += unanswered

    def summary(self) -> dict[str, Any]:
        return {"budget_kind": self.kind, "budget_limit": self.limit,
                "budget_spent": self.spent, "budget_left": self.limit - self.spent,
                "budget_unfit_call": self.unfit}


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


def plan_cost_budget(cfg: Any, task: Any, active_params: float, max_tokens: int) -> Any:
    """Check a FLOPs/token budget against the run's first calls; set the bandit horizon.

    The first call's prompt is built by a scratch instance of the run's protocol (the
    initial program as parent), so "a budget smaller than one call" is caught before the
    store is written: Algorithm 2 needs one call per trajectory, so K worst cases must
    fit.  The horizon (EXP3.P's T, the fixed-budget allocators' plan) is the number of
    decisions left if every call cost that worst case, a lower bound on the real number.
    Returns ``cfg`` unchanged for a call budget.
    """
    import dataclasses

    import numpy as np

    from basevolve.errors import ConfigError
    from basevolve.protocols import PROTOCOLS, Child

    if cfg.budget_kind == "calls":
        return cfg
    proto = PROTOCOLS.get(cfg.protocol)(task=task, breadth=cfg.breadth, trajectory=0,
                                        rng=np.random.default_rng([cfg.seed, 0]),
                                        asynchronous=cfg.arms > 1, **cfg.protocol_params)
    proto.set_initial(Child(None, task.initial_program, 0.0, True))
    ledger = CostLedger(cfg.budget_kind, cfg.budget_limit, active_params, max_tokens)
    first = ledger.worst_case(proto.ask().messages)
    unit = "FLOPs" if cfg.budget_kind == "flops" else "tokens"
    if cfg.arms * first > cfg.budget_limit:
        need = f"{cfg.arms} x " if cfg.arms > 1 else ""
        raise ConfigError(
            f"--budget-{cfg.budget_kind} {cfg.budget_limit:.4g} is smaller than "
            f"{need}one call's worst case ({first:.4g} {unit}: prompt bound + --max-tokens "
            f"{max_tokens}); raise the budget, lower --max-tokens"
            + (" or --arms" if cfg.arms > 1 else ""))
    horizon = max(1, int(cfg.budget_limit // first) - cfg.arms)
    return dataclasses.replace(cfg, horizon=horizon)


def budget_report(store: Any, cfg: Any, active_params: float | None) -> dict[str, Any]:
    """The budget fields of a run's summary and ``runs --json``, from the store alone.

    ``budget`` is C for a call budget and null for a FLOPs/token budget (such a run has no
    C; its ``budget`` column holds only the call cap, :func:`basevolve.config.cost_call_cap`);
    ``budget_spent`` / ``budget_left`` are in the budget's unit, computed as a resume
    computes them (lost calls charged what was reserved for them).
    """
    from basevolve.llm.flops import CHARGE_UNANSWERED
    from basevolve.llm.settings import LLMSettings

    kind = cfg.budget_kind
    out: dict[str, Any] = {"budget": cfg.budget if kind == "calls" else None,
                           "budget_kind": kind, "budget_flops": cfg.budget_flops,
                           "budget_tokens": cfg.budget_tokens}
    if kind == "calls":
        done = store.totals(cfg.run_id)["calls_completed"]
        return out | {"budget_spent": done, "budget_left": cfg.budget - done}
    ledger = CostLedger(kind, cfg.budget_limit, float(active_params or 0.0),
                        cfg.max_tokens or LLMSettings().max_tokens,
                        CHARGE_UNANSWERED[cfg.charge_unanswered])
    run = (cfg.run_id,)
    ledger.restore(
        store.query("SELECT status, messages_json, meta_json, prompt_tokens FROM calls "
                    "WHERE run_id=?", run),
        store.query("SELECT a.prompt_tokens, a.completion_tokens, a.flops FROM attempts a "
                    "JOIN calls c USING (call_id) WHERE c.run_id=?", run))
    return out | {"budget_spent": ledger.spent, "budget_left": ledger.limit - ledger.spent}


def afford(engine: Any, item: tuple[Any, ...]) -> bool:
    """Whether the call's worst case fits the cost budget; if not, park it while calls
    are in flight (their unused reservations may free room), else end the run.

    A parked call keeps the place of its ask in the run's event order: its call index
    and ``seq`` are taken now and used when it is sent, so a resume replays the ask
    where it happened.  A call that never fits is never sent nor stored.
    """
    assert engine.ledger is not None
    if engine.ledger.fits(engine.ledger.worst_case(item[0].messages)):
        return True
    if not engine.llm:
        engine.exhausted = True
        engine.ledger.unfit = engine.ledger.worst_case(item[0].messages)
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
            engine.allocator.cancel(pull.trajectory)
            del engine.open_pulls[pull.pull_id]
