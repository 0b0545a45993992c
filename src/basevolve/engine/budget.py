"""Budgets in FLOPs or tokens: reserve the worst case, settle the real cost (issue 16).

This module holds the cost rules of each unit of work (planning a run against its first
calls, a call that does not fit, a text task's evaluation, the summary's budget fields);
the ledger they keep is :class:`~basevolve.engine.ledger.CostLedger` (issue 33: the
ledger vs. the rules), re-exported here.

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

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from basevolve.engine.ledger import BUDGET_KINDS as BUDGET_KINDS
from basevolve.engine.ledger import CostLedger as CostLedger
from basevolve.engine.ledger import impossible_usage as impossible_usage
from basevolve.engine.ledger import usd_of as usd_of
from basevolve.errors import ConfigError
from basevolve.llm.flops import CHARGE_UNANSWERED
from basevolve.llm.settings import default_max_tokens
from basevolve.llm.usage import TOKENS_PER_MESSAGE as TOKENS_PER_MESSAGE
from basevolve.llm.usage import TOKENS_PER_PROMPT as TOKENS_PER_PROMPT
from basevolve.llm.usage import prompt_bound as static_prompt_bound
from basevolve.objectives import objectives_from_stored
from basevolve.protocols.base import PROTOCOLS, Child


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
