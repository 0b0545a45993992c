"""Data of the run page, computed from the store in a handful of indexed queries.

What is sent (one JSON document, no program text, no prompts: those are fetched per
call or per program when the user opens one, so a C = 512, K = 10 run stays well under
the 300 ms target):

* ``progress``: the running best after every charged call, overall and per trajectory,
  against calls done and against cumulative effective FLOPs (paper, Appendix
  "Effective FLOPs": FLOPs of failed attempts and uncounted calls are included, in the
  order the engine told the results, like :func:`basevolve.store.export.trajectories_table`);
* ``scatter``: every child's score by call index, valid and invalid apart;
* ``pulls``: BaSE pulls per arm over time (Algorithm 2) and the allocator's last
  state summary;
* ``lineage``: accepted programs (used as a parent, or a trajectory's best) with their
  ancestors, each with its parent, score and trajectory;
* ``calls``: one row per call with tokens, FLOPs, latency, attempts and its child;
* ``errors``: evaluation errors and failed calls.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from basevolve.dashboard.db import ReadOnlyStore

SNIPPET = 300  # characters of an error shown in lists (the full text is one click away)


def _optional(store: ReadOnlyStore, table: str, names: tuple[str, ...], alias: str) -> str:
    """``, alias.col`` for each optional column the store has (newer schema features)."""
    return "".join(f", {alias}.{n}" for n in names if store.has(table, n))


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


def _calls(store: ReadOnlyStore, run_id: str) -> list[dict[str, Any]]:
    extra = _optional(store, "calls", ("purpose",), "c")
    rows = store.query(f"""
        SELECT c.call_id, c.call_index, c.seq, c.trajectory, c.generation, c.parent_id,
               c.status, c.counted, c.prompt_tokens, c.cached_tokens, c.completion_tokens,
               c.flops, c.latency_s, substr(c.error, 1, {SNIPPET}) AS error,
               coalesce(a.n, 0) AS attempts, p.program_id, p.score, p.valid,
               p.seq AS tell_seq{extra}
        FROM calls c LEFT JOIN programs p ON p.call_id = c.call_id
        LEFT JOIN (SELECT call_id, count(*) AS n FROM attempts WHERE call_id IN
                   (SELECT call_id FROM calls WHERE run_id = :r) GROUP BY call_id) a
               ON a.call_id = c.call_id
        WHERE c.run_id = :r ORDER BY c.call_index""", {"r": run_id})
    return [dict(r) for r in rows]


#: columns of the calls table as sent (rows as lists: 512 rows of dicts repeat every key)
CALL_COLUMNS = ("call_index", "trajectory", "generation", "status", "counted",
                "prompt_tokens", "cached_tokens", "completion_tokens", "flops", "latency_s",
                "error", "attempts", "program_id", "score", "valid")


def _programs(store: ReadOnlyStore, run_id: str) -> list[dict[str, Any]]:
    rows = store.query(f"""
        SELECT program_id, call_id, is_initial, seq, trajectory, generation, parent_id,
               score, strict_score, valid, substr(error, 1, {SNIPPET}) AS error,
               length(stdout) AS stdout_chars, length(stderr) AS stderr_chars, seconds,
               code IS NOT NULL AS has_code
        FROM programs WHERE run_id = ? ORDER BY coalesce(seq, -1)""", (run_id,))
    return [dict(r) for r in rows]


def progress(calls: list[dict[str, Any]], initial: float | None, arms: int) -> dict[str, Any]:
    """Running best per trajectory and overall vs calls done and cumulative FLOPs.

    Vectorised (numpy): a C = 512, K = 10 run is 5,000 points, and a Python loop over
    them was a third of the page's server time.
    """
    done = [c for c in calls if c["status"] != "pending"]
    done.sort(key=lambda c: (c["tell_seq"] if c["tell_seq"] is not None else c["seq"]))
    k = max(arms, 1)
    start = float(initial) if initial is not None else 0.0
    traj = np.array([c["trajectory"] if 0 <= (c["trajectory"] or 0) < k else 0 for c in done],
                    dtype=int)
    score = np.array([c["score"] if c["score"] is not None else -np.inf for c in done], float)
    counted = np.array([bool(c["counted"]) for c in done], dtype=bool)
    flops = np.cumsum([c["flops"] or 0.0 for c in done])  # FLOPs of uncounted calls show
    best = np.full((k, len(done)), -np.inf)                # up at the next charged call
    if len(done):
        best[traj, np.arange(len(done))] = score
    best = np.maximum(np.maximum.accumulate(best, axis=1), start)[:, counted]
    per_traj = np.round(np.concatenate([np.full((k, 1), start), best], axis=1), 7)
    return {"calls": list(range(int(counted.sum()) + 1)),
            "flops": [0.0, *flops[counted].tolist()],
            "overall": per_traj.max(axis=0).tolist(), "per_trajectory": per_traj.tolist()}


def scatter(calls: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """Child score by call index; ``valid``/``invalid`` are aligned with ``x`` (nulls)."""
    x, valid, invalid = [], [], []
    for c in calls:
        if c["score"] is None:
            continue
        x.append(c["call_index"])
        valid.append(c["score"] if c["valid"] else None)
        invalid.append(None if c["valid"] else c["score"])
    return {"x": x, "valid": valid, "invalid": invalid}


def pulls(store: ReadOnlyStore, run_id: str, arms: int) -> dict[str, Any]:
    """Cumulative pulls per arm after each pull (assign/ask events) and the last summary."""
    extra = _optional(store, "allocations", ("n_eligible",), "a")
    events = store.query(f"""
        SELECT a.seq, a.kind, a.trajectory, a.units, a.reward{extra}
        FROM allocations a WHERE a.run_id = ? ORDER BY a.seq""", (run_id,))
    k = max(arms, 1)
    arm = np.array([e["trajectory"] if 0 <= e["trajectory"] < k else 0 for e in events
                    if e["kind"] in ("assign", "ask")], dtype=int)
    per_arm = np.zeros((k, arm.size + 1), dtype=int)
    if arm.size:
        per_arm[arm, np.arange(1, arm.size + 1)] = 1
    per_arm = np.cumsum(per_arm, axis=1)
    rewards: list[list[float]] = [[] for _ in range(k)]
    for e in events:
        if e["kind"] == "tell" and e["reward"] is not None:
            rewards[e["trajectory"] if 0 <= e["trajectory"] < k else 0].append(e["reward"])
    last = store.one("SELECT summary_json FROM allocations WHERE run_id = ? AND summary_json "
                     "IS NOT NULL ORDER BY seq DESC LIMIT 1", (run_id,))
    summary: Any = None
    if last is not None:
        try:
            summary = json.loads(last[0])
        except ValueError:
            summary = last[0]
    asks = [e for e in events if e["kind"] == "ask"]
    choice = (sum(1 for e in asks if (e["n_eligible"] or 0) > 1)
              if store.has("allocations", "n_eligible") else None)
    return {"x": list(range(arm.size + 1)), "per_arm": per_arm.tolist(), "summary": summary,
            "events": len(events),
            "asks": len(asks), "asks_with_choice": choice,
            "mean_reward": [sum(r) / len(r) if r else None for r in rewards]}


def lineage(programs: list[dict[str, Any]], calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Accepted programs and their ancestors (the tree of the run's progress).

    Accepted = used as a parent by some call, or the best of its trajectory; every
    ancestor of an accepted program is shown too so the tree is connected.
    """
    by_id = {p["program_id"]: p for p in programs}
    keep = {c["parent_id"] for c in calls if c["parent_id"] in by_id}
    best: dict[Any, dict[str, Any]] = {}
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
    call_of = {c["call_id"]: c["call_index"] for c in calls}
    used = {c["parent_id"] for c in calls}
    return [{"id": p["program_id"], "parent": p["parent_id"], "score": p["score"],
             "valid": bool(p["valid"]), "trajectory": p["trajectory"],
             "generation": p["generation"], "initial": bool(p["is_initial"]),
             "call_index": call_of.get(p["call_id"]), "parent_of_calls": p["program_id"] in used}
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


def run_page(store: ReadOnlyStore, run_id: str) -> dict[str, Any] | None:
    """Everything the run page draws (module doc), or None for an unknown run."""
    run = run_header(store, run_id)
    if run is None:
        return None
    arms = int(run["arms"] or 1)
    calls = _calls(store, run_id)
    programs = _programs(store, run_id)
    initial = next((p for p in programs if p["is_initial"]), None)
    best = max(programs, key=lambda p: (p["score"], p["is_initial"], -(p["seq"] or 0)),
               default=None)
    trajectories = [dict(r) for r in store.query(
        "SELECT trajectory, protocol, pulls FROM trajectories WHERE run_id = ? "
        "ORDER BY trajectory", (run_id,))]
    for t in trajectories:
        mine = [c for c in calls if c["trajectory"] == t["trajectory"]]
        t["calls"] = sum(1 for c in mine if c["counted"])
        scores = [c["score"] for c in mine if c["score"] is not None]
        t["children"] = len(scores)
        t["valid"] = sum(1 for c in mine if c["valid"])
        t["best"] = max(scores + ([initial["score"]] if initial else []), default=None)
    index_of = {c["call_id"]: c["call_index"] for c in calls}
    errors = [{"program_id": p["program_id"], "call_index": index_of.get(p["call_id"]),
               "kind": "evaluation", "trajectory": p["trajectory"], "error": p["error"]}
              for p in programs if p["error"]]
    errors += [{"program_id": None, "call_index": c["call_index"], "kind": "llm call",
                "trajectory": c["trajectory"], "error": c["error"]}
               for c in calls if c["error"]]
    solution = store.has("solutions") and best is not None and store.one(
        "SELECT 1 FROM solutions WHERE run_id = ? AND program_id = ?",
        (run_id, best["program_id"])) is not None
    flops = sum(c["flops"] or 0.0 for c in calls)
    totals = {
        "calls_done": sum(1 for c in calls if c["counted"]),
        "calls_pending": sum(1 for c in calls if c["status"] == "pending"),
        "calls_lost": sum(1 for c in calls if c["status"] == "lost"),
        "calls_failed": sum(1 for c in calls if c["status"] == "failed"),
        "retries": sum(max(0, (c["attempts"] or 0) - 1) for c in calls),
        "flops": flops,
        "prompt_tokens": sum(c["prompt_tokens"] or 0 for c in calls),
        "cached_tokens": sum(c["cached_tokens"] or 0 for c in calls),
        "completion_tokens": sum(c["completion_tokens"] or 0 for c in calls),
        "children": sum(1 for c in calls if c["score"] is not None),
        "valid": sum(1 for c in calls if c["valid"]),
        "best_score": None if best is None else best["score"],
        "best_program_id": None if best is None else best["program_id"],
        "initial_score": None if initial is None else initial["score"],
        **_eval_totals(store, run_id),
    }
    columns = CALL_COLUMNS + (("purpose",) if store.has("calls", "purpose") else ())
    return {
        "run": run, "totals": totals, "trajectories": trajectories,
        "progress": progress(calls, None if initial is None else initial["score"], arms),
        "scatter": scatter(calls), "pulls": pulls(store, run_id, arms),
        "lineage": lineage(programs, calls), "errors": errors,
        "calls": {"columns": columns, "rows": [[c[k] for k in columns] for c in calls]},
        "picture": {"stored": bool(solution)},
    }
