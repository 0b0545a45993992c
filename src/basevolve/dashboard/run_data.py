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
  come from ``/api/calls`` and ``/api/errors``).

Why the charts are thinned above :data:`MAX_POINTS` (issue 22, item 11): a run of
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
from basevolve.dashboard.run_tables import Page, calls_page, errors_page

MAX_POINTS = 2000  # points per chart series sent; a chart is ~1,400 pixels wide

#: columns of the one scan of a run's calls (the charts, totals and error list need no more)
_SCAN = ("call_id", "call_index", "seq", "trajectory", "parent_id", "pending", "lost",
         "failed", "counted", "has_error", "flops", "prompt_tokens", "cached_tokens",
         "completion_tokens", "score", "valid", "tell_seq")
_FLOAT = frozenset({"parent_id", "flops", "score", "tell_seq"})  # nullable: NULL -> nan
_BOOL = frozenset({"pending", "lost", "failed", "counted", "has_error", "valid"})


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


def _scan(store: ReadOnlyStore, run_id: str) -> dict[str, np.ndarray]:
    """The run's calls in call order, one numpy array per column of :data:`_SCAN`.

    Only numbers (no text: decoding 20,000 status strings costs more than comparing
    them in SQL), read in one pass of the run's rows.
    """
    rows = store.query("""
        SELECT c.call_id, c.call_index, c.seq, c.trajectory, c.parent_id,
               c.status = 'pending', c.status = 'lost', c.status = 'failed', c.counted,
               coalesce(c.error != '', 0), coalesce(c.flops, 0.0),
               coalesce(c.prompt_tokens, 0), coalesce(c.cached_tokens, 0),
               coalesce(c.completion_tokens, 0), p.score, coalesce(p.valid, 0), p.seq
        FROM calls c LEFT JOIN programs p ON p.call_id = c.call_id
        WHERE c.run_id = ? ORDER BY c.call_index""", (run_id,))
    cols = list(zip(*rows, strict=True)) if rows else [()] * len(_SCAN)
    out = {}
    for name, col in zip(_SCAN, cols, strict=True):
        if name in _FLOAT:
            out[name] = np.array([np.nan if v is None else v for v in col], dtype=float)
        else:
            out[name] = np.array(col, dtype=bool if name in _BOOL else np.int64)
    return out


def thin_steps(series: np.ndarray, limit: int | None = None) -> np.ndarray:
    """Column indices of ``series`` (lines x points) that draw the same step lines.

    Keeps the first and last point and, around every change of any line, the point
    before and the point of the change; if that is still more than ``limit``, an even
    sample of those (a running best is never drawn above its true value then).
    """
    n, limit = series.shape[1], limit or MAX_POINTS
    if n <= limit:
        return np.arange(n)
    change = np.flatnonzero(np.any(series[:, 1:] != series[:, :-1], axis=0))
    keep = np.unique(np.concatenate([[0, n - 1], change, change + 1]))
    if keep.size > limit:
        keep = np.unique(keep[np.linspace(0, keep.size - 1, limit).round().astype(int)])
    return keep


def even(n: int, limit: int | None = None) -> np.ndarray:
    """``limit`` evenly spaced indices of ``range(n)``, first and last included."""
    limit = limit or MAX_POINTS
    return np.arange(n) if n <= limit else np.unique(np.linspace(0, n - 1, limit).round()
                                                      .astype(int))


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
    """Child score by call index; ``valid``/``invalid`` are aligned with ``x`` (nulls)."""
    has = ~np.isnan(calls["score"])
    x, valid = calls["call_index"][has], calls["valid"][has]
    score = np.round(calls["score"][has], 6)  # a dot on a chart; halves a long run's JSON
    return {"x": x.tolist(),
            "valid": [s if v else None for s, v in zip(score.tolist(), valid.tolist(), strict=True)],
            "invalid": [None if v else s for s, v in zip(score.tolist(), valid.tolist(),
                                                         strict=True)]}


def pulls(store: ReadOnlyStore, run_id: str, arms: int) -> dict[str, Any]:
    """Cumulative pulls per arm after each pull (assign/ask events) and the last summary."""
    k = max(arms, 1)
    eligible = "n_eligible > 1" if store.has("allocations", "n_eligible") else "NULL"
    events = store.query(f"""
        SELECT kind IN ('assign', 'ask'), kind = 'ask', kind = 'tell', trajectory,
               reward, {eligible} FROM allocations WHERE run_id = ? ORDER BY seq""", (run_id,))
    cols = list(zip(*events, strict=True)) if events else [()] * 6
    is_pull, is_ask, is_tell = (np.array(c, dtype=bool) for c in cols[:3])
    traj = np.array(cols[3], dtype=np.int64)
    traj = np.where((traj >= 0) & (traj < k), traj, 0)
    reward = np.array([np.nan if v is None else v for v in cols[4]], dtype=float)
    arm = traj[is_pull]
    per_arm = np.zeros((k, arm.size + 1), dtype=np.int64)
    if arm.size:
        per_arm[arm, np.arange(1, arm.size + 1)] = 1
    per_arm = np.cumsum(per_arm, axis=1)
    keep = even(arm.size + 1)
    told = is_tell & ~np.isnan(reward)
    n = np.bincount(traj[told], minlength=k)
    total = np.bincount(traj[told], weights=reward[told], minlength=k)
    last = store.one("SELECT summary_json FROM allocations WHERE run_id = ? AND summary_json "
                     "IS NOT NULL ORDER BY seq DESC LIMIT 1", (run_id,))
    summary: Any = None
    if last is not None:
        try:
            summary = json.loads(last[0])
        except ValueError:
            summary = last[0]
    choice = None if eligible == "NULL" else int(sum(1 for v, a in zip(cols[5], is_ask.tolist(),
                                                                        strict=True) if a and v))
    return {"x": keep.tolist(), "per_arm": per_arm[:, keep].tolist(), "summary": summary,
            "events": len(events), "asks": int(is_ask.sum()), "asks_with_choice": choice,
            "thinned": bool(keep.size < arm.size + 1),
            "mean_reward": [float(t / c) if c else None for t, c in zip(total, n, strict=True)]}


def _programs(store: ReadOnlyStore, run_id: str) -> list[Any]:
    """The run's programs as :class:`sqlite3.Row` (read by name; no dict per row)."""
    return store.query("""
        SELECT program_id, call_id, is_initial, seq, trajectory, generation, parent_id,
               score, valid, coalesce(error != '', 0) AS has_error
        FROM programs WHERE run_id = ? ORDER BY coalesce(seq, -1), program_id""", (run_id,))


def lineage(programs: list[Any], parents: set[Any],
            call_of: dict[int, int]) -> list[dict[str, Any]]:
    """Accepted programs and their ancestors (the tree of the run's progress).

    Accepted = used as a parent by some call (``parents``), or the best of its
    trajectory; every ancestor of an accepted program is shown too so the tree is
    connected.  ``call_of``: call id -> call index.
    """
    by_id = {p["program_id"]: p for p in programs}
    keep = {pid for pid in parents if pid in by_id}
    best: dict[Any, Any] = {}
    for p in programs:
        if p["is_initial"]:
            keep.add(p["program_id"])
            continue
        b = best.get(p["trajectory"])
        if p["valid"] and (b is None or p["score"] > b["score"]):
            best[p["trajectory"]] = p
    keep |= {p["program_id"] for p in best.values()}
    for pid in list(keep):
        seen = set()
        while pid is not None and pid in by_id and pid not in seen:
            seen.add(pid)
            keep.add(pid)
            pid = by_id[pid]["parent_id"]
    return [{"id": p["program_id"], "parent": p["parent_id"], "score": p["score"],
             "valid": bool(p["valid"]), "trajectory": p["trajectory"],
             "generation": p["generation"], "initial": bool(p["is_initial"]),
             "call_index": call_of.get(p["call_id"]), "parent_of_calls": p["program_id"] in parents}
            for p in programs if p["program_id"] in keep]


def _eval_totals(store: ReadOnlyStore, run_id: str) -> dict[str, Any]:
    """A text task's evaluation cost (issue 15): answering calls sent, cache hits, FLOPs
    and tokens; zeros for program tasks and stores older than schema version 5."""
    if not store.has("eval_calls"):
        return {"eval_calls": 0, "eval_cache_hits": 0, "eval_flops": 0.0, "eval_tokens": 0}
    cost = store.one("SELECT coalesce(sum(eval_flops), 0), coalesce(sum(eval_tokens), 0) "
                     "FROM programs WHERE run_id = ?", (run_id,))
    calls = store.one("SELECT coalesce(sum(cache_hit = 0), 0), coalesce(sum(cache_hit), 0) "
                      "FROM eval_calls WHERE run_id = ?", (run_id,))
    return {"eval_calls": calls[0], "eval_cache_hits": calls[1], "eval_flops": cost[0],
            "eval_tokens": cost[1]}


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


def run_page(store: ReadOnlyStore, run_id: str) -> dict[str, Any] | None:
    """Everything the run page draws (module doc), or None for an unknown run."""
    run = run_header(store, run_id)
    if run is None:
        return None
    arms = int(run["arms"] or 1)
    calls = _scan(store, run_id)
    programs = _programs(store, run_id)
    initial = next((p for p in programs if p["is_initial"]), None)
    start = None if initial is None else initial["score"]
    best = max(programs, key=lambda p: (p["score"], p["is_initial"], -(p["seq"] or 0)),
               default=None)
    parent = calls["parent_id"]
    parents = set(parent[~np.isnan(parent)].astype(np.int64).tolist())
    call_of = dict(zip(calls["call_id"].tolist(), calls["call_index"].tolist(), strict=True))
    solution = store.has("solutions") and best is not None and store.one(
        "SELECT 1 FROM solutions WHERE run_id = ? AND program_id = ?",
        (run_id, best["program_id"])) is not None
    attempts = store.one("SELECT count(*), count(DISTINCT call_id) FROM attempts WHERE call_id "
                         "IN (SELECT call_id FROM calls WHERE run_id = ?)", (run_id,))
    totals = {
        "calls_done": int(calls["counted"].sum()),
        "calls_pending": int(calls["pending"].sum()),
        "calls_lost": int(calls["lost"].sum()),
        "calls_failed": int(calls["failed"].sum()),
        "retries": int(attempts[0] - attempts[1]),  # type: ignore[index]
        "flops": float(calls["flops"].sum()),
        **{k: int(calls[k].sum()) for k in ("prompt_tokens", "cached_tokens",
                                            "completion_tokens")},
        "children": int((~np.isnan(calls["score"])).sum()),
        "valid": int(calls["valid"].sum()),
        "best_score": None if best is None else best["score"],
        "best_program_id": None if best is None else best["program_id"],
        "initial_score": start,
        **_eval_totals(store, run_id),
    }
    first = Page()
    keys = ([p["program_id"] for p in programs if p["has_error"]],
            calls["call_index"][calls["has_error"]].tolist())
    return {
        "run": run, "totals": totals, "trajectories": _trajectories(store, run_id, calls, start),
        "progress": progress(calls, start, arms), "scatter": scatter(calls),
        "pulls": pulls(store, run_id, arms), "lineage": lineage(programs, parents, call_of),
        "calls": calls_page(store, run_id, first), "errors": errors_page(store, run_id, first, keys),
        "picture": {"stored": bool(solution)},
    }
