"""Cost budgets in a sweep file: ``budget_flops``, ``budget_tokens``, ``budget_usd`` (issue 25).

A run with a cost budget has no call budget C: it runs until the next call's worst case
would not fit (paper, Appendix "Effective FLOPs"; :mod:`basevolve.engine.budget`).  As on
the CLI (:func:`basevolve.config.budget_fields`) such a run gives ``breadth`` (N, default 1)
and neither ``budget`` nor ``depth``; its C is the engine's call cap,
:func:`~basevolve.config.cost_call_cap`.  Why a sweep needs it: comparing methods "under
the same FLOPs budget" (e.g. which models to spend it on) is a grid whose budget axis is
FLOPs, not calls.

A cost-budget run's id reads ``task-model-method-F{flops}-N{N}-s{seed}`` (``tok`` for
tokens, ``usd`` for dollars) instead of ``C{C}-T{T}`` (the cap says nothing about the run).
"""

from __future__ import annotations

from typing import Any

from basevolve.errors import ConfigError

#: The cost-budget keys of a block and their prefix in a run id.
COST_KEYS: dict[str, str] = {"budget_flops": "F", "budget_tokens": "tok", "budget_usd": "usd"}


def resolve(given: dict[str, Any], where: str, source: str) -> dict[str, Any] | None:
    """``given`` with ``budget``/``depth`` set from ``breadth`` for a cost budget; None
    when the run has a call budget."""
    from basevolve.config import cost_call_cap

    kinds = [k for k in COST_KEYS if given.get(k) is not None]
    if not kinds:
        return None
    if len(kinds) > 1:
        raise ConfigError(f"{source}: {where}: give one budget, not {' and '.join(kinds)}")
    kind = kinds[0]
    if given.get("budget") is not None:
        raise ConfigError(f"{source}: {where}: give budget (LLM calls) or {kind}, not both")
    if "depth" in given:
        raise ConfigError(f"{source}: {where}: {kind} sets no number of generations; drop "
                          "depth and give breadth = N (children per generation; default 1)")
    rest = dict(given)
    n = rest.pop("breadth", 1)
    cap = cost_call_cap(n)
    return {**rest, "budget": cap, "depth": cap // n}


def readable(given: dict[str, Any]) -> list[str] | None:
    """The budget part of a cost-budget run's id (``["F1e+15", "N1"]``); None otherwise."""
    for key, prefix in COST_KEYS.items():
        value = given.get(key)
        if value is not None:
            n = given["budget"] // given["depth"]
            return [f"{prefix}{value:g}", f"N{n}"]
    return None


def check_first_calls(cfg: Any) -> None:
    """The run's cost budget holds its first calls' worst case (the check ``basevolve
    run`` makes before storing anything, :func:`~basevolve.engine.budget.plan_cost_budget`),
    made for every cell before the sweep starts rather than when the run's turn comes."""
    if cfg.budget_kind == "calls":
        return
    from basevolve.engine.budget import plan_cost_budget
    from basevolve.engine.models import model_costs
    from basevolve.engine.runner import llm_settings
    from basevolve.llm.catalog import resolve_model
    from basevolve.tasks import load_task

    task = load_task(cfg.task, cfg.task_params)
    active = float(resolve_model(cfg.model, cfg.params).active_params)
    plan_cost_budget(cfg, task, active, cfg.max_tokens or llm_settings(cfg).max_tokens,
                     None, model_costs(cfg))


__all__ = ["COST_KEYS", "check_first_calls", "readable", "resolve"]
