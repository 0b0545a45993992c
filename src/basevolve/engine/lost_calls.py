"""Calls lost in flight are charged as documented (issue 24, item 3).

A call is *lost* when the run stopped while it was in flight -- Ctrl-C, a cancelled
``run_async``, a failure elsewhere, a killed process (found on resume).  Its request was
sent and never answered, which is exactly what ``--charge-unanswered`` is about
(:mod:`basevolve.llm.flops`): under the default ``worst`` the server may have computed
the whole request (with the embedded model such calls had run for 25 minutes), so it is
charged its worst case; under ``none`` nothing.  Before, lost calls were stored with
``flops`` NULL and counted as 0 whatever the policy.

The worst case of a lost call is the one the cost ledger reserves for a call
(:mod:`basevolve.engine.budget`): its prompt's upper bound (every byte a token, plus the
chat template's markers) plus ``max_tokens`` of output, as if nothing were cached.  A
call of a FLOPs or token budget stored what was reserved for it when it was sent
(``meta.budget_reserved``) and is charged exactly that, so a resumed cost budget still
never exceeds its limit (the ledger charges the same reservation, :meth:`CostLedger.restore`).
The charge is written to the call's ``flops`` (so ``flops`` totals, the dashboard and a
resumed run's counters include it) and reported apart (``flops_lost``,
``calls_lost_charged``; part of ``flops_unmeasured``, an estimate, not a measurement).

When: as soon as the engine stops with calls in flight (the interrupted run's own summary
and ``basevolve runs`` show the charge), and on resume for calls a killed process left
``pending``.

A call that was never sent costs nothing (issue 37, item 1): stored ``pending`` but still
waiting for its turn (a sweep endpoint's ``limit``, on the local or the Ray executor, or
a model's ``max_in_flight``) when the run stopped, it is marked ``lost`` with 0 FLOPs
whatever the policy -- the engine knows which calls those are
(:mod:`basevolve.llm.sending`).  A process killed outright (SIGKILL) leaves no such
record: its pending calls are charged on resume as sent, the safe side of a budget.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Collection, Mapping
from typing import Any

from basevolve.engine.budget import static_prompt_bound
from basevolve.llm.flops import CHARGE_UNANSWERED, NoUsagePolicy


def lost_call_flops(row: Mapping[str, Any], kind: str, active_params: float, max_tokens: int,
                    no_usage: NoUsagePolicy) -> float:
    """The FLOPs a lost call is charged (module docstring); ``row`` has ``messages_json``
    and ``meta_json``; ``kind`` is the run's budget kind."""
    if NoUsagePolicy(no_usage) is NoUsagePolicy.EXCLUDE:
        return 0.0
    meta = json.loads(row["meta_json"]) if row["meta_json"] else {}
    reserved = meta.get("budget_reserved") if isinstance(meta, dict) else None
    if isinstance(reserved, int | float) and kind == "flops":
        return float(reserved)
    if isinstance(reserved, int | float) and kind == "tokens":
        tokens = float(reserved)
    else:
        tokens = float(static_prompt_bound(json.loads(row["messages_json"])) + max_tokens)
    return 2.0 * float(active_params) * tokens


def charge_lost_calls(store: Any, cfg: Any, active_params: float, max_tokens: int,
                      params_of: Mapping[str | None, float] | None = None,
                      max_tokens_of: Mapping[str | None, int] | None = None,
                      unsent: Collection[int] = ()) -> int:
    """Turn the run's ``pending`` calls into ``lost`` ones charged under the run's
    ``--charge-unanswered``; the number of calls marked.  ``params_of``: each model's
    active parameters by name (several models, issue 25: a call is charged at its own);
    ``max_tokens_of``: each model's completion cap by name (issue 34).  ``unsent``: ids
    of calls never sent (waiting for their turn), charged 0.  A store that cannot be
    written (a full disk: the error that stopped the run is the one to report) is left as
    it is; a resume marks those calls later."""
    policy = CHARGE_UNANSWERED[cfg.charge_unanswered]

    def charge(row: Mapping[str, Any]) -> float:
        if row["call_id"] in unsent:
            return 0.0
        params = (params_of or {}).get(row["model"], active_params)
        cap = (max_tokens_of or {}).get(row["model"], max_tokens)
        return lost_call_flops(row, cfg.budget_kind, params, cap, policy)

    try:
        return len(store.mark_lost(cfg.run_id, charge))
    except sqlite3.Error:
        return 0


def lost_words(totals: Mapping[str, Any], policy: str) -> str | None:
    """One line on a run's lost calls and their charge (None when it has none)."""
    lost = int(totals.get("calls_lost") or 0)
    if not lost:
        return None
    charged = int(totals.get("calls_lost_charged") or 0)
    flops = float(totals.get("flops_lost") or 0.0)
    if policy == "none":
        return (f"{lost} call(s) lost in flight, charged 0 FLOPs (--charge-unanswered none); "
                "each is asked again on resume")
    unsent = f", {lost - charged} never sent (charged 0)" if lost > charged else ""
    return (f"{lost} call(s) lost in flight, {charged} charged their worst case: {flops:.4g} "
            f"FLOPs (--charge-unanswered worst){unsent}; each is asked again on resume")


__all__ = ["charge_lost_calls", "lost_call_flops", "lost_words"]
