"""Calls, tokens, FLOPs, dollars and improvements of a run broken down per model (issue 25).

One function, read by every surface that reports a run (the summary, ``runs --json``,
``export``, the dashboard, ``analyze``), so they cannot disagree.  It reads only the
store: ``calls.model`` names the model of each call (NULL in runs from before several
models existed: the run's one model), and a child is credited to the model of the call
that wrote it.

``improvements`` counts the children that raised their trajectory's best (strictly, in
the store's event order, the initial program included), and ``gain`` sums those raises:
what each model's calls bought, the quantity the model bandit's ``improvement`` reward
estimates (:mod:`basevolve.engine.models`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

Query = Callable[[str, Sequence[Any]], list[Any]]


def model_breakdown(query: Query, run_id: str, run_model: str) -> list[dict[str, Any]]:
    """Per model, in order of first use: ``model, calls, calls_sent, calls_failed,
    calls_lost, calls_truncated, prompt_tokens, cached_tokens, completion_tokens, flops,
    cost_usd (None: unpriced), children, valid_children, improvements, gain``
    (``calls_truncated``: replies cut at the model's own ``max_tokens``, issue 34)."""
    rows = query(
        "SELECT coalesce(model, ?) AS model, min(seq) AS first, count(*) AS sent, "
        "coalesce(sum(counted), 0) AS counted, coalesce(sum(status='failed'), 0) AS failed, "
        "coalesce(sum(status='lost'), 0) AS lost, "
        "coalesce(sum(finish_reason='length'), 0) AS cut, "
        "coalesce(sum(prompt_tokens), 0) AS p, coalesce(sum(cached_tokens), 0) AS c, "
        "coalesce(sum(completion_tokens), 0) AS o, coalesce(sum(flops), 0.0) AS flops, "
        "count(cost_usd) AS priced, sum(cost_usd) AS usd "
        "FROM calls WHERE run_id=? GROUP BY coalesce(model, ?) ORDER BY first",
        (run_model, run_id, run_model))
    out: dict[str, dict[str, Any]] = {}
    for r in rows:
        out[r["model"]] = {
            "model": r["model"], "calls": int(r["counted"]), "calls_sent": int(r["sent"]),
            "calls_failed": int(r["failed"]), "calls_lost": int(r["lost"]),
            "calls_truncated": int(r["cut"]),
            "prompt_tokens": int(r["p"]), "cached_tokens": int(r["c"]),
            "completion_tokens": int(r["o"]), "flops": float(r["flops"]),
            "cost_usd": None if not r["priced"] else float(r["usd"]),
            "children": 0, "valid_children": 0, "improvements": 0, "gain": 0.0}
    # each call's model from the covering index (migration 8), not by joining every
    # child to its call's row (a call's row holds its prompt and reply)
    # (integers only: a reader that decodes every text value pays for 20,000 names)
    model_of: dict[int, str] = {}
    for name in out:
        model_of.update(dict.fromkeys((r[0] for r in query(
            "SELECT call_id FROM calls WHERE run_id=? AND coalesce(model, ?) = ?",
            (run_id, run_model, name))), name))
    progs = query(
        "SELECT trajectory, score, valid, is_initial, call_id FROM programs "
        "WHERE run_id=? ORDER BY is_initial DESC, seq", (run_id,))
    initial = -math.inf
    best: dict[int, float] = {}
    for p in progs:
        score = float(p["score"]) if p["score"] is not None else -math.inf
        if p["is_initial"]:
            initial = max(initial, score)
            continue
        m = out.get(model_of.get(p["call_id"], run_model))
        if m is None:  # a program whose call row is missing: nothing to credit
            continue
        m["children"] += 1
        m["valid_children"] += int(bool(p["valid"]))
        before = best.get(p["trajectory"], initial)
        if p["valid"] and score > before:
            m["improvements"] += 1
            m["gain"] += score - before if math.isfinite(before) else 0.0
            best[p["trajectory"]] = score
    return list(out.values())


def total_cost_usd(models: list[dict[str, Any]]) -> float | None:
    """The run's dollars: the sum over priced models (None when no model has a price)."""
    priced = [m["cost_usd"] for m in models if m["cost_usd"] is not None]
    return sum(priced) if priced else None


__all__ = ["model_breakdown", "total_cost_usd"]
