"""``basevolve runs`` (list the runs of a store) and ``basevolve export`` (its tables).

``export`` writes the store's tables as they are stored (``runs`` and ``trajectories``
as ``runs_raw`` and ``trajectories_raw``, issue 24, item 13); ``export --for-analysis``
writes the three tidy tables the analysis reads instead (``runs``, ``trajectories``,
``children``: finished runs only, exactly what ``analyze --store`` uses), so
``analyze --input runs.csv --trajectories trajectories.csv --children children.csv``
gives the same result as ``analyze --store`` (issue 12, item 5); a store with runs of
several models adds ``per_model`` (read by ``analyze --per-model``; issue 25), one with
runs that declared objectives ``fronts`` (read by ``analyze --fronts``; issue 36), and
the plain export a front file per such run (``fronts/RUN.csv`` + ``.json``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from basevolve.cli.summary_table import score_text

if TYPE_CHECKING:
    from basevolve.store import RunStore


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("runs", help="list the runs in a store",
                       description="List the runs of a store: status, task, budget, calls "
                                   "completed, the initial program's score and the best.")
    p.add_argument("--store", required=True, help="run store file")
    p.add_argument("--json", action="store_true", help="one JSON list on the last line")
    p.set_defaults(func=runs_command)
    e = sub.add_parser("export", help="write a store's tables as CSV or Parquet",
                       description="Write the tables of a store (runs_raw, calls, attempts, "
                                   "programs, allocations, trajectories_raw, eval_calls, "
                                   "model_events) and the per-model breakdown (models) as "
                                   "CSV or Parquet files, or with --for-analysis the tidy "
                                   "tables (runs, trajectories, children; per_model for runs "
                                   "with several models) that `basevolve analyze --input` "
                                   "reads.")
    e.add_argument("--store", required=True, help="run store file")
    e.add_argument("--run", help="only this run id")
    e.add_argument("--format", choices=("csv", "parquet"), default="csv",
                   help="file format (default: %(default)s)")
    e.add_argument("--out", type=Path, default=Path("basevolve-export"),
                   help="output folder (default: %(default)s)")
    e.add_argument("--for-analysis", action="store_true",
                   help="write runs/trajectories/children as `analyze --input` reads them "
                        "(finished runs only)")
    e.add_argument("--budget-axis", choices=("calls", "flops", "tokens"), default="calls",
                   help="with --for-analysis: the runs of this budget kind, as `analyze "
                        "--budget-axis` reads them (default: %(default)s)")
    e.add_argument("--json", action="store_true", help="print the written paths as one JSON list")
    e.set_defaults(func=export_command)


def _open(path: str) -> RunStore:
    from basevolve.errors import StoreError
    from basevolve.store import RunStore

    if not Path(path).exists():
        raise StoreError(f"store {path!r} does not exist; check --store")
    return RunStore(path, create=False)


def runs_command(args: argparse.Namespace) -> int:
    from basevolve.config import RunConfig
    from basevolve.engine.budget import budget_report
    from basevolve.engine.run_checks import checked_run
    from basevolve.store.liveness import live_status
    from basevolve.store.per_model import model_breakdown, total_cost_usd

    with _open(args.store) as store:
        runs = store.list_runs()
        rows = []
        for r in runs:
            totals = store.totals(r["run_id"])
            best = store.query("SELECT max(score) FROM programs WHERE run_id=?", (r["run_id"],))[0][0]
            start = store.query("SELECT score FROM programs WHERE run_id=? AND is_initial=1",
                                (r["run_id"],))  # "start -> best" (issue 37, item 3)
            cfg = checked_run(RunConfig.from_dict(json.loads(r["config_json"])))
            budget = budget_report(store, cfg, r["active_params"])
            # per model (issue 25): the summary's own breakdown, one model for older runs
            models = model_breakdown(store.query, r["run_id"], r["model"])
            # "running" only while a process drives it (store/liveness.py, issue 37)
            status = live_status(args.store, r["run_id"], r["status"])
            rows.append({"run_id": r["run_id"], "status": status, "task": r["task"],
                         "model": r["model"], "allocator": r["allocator"], "arms": r["arms"],
                         **budget, "depth": r["depth"] if budget["budget"] else None,
                         "breadth": r["breadth"], "feedback": cfg.feedback,
                         "calls_completed": totals["calls_completed"],
                         "calls_lost": totals["calls_lost"],
                         "calls_lost_charged": totals["calls_lost_charged"],
                         "flops_lost": totals["flops_lost"],
                         "start_score": start[0][0] if start else None, "best_score": best,
                         "flops": totals["flops"],
                         "usage_impossible": totals["usage_impossible"],
                         "decisions_with_choice": totals["decisions_with_choice"],
                         **{k: totals[k] for k in ("eval_calls", "eval_cache_hits",
                                                   "eval_flops", "eval_tokens")},
                         "models": models, "cost_usd": total_cost_usd(models)})
    if args.json:
        print(json.dumps(rows))
        return 0
    head: tuple[str, ...] = ("run_id", "status", "task", "budget", "calls_completed",
                             "start_score", "best_score")
    if any(len(r["models"]) > 1 for r in rows):  # a column only where a run mixed models
        head = (*head[:3], "models", *head[3:])
    table = [head] + [tuple(_cell(r, h) for h in head) for r in rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(head))]
    for row in table:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)))
    return 0


def _cell(row: dict[str, Any], column: str) -> str:
    value = row[column]
    if column == "models":  # "weak+strong", in order of first use (issue 25)
        value = "+".join(m["model"] for m in value) or row["model"]
    if column == "budget" and value is None:  # a FLOPs or token budget
        unit = "FLOPs" if row["budget_kind"] == "flops" else "tokens"
        return f"{row['budget_flops'] or row['budget_tokens']:.3g} {unit}"
    if value is None:
        return "-"
    from basevolve.terminal import clean  # a task name or run id from outside

    return score_text(value) if isinstance(value, float) else clean(value)


def export_command(args: argparse.Namespace) -> int:
    from basevolve.store.export import export_tables

    _open(args.store).close()
    if args.for_analysis:
        paths = _export_for_analysis(args.store, args.out, args.format, args.run,
                                     args.budget_axis)
    else:
        paths = export_tables(args.store, args.out, args.format, args.run)
    if args.json:
        print(json.dumps([str(p) for p in paths]))
    else:
        for path in paths:
            print(path)
    return 0


def _export_for_analysis(store: str, out: Path, fmt: str, run_id: str | None,
                         budget_axis: str = "calls") -> list[Path]:
    """The analysis tables of ``analyze --store``, written as ``analyze --input`` reads them."""
    from basevolve.analysis.tables import load_tables
    from basevolve.errors import ConfigError

    if fmt == "parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise ConfigError("--format parquet needs pyarrow (pip install pyarrow); "
                              "or export with --format csv") from None
    tables = load_tables(store=store, budget_axis=budget_axis)
    frames = {"runs": tables.runs, "trajectories": tables.trajectories,
              "children": tables.children,
              # only when a run used several models (issue 25): `analyze --per-model`
              "per_model": tables.per_model,
              # only when a run declared objectives (issue 36): `analyze --fronts`
              "fronts": tables.fronts}
    paths = []
    try:
        out.mkdir(parents=True, exist_ok=True)
        for name, df in frames.items():
            if df is None:
                continue
            if run_id is not None:
                df = df[df["run_id"] == run_id]
                if name in ("per_model", "fronts") and len(df) == 0:  # one model / score
                    continue
            path = out / f"{name}.{fmt}"
            if fmt == "csv":
                df.to_csv(path, index=False)
            else:
                df.to_parquet(path, index=False)
            paths.append(path)
    except OSError as exc:
        raise ConfigError(f"cannot write the export to {str(out)!r}: {exc.strerror or exc}; "
                          "choose another --out") from None
    return paths
