"""End-of-run summary (the ``--json`` line) and output files, computed from the store.

The store is the ledger: every total here is a sum over stored rows, so a resumed run
and an uninterrupted one report the same way, and tests can check the totals against
the calls the server saw.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from basevolve.config import RunConfig
from basevolve.engine.budget import budget_report
from basevolve.engine.front_credit import front_summary
from basevolve.program_files import LANGUAGE as FILES_LANGUAGE
from basevolve.program_files import ProgramFilesError, write_program_folder
from basevolve.records import ExecStatus
from basevolve.store import RunStore
from basevolve.store.per_model import model_breakdown, total_cost_usd


def build_summary(store: RunStore, cfg: RunConfig, engine: Any | None) -> dict[str, Any]:
    run = cfg.run_id
    totals = store.totals(run)
    best = store.query(
        "SELECT program_id, score, strict_score, trajectory, code, is_initial FROM programs "
        "WHERE run_id=? ORDER BY score DESC, is_initial DESC, seq ASC LIMIT 1", (run,))
    per_traj = store.query(
        "SELECT t.trajectory, t.pulls, (SELECT max(score) FROM programs p WHERE p.run_id=t.run_id "
        "AND p.trajectory=t.trajectory) AS best, (SELECT count(*) FROM calls c WHERE "
        "c.run_id=t.run_id AND c.trajectory=t.trajectory AND c.counted=1) AS calls "
        "FROM trajectories t WHERE t.run_id=? ORDER BY t.trajectory", (run,))
    kids = store.query("SELECT count(*) n, coalesce(sum(valid),0) v FROM programs "
                       "WHERE run_id=? AND is_initial=0", (run,))[0]
    trust = [r["trust"] for r in store.query(
        "SELECT DISTINCT trust FROM programs WHERE run_id=? AND trust IS NOT NULL "
        "ORDER BY trust", (run,))]
    row = store.get_run(run)
    assert row is not None  # runs are never deleted
    status = row["status"]
    b = best[0] if best else None
    start = store.query("SELECT score FROM programs WHERE run_id=? AND is_initial=1", (run,))
    initial = b["score"] if b is not None and b["is_initial"] else None
    traj_best = [r["best"] if r["best"] is not None else (initial or 0.0) for r in per_traj]
    models = model_breakdown(store.query, run, cfg.model)  # several models (issue 25)
    return {
        "run_id": run, "status": status, "task": row["task"], "model": cfg.model,
        "task_file": row.get("task_path"), "task_sha256": row.get("task_sha256"),
        "task_changes": store.task_changes(run),
        "protocol": cfg.protocol, "budget": cfg.budget,
        "depth": cfg.depth if cfg.budget_kind == "calls" else None,
        "breadth": cfg.breadth, "seed": cfg.seed, "max_in_flight": cfg.max_in_flight,
        "arm_in_flight": cfg.arm_in_flight, "protocol_params": cfg.protocol_params,
        "task_params": cfg.task_params, "count_eval_calls": cfg.count_eval_calls,
        "feedback": cfg.feedback, "charge_unanswered": cfg.charge_unanswered,
        "deterministic": cfg.deterministic,
        "window": cfg.decision_window if cfg.deterministic else None,
        **totals,
        # the initial program's score (issue 37, item 3): "start -> best" says whether
        # the search improved at all
        "start_score": start[0]["score"] if start else None,
        "best_score": None if b is None else b["score"],
        "best_strict_score": None if b is None else b["strict_score"],
        "best_program_id": None if b is None else b["program_id"],
        "best_code": None if b is None else b["code"],
        "children": kids["n"], "valid_rate": kids["v"] / kids["n"] if kids["n"] else None,
        # where the scores were computed (issue 21): one level per run in practice
        "trust": ", ".join(trust) or None,
        "allocator": cfg.allocator, "arms": cfg.arms, "pull": cfg.pull, "reward": cfg.reward,
        "pulls_per_arm": [r["pulls"] for r in per_traj],
        "calls_per_arm": [r["calls"] for r in per_traj],
        "best_arm": max(range(len(traj_best)), key=lambda i: (traj_best[i], -i)) if traj_best else None,
        "store": str(store.path),
        "wall_s": None if engine is None else round(engine.snapshot()["elapsed_s"], 3),
        **budget_report(store, cfg, row.get("active_params")),
        "models": models, "cost_usd": total_cost_usd(models),
        "model_allocator": cfg.model_allocator,
        "model_reward": cfg.model_reward if cfg.model_allocator else None,
        # the worst case of the call a cost budget could not fit (None: not this process)
        "budget_unfit_call": None if engine is None or engine.ledger is None
        else engine.ledger.unfit,
        # several objectives (issue 36): the run's front and its hypervolume
        **front_summary(cfg, store.query(
            "SELECT program_id, is_initial, seq, valid, metrics_json FROM programs "
            "WHERE run_id=?", (run,)) if cfg.objectives else []),
    }


def write_outputs(summary: dict[str, Any], store: RunStore, task: Any, evaluator: Any,
                  out_dir: Path | None) -> dict[str, Any]:
    """Write ``best_program.py`` and ``best.png`` (``task.draw``) under ``out_dir``; for a
    text task (issue 15) ``best_prompt.txt`` and no picture (nothing is run); a function
    task or a task directory (issue 21) has no single value, so no picture either."""
    code = summary.get("best_code")
    if out_dir is None or code is None:
        return {"best_program": None, "picture": None}
    text = getattr(task, "artifact", "program") == "text"
    suffix = getattr(task, "file_suffix", ".py")  # best_program.rs (issue 31, item 2)
    program = out_dir / ("best_prompt.txt" if text else f"best_program{suffix}")
    try:  # an unwritable folder must not turn a finished run into a traceback
        out_dir.mkdir(parents=True, exist_ok=True)
        if getattr(task, "language", "") == FILES_LANGUAGE:  # a folder (issue 31)
            program = write_program_folder(code, out_dir / "best_program")
        else:
            program.write_text(code)
    except (OSError, ProgramFilesError) as exc:
        return {"best_program": None, "picture": None,
                "output_error": f"cannot write {str(program)!r}: "
                                f"{getattr(exc, 'strerror', None) or exc}"}
    result: dict[str, Any] = {"best_program": str(program), "picture": None}
    if text or getattr(task, "evaluation", "entry") != "entry":
        return result  # only an entry() program has one value to draw
    try:  # the value is not stored, so run the best program once more (sandboxed)
        ex = asyncio.run(evaluator.execute(code))
        if ex.status is ExecStatus.OK:
            picture = out_dir / "best.png"
            task.draw(ex.value, picture)
            # Keep the value so readers (the dashboard) can redraw it without running code.
            store.save_solution(summary["run_id"], summary["best_program_id"], ex.value)
            result["picture"] = str(picture)
        else:
            result["picture_error"] = f"best program did not run again: {ex.error or ex.status}"
    except Exception as exc:  # a missing picture must not lose a finished run
        result["picture_error"] = f"{type(exc).__name__}: {exc}"
    return result
