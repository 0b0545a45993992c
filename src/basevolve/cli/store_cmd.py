"""``basevolve runs`` (list the runs of a store) and ``basevolve export`` (tidy tables)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from basevolve.store import RunStore


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("runs", help="list the runs in a store")
    p.add_argument("--store", required=True, help="run store file")
    p.add_argument("--json", action="store_true", help="one JSON list on the last line")
    p.set_defaults(func=runs_command)
    e = sub.add_parser("export", help="write a store's tables as CSV or Parquet")
    e.add_argument("--store", required=True, help="run store file")
    e.add_argument("--run", help="only this run id")
    e.add_argument("--format", choices=("csv", "parquet"), default="csv")
    e.add_argument("--out", type=Path, default=Path("basevolve-export"), help="output folder")
    e.set_defaults(func=export_command)


def _open(path: str) -> RunStore:
    from basevolve.errors import StoreError
    from basevolve.store import RunStore

    if not Path(path).exists():
        raise StoreError(f"store {path!r} does not exist; check --store")
    return RunStore(path, create=False)


def runs_command(args: argparse.Namespace) -> int:
    with _open(args.store) as store:
        runs = store.list_runs()
        rows = []
        for r in runs:
            totals = store.totals(r["run_id"])
            best = store.query("SELECT max(score) FROM programs WHERE run_id=?", (r["run_id"],))[0][0]
            rows.append({"run_id": r["run_id"], "status": r["status"], "task": r["task"],
                         "model": r["model"], "allocator": r["allocator"], "arms": r["arms"],
                         "budget": r["budget"], "depth": r["depth"], "breadth": r["breadth"],
                         "calls_completed": totals["calls_completed"],
                         "calls_lost": totals["calls_lost"], "best_score": best,
                         "flops": totals["flops"],
                         "decisions_with_choice": totals["decisions_with_choice"]})
    if args.json:
        print(json.dumps(rows))
        return 0
    head = ("run_id", "status", "task", "budget", "calls_completed", "best_score")
    table = [head] + [tuple("-" if r[h] is None else (f"{r[h]:.6f}" if isinstance(r[h], float)
                                                       else str(r[h])) for h in head) for r in rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(head))]
    for row in table:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)))
    return 0


def export_command(args: argparse.Namespace) -> int:
    from basevolve.store.export import export_tables

    _open(args.store).close()
    for path in export_tables(args.store, args.out, args.format, args.run):
        print(path)
    return 0
