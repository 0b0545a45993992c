"""Data of the run page, computed from the store in a handful of indexed queries.

What is sent (one JSON document, no program text, no prompts: those are fetched per
call or per program when the user opens one):

* ``progress``: the running best after every charged call, overall and per trajectory,
  against calls done and against cumulative effective FLOPs (paper, Appendix
  "Effective FLOPs": FLOPs of failed attempts and uncounted calls are included, in the
  order the engine told the results, like :func:`basevolve.store.export.trajectories_table`);
* ``scatter``: every child's score by call index, valid and invalid apart;
* ``pulls``: BaSE pulls per arm over time (Algorithm 2) and the allocator's last
  state summary;
* ``lineage``: accepted programs (used as a parent, or a trajectory's best) with their
  ancestors, each with its parent, score and trajectory;
* ``calls`` and ``errors``: page 1 of each table (:mod:`.run_tables`; the other pages
  come from ``/api/calls`` and ``/api/errors``);
* ``models``: only for a run that mixed models or priced its calls (issue 25): calls,
  tokens, FLOPs, USD, improvements and gain per model, and the model bandit's decisions
  (:mod:`.run_models`);
* ``front``: only for a run that declared objectives (issue 36): its Pareto front, every
  program's vector and the front's hypervolume per call (:mod:`.run_front`).

Why the charts are thinned above :data:`.thinning.MAX_POINTS` (issue 22, item 11): a run of
20,000 calls sent 5.1 MB, most of it chart points no screen can show.  The running
best is a step function, so keeping the points where some line changes and the point
before each change draws exactly the same lines; pulls per arm are sampled evenly
(``thinned`` says so).  The scatter keeps every child (scores to 6 decimals).  One column-wise scan of the
run's calls (no per-row dicts) feeds every chart and total.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from basevolve.dashboard.db import ReadOnlyStore
from basevolve.dashboard.lineage import Programs, lineage
from basevolve.dashboard.run_cache import RunRows
from basevolve.dashboard.run_front import front_section
from basevolve.dashboard.run_models import models_section
from basevolve.dashboard.run_tables import Page, calls_page, errors_page
from basevolve.dashboard.thinning import even, thin_steps


def run_header(store: ReadOnlyStore, run_id: str) -> dict[str, Any] | None:
    row = store.one("SELECT * FROM runs WHERE run_id = ?", (run_id,))
    if row is None:
        return None
    run = dict(row)
    source = run.pop("task_source", None)  # a user task file's text: big, and not shown
    run["task_source_chars"] = None if source is None else len(source)
    try:
        run["config"] = json.loads(run.pop("config_json") or "{}")
    except ValueError:
        run["config"] = {}
    return run


def _with_children(rows: RunRows, programs: Programs) -> dict[str, np.ndarray]:
    """The run's calls (call order) with each one's child: score, valid, told at (the
    program's ``seq``), matched by call id in numpy rather than joined in SQL."""
    assert rows.calls is not None
    calls = dict(rows.calls)
    n = calls["call_id"].size
    calls["score"], calls["tell_seq"] = np.full(n, np.nan), np.full(n, np.nan)
    calls["valid"] = np.zeros(n, dtype=bool)
    p = programs.cols
    child = np.flatnonzero(~np.isnan(p["call_id"]))
    if child.size and n:
        order = child[np.argsort(p["call_id"][child], kind="stable")]
        ids = p["call_id"][order]
        pos = np.minimum(np.searchsorted(ids, calls["call_id"]), ids.size - 1)
        hit = ids[pos] == calls["call_id"]
        src = order[pos[hit]]
        calls["score"][hit] = p["score"][src]
        calls["valid"][hit] = p["valid"][src]
        calls["tell_seq"][hit] = p["seq"][src]
    return calls


def progress(calls: dict[str, np.ndarray], initial: float | None, arms: int) -> dict[str, Any]:
    """Running best per trajectory and overall vs calls done and cumulative FLOPs."""
    done = np.flatnonzero(~calls["pending"])
    told = calls["tell_seq"][done]
    order = done[np.argsort(np.where(np.isnan(told), calls["seq"][done], told), kind="stable")]
    k = max(arms, 1)
    start = float(initial) if initial is not None else 0.0
    traj = calls["trajectory"][order]
    traj = np.where((traj >= 0) & (traj < k), traj, 0)
    score = np.nan_to_num(calls["score"][order], nan=-np.inf)
    counted = calls["counted"][order]
    flops = np.cumsum(calls["flops"][order])  # FLOPs of uncounted calls show up at the
    best = np.full((k, order.size), -np.inf)  # next charged call
    if order.size:
        best[traj, np.arange(order.size)] = score
    best = np.maximum(np.maximum.accumulate(best, axis=1), start)[:, counted]
    per_traj = np.round(np.concatenate([np.full((k, 1), start), best], axis=1), 7)
    overall = per_traj.max(axis=0)
    xs = np.arange(int(counted.sum()) + 1)
    fl = np.concatenate([[0.0], flops[counted]])
    keep = thin_steps(np.vstack([per_traj, overall]))
    return {"calls": xs[keep].tolist(), "flops": fl[keep].tolist(),
            "overall": overall[keep].tolist(), "per_trajectory": per_traj[:, keep].tolist(),
            "thinned": bool(keep.size < xs.size), "points": int(xs.size)}


def scatter(calls: dict[str, np.ndarray]) -> dict[str, list[Any]]:
    """Child score by call index; ``valid``/``invalid`` are aligned with ``x`` (nulls),
    ``trajectory`` too (the page colours valid children by trajectory, issue 24, item 16)."""
    has = ~np.isnan(calls["score"])
    x, valid = calls["call_index"][has], calls["valid"][has]
    score = np.round(calls["score"][has], 6)  # a dot on a chart; halves a long run's JSON
    return {"x": x.tolist(), "trajectory": calls["trajectory"][has].astype(int).tolist(),
            "valid": [s if v else None for s, v in zip(score.tolist(), valid.tolist(), strict=True)],
            "invalid": [None if v else s for s, v in zip(score.tolist(), valid.tolist(),
                                                         strict=True)]}


def pulls(store: ReadOnlyStore, run_id: str, arms: int,
          events: dict[str, np.ndarray]) -> dict[str, Any]:
    """Cumulative pulls per arm after each pull (assign/ask events) and the last summary."""
    k = max(arms, 1)
    traj = events["trajectory"]
    traj = np.where((traj >= 0) & (traj < k), traj, 0)
    arm = traj[events["pull"]]
    per_arm = np.zeros((k, arm.size + 1), dtype=np.int64)
    if arm.size:
        per_arm[arm, np.arange(1, arm.size + 1)] = 1
    per_arm = np.cumsum(per_arm, axis=1)
    keep = even(arm.size + 1)
    told = events["tell"] & ~np.isnan(events["reward"])
    n = np.bincount(traj[told], minlength=k)
    total = np.bincount(traj[told], weights=events["reward"][told], minlength=k)
    last = store.one("SELECT summary_json FROM allocations WHERE run_id = ? AND summary_json "
                     "IS NOT NULL ORDER BY seq DESC LIMIT 1", (run_id,))
    summary: Any = None
    if last is not None:
        try:
            summary = json.loads(last[0])
        except ValueError:
            summary = last[0]
    choice = (int((events["ask"] & events["choice"]).sum())
              if store.has("allocations", "n_eligible") else None)
    return {"x": keep.tolist(), "per_arm": per_arm[:, keep].tolist(), "summary": summary,
            "events": int(events["trajectory"].size), "asks": int(events["ask"].sum()),
            "asks_with_choice": choice, "thinned": bool(keep.size < arm.size + 1),
            "mean_reward": [float(t / c) if c else None for t, c in zip(total, n, strict=True)]}


def _eval_totals(store: ReadOnlyStore, run_id: str, programs: Programs) -> dict[str, Any]:
    """A text task's evaluation cost (issue 15): answering calls sent, cache hits, FLOPs
    and tokens; zeros for program tasks and stores older than schema version 5."""
    if not store.has("eval_calls"):
        return {"eval_calls": 0, "eval_cache_hits": 0, "eval_flops": 0.0, "eval_tokens": 0}
    calls = store.one("SELECT coalesce(sum(cache_hit = 0), 0), coalesce(sum(cache_hit), 0) "
                      "FROM eval_calls WHERE run_id = ?", (run_id,))
    return {"eval_calls": calls[0], "eval_cache_hits": calls[1],  # type: ignore[index]
            "eval_flops": float(np.nansum(programs.cols["eval_flops"])),
            "eval_tokens": int(np.nansum(programs.cols["eval_tokens"]))}


def _trajectories(store: ReadOnlyStore, run_id: str, calls: dict[str, np.ndarray],
                  initial: float | None) -> list[dict[str, Any]]:
    rows = [dict(r) for r in store.query(
        "SELECT trajectory, protocol, pulls FROM trajectories WHERE run_id = ? "
        "ORDER BY trajectory", (run_id,))]
    for t in rows:
        mine = calls["trajectory"] == t["trajectory"]
        scores = calls["score"][mine]
        scores = scores[~np.isnan(scores)]
        t["calls"] = int(calls["counted"][mine].sum())
        t["children"] = int(scores.size)
        t["valid"] = int(calls["valid"][mine].sum())
        t["best"] = max(scores.tolist() + ([initial] if initial is not None else []), default=None)
    return rows


def run_page(store: ReadOnlyStore, run_id: str,
             rows: RunRows | None = None) -> dict[str, Any] | None:
    """Everything the run page draws (module doc), or None for an unknown run.

    ``rows``: the run's rows as kept between requests (refreshed by the caller); None
    reads them now.
    """
    run = run_header(store, run_id)
    if run is None:
        return None
    if rows is None:
        rows = RunRows(run_id)
        rows.refresh(store)
    assert rows.programs is not None and rows.events is not None
    arms = int(run["arms"] or 1)
    programs = Programs(rows.program_rows, rows.programs)
    calls = _with_children(rows, programs)
    initial, best = programs.initial, programs.best
    start = None if initial is None else initial["score"]
    parent = calls["parent_id"]
    parents = set(parent[~np.isnan(parent)].astype(np.int64).tolist())
    solution = store.has("solutions") and best is not None and store.one(
        "SELECT 1 FROM solutions WHERE run_id = ? AND program_id = ?",
        (run_id, best["program_id"])) is not None
    totals = {
        "calls_done": int(calls["counted"].sum()),
        "calls_pending": int(calls["pending"].sum()),
        "calls_lost": int(calls["lost"].sum()),
        "calls_failed": int(calls["failed"].sum()),
        "retries": int(calls["retries"].sum()),
        # replies cut at max_tokens (finish_reason "length"; issue 23, item 8)
        "calls_truncated": int(calls["truncated"].sum()),
        "flops": float(calls["flops"].sum()),
        **{k: int(calls[k].sum()) for k in ("prompt_tokens", "cached_tokens",
                                            "completion_tokens")},
        "children": int((~np.isnan(calls["score"])).sum()),
        "valid": int(calls["valid"].sum()),
        "best_score": None if best is None else best["score"],
        "best_program_id": None if best is None else best["program_id"],
        "initial_score": start,
        **_eval_totals(store, run_id, programs),
    }
    first = Page()
    keys = (programs.errors(), calls["call_index"][calls["has_error"]].tolist())
    models = models_section(store, run, calls, len(rows.program_rows), rows.models_memo)
    front = front_section(store, run_id, run["config"])  # several objectives (issue 36)
    return {
        "run": run, "totals": totals, "trajectories": _trajectories(store, run_id, calls, start),
        "progress": progress(calls, start, arms), "scatter": scatter(calls),
        "pulls": pulls(store, run_id, arms, rows.events),
        "lineage": lineage(programs, parents, calls["call_id"], calls["call_index"]),
        "calls": calls_page(store, run_id, first), "errors": errors_page(store, run_id, first, keys),
        "picture": {"stored": bool(solution)},
        **({} if models is None else {"models": models}),
        **({} if front is None else {"front": front}),
    }
