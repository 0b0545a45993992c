"""The run page's per-model section: several models in one run (issue 25, part 1).

Why a section of its own, and only for some runs: a run that mixed models (or priced its
calls) spends its budget across models, and the question the page must answer is what
each model's calls bought.  The rows are :func:`basevolve.store.per_model.model_breakdown`
itself -- the function the summary, ``runs --json``, ``export`` and ``analyze`` read -- so
the dashboard cannot disagree with them.  A single-model, unpriced run gets no section
and the run page's JSON stays what it was.

Why the run's calls decide, not only its config: whether any call was priced or answered
by another model than the run's first comes as two bits of the one narrow scan the page
already makes (:mod:`.run_cache`), so deciding costs a long single-model run almost
nothing (2-4 ms of ~190 ms at 20,000 calls).
The breakdown is a second pass (grouped in SQLite, then the run's programs in event
order), paid only by runs that have the section.

The model bandit (``--model-allocator``; :mod:`basevolve.engine.models`) stores each
decision and reward in ``model_events``, as the trajectory allocator does in
``allocations``.  The page shows its decisions per model over the run (cumulative,
evenly thinned like the pulls per arm), each model's mean reward, and the last
:data:`LAST_DECISIONS` decisions with the models that were eligible and the reward told
(or ``cancelled``: the call never got a child).  Events are read narrowly (one small code
and the reward per event); the eligibility lists and the bandit's state only for the
last few decisions.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from basevolve.dashboard.db import ReadOnlyStore, columns
from basevolve.dashboard.thinning import even
from basevolve.store.per_model import model_breakdown, total_cost_usd

LAST_DECISIONS = 20
#: arms from 0 up to this are read as they are; others (a store the engine did not write)
#: as -1, left out of the counts
MAX_ARM = 2**20
_KINDS = ("ask", "tell", "cancel")


def _configured(config: dict[str, Any]) -> list[str]:
    """The model names the run's config lists (empty: one model, or an older store)."""
    models = config.get("models")
    if not isinstance(models, list):
        return []
    return [str(m.get("name")) if isinstance(m, dict) else str(m) for m in models]


def has_models(config: dict[str, Any], calls: dict[str, np.ndarray]) -> bool:
    """Whether the run gets the section: several models configured, or some call priced
    or answered by another model than the run's first."""
    return (len(_configured(config)) > 1 or bool(calls["priced"].any())
            or bool(calls["other_model"].any()))


def _loads(text: Any) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return text  # shown as the text it is


def _last_decisions(store: ReadOnlyStore, run_id: str, names: dict[int, str]
                    ) -> tuple[list[dict[str, Any]], Any]:
    """The last decisions, newest first, each with its outcome; and the bandit's state
    stored with the newest one.  The asks come from the end of the ``(run_id, seq)``
    key; each one's tell or cancel through the ``(run_id, call_index)`` index (``+t.seq``:
    ordering by the key's seq made SQLite walk all of the run's events per decision)."""
    rows = store.query(f"""
        SELECT a.call_index, a.arm, a.model, a.eligible_json, a.summary_json,
               (SELECT t.kind FROM model_events t WHERE t.run_id = a.run_id
                  AND t.call_index = a.call_index AND t.kind != 'ask' ORDER BY +t.seq LIMIT 1),
               (SELECT t.reward FROM model_events t WHERE t.run_id = a.run_id
                  AND t.call_index = a.call_index AND t.kind = 'tell' ORDER BY +t.seq LIMIT 1)
        FROM model_events a WHERE a.run_id = ? AND a.kind = 'ask'
        ORDER BY a.seq DESC LIMIT {LAST_DECISIONS}""", (run_id,), plain=True)
    out = []
    for _, arm, model, *_ in rows:  # the stored names of the arms decided lately
        if isinstance(arm, int) and 0 <= arm <= MAX_ARM:
            names[arm] = str(model)
    for call_index, _, model, eligible, _summary, outcome, reward in rows:
        mask = _loads(eligible)
        chosen = ([names.get(i, f"arm {i}") for i, ok in enumerate(mask) if ok]
                  if isinstance(mask, list) else None)
        out.append({"call_index": call_index, "model": model, "eligible": chosen,
                    "outcome": outcome or "open", "reward": reward})
    return out, (_loads(rows[0][4]) if rows else None)


def bandit(store: ReadOnlyStore, run_id: str, configured: list[str]) -> dict[str, Any] | None:
    """The model bandit's decisions over the run (module doc); None without any.

    An arm is the model at that place in the run's config (the engine's order,
    :class:`~basevolve.engine.models.ModelRouter`); the stored names of the last
    decisions' arms take precedence (a per-arm grouping of all events cost 15 ms on a
    20,000-call run)."""
    rows = store.query(f"""
        SELECT (CASE WHEN arm BETWEEN 0 AND {MAX_ARM} THEN arm ELSE -1 END) * 4
               + (CASE kind WHEN 'ask' THEN 0 WHEN 'tell' THEN 1 ELSE 2 END), reward
        FROM model_events WHERE run_id = ? ORDER BY seq""", (run_id,), plain=True)
    if not rows:
        return None
    cols = columns(rows, ("code", "reward"), floats=frozenset({"reward"}))
    arm, kind = cols["code"] >> 2, cols["code"] & 3
    names = dict(enumerate(configured))
    last, summary = _last_decisions(store, run_id, names)
    k = max(len(configured), int(arm.max()) + 1, 1)
    asked = arm[(kind == 0) & (arm >= 0)]
    per_model = np.zeros((k, asked.size + 1), dtype=np.int64)
    if asked.size:
        per_model[asked, np.arange(1, asked.size + 1)] = 1
    per_model = np.cumsum(per_model, axis=1)
    keep = even(asked.size + 1)
    told = (kind == 1) & (arm >= 0) & ~np.isnan(cols["reward"])
    n = np.bincount(arm[told], minlength=k)
    total = np.bincount(arm[told], weights=cols["reward"][told], minlength=k)
    return {"models": [names.get(i, f"arm {i}") for i in range(k)],
            "x": keep.tolist(), "per_model": per_model[:, keep].tolist(),
            "thinned": bool(keep.size < asked.size + 1),
            **{f"{name}s": int((kind == i).sum()) for i, name in enumerate(_KINDS)},
            "rewards": n.tolist(),
            "mean_reward": [float(t / c) if c else None for t, c in zip(total, n, strict=True)],
            "last": last, "summary": summary}


def models_section(store: ReadOnlyStore, run: dict[str, Any], calls: dict[str, np.ndarray],
                   programs: int, memo: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """The per-model section of the run page (module doc), or None for a run of one
    unpriced model (and for stores from before several models existed).

    ``memo`` (kept with the run's rows between requests): the last section and what it
    was computed from -- the number of calls, of pending calls, of programs (``programs``)
    and the last model event.  Under the store's contract (:mod:`.run_cache`: rows are
    only inserted, a call changes only while pending) the section can only have changed
    if one of those did; a rebuild for anything else (the run row's ``updated_at``, a
    pull counter) reuses it instead of grouping the calls again (~95 ms at 20,000 calls).
    """
    if not store.has("calls", "model"):
        return None
    config = run.get("config") if isinstance(run.get("config"), dict) else {}
    if not has_models(config, calls):
        return None
    events = (store.one("SELECT max(seq) FROM model_events WHERE run_id = ?", (run["run_id"],))
              if store.has("model_events") else None)
    key = (int(calls["call_id"].size), int(calls["pending"].sum()), programs,
           None if events is None else events[0])
    if memo is not None and memo.get("key") == key:
        return memo["section"]  # type: ignore[no-any-return]
    section = _section(store, run, config)
    if memo is not None:
        memo.update(key=key, section=section)
    return section


def _section(store: ReadOnlyStore, run: dict[str, Any], config: dict[str, Any]
             ) -> dict[str, Any]:
    rows = model_breakdown(store.query, run["run_id"], run["model"])
    allocator = config.get("model_allocator")
    return {"models": rows, "configured": _configured(config),
            "cost_usd": total_cost_usd(rows), "budget_usd": config.get("budget_usd"),
            "model_allocator": allocator,
            "model_reward": config.get("model_reward") if allocator else None,
            "bandit": (bandit(store, run["run_id"], _configured(config))
                       if store.has("model_events") else None)}


__all__ = ["LAST_DECISIONS", "bandit", "has_models", "models_section"]
