"""``basevolve analyze`` and ``basevolve report``: the paper's statistics from a store or CSV.

Both read the tidy tables of :mod:`basevolve.analysis.tables` (``--store FILE`` or
``--input runs.csv [--trajectories traj.csv] [--children children.csv]``).
``analyze`` prints readable tables, or one JSON document with ``--json`` (NaN -> null);
``report`` writes Markdown/LaTeX tables, PNG/PDF figures and ``index.html`` to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import sys

from basevolve.errors import ConfigError

PRINTED: tuple[tuple[str, str], ...] = (
    ("summary", "Per-configuration fitness (mean, bootstrap SE, 95% CI, IQM)"),
    ("envelope", "Fitness-compute envelope (Section 4.1)"),
    ("collapse", "Cross-model collapse: pooled V_max ~ log10 FLOPs"),
    ("flops_fit", "FLOPs per call vs log2 T (pooled over budgets)"),
    ("bilinear", "Bilinear fit, Eq. 2, with nested models M0-M4 (Tables 2, 5, 8)"),
    ("optimal_depth", "Compute-optimal depth T*(C) and plateau half-width"),
    ("gate", "Capability gate (Table 4)"),
    ("thresholds", "Time to threshold (Table 3)"),
)
#: printed only when the analysis has them: ``models`` for runs with several models (issue 25)
PRINTED_IF_PRESENT: tuple[tuple[str, str], ...] = (
    ("models", "Per model (runs with several models): calls, tokens, FLOPs, USD, gain"),
    # runs that declared objectives (issue 36; analysis/fronts.py)
    ("front", "Final Pareto front of each run (several objectives)"),
    ("hypervolume", "Hypervolume of each run's front (group's common reference point)"),
    ("hv_final", "Final hypervolume per configuration (mean, bootstrap SE, 95% CI, IQM)"),
    ("hv_table1", "Depth-breadth with hypervolume as the fitness (hv_norm per method)"),
    ("hv_envelope", "Depth-breadth with hypervolume as the fitness: envelope"),
    ("hv_bilinear", "Depth-breadth with hypervolume as the fitness: bilinear fit (Eq. 2)"),
    ("hv_optimal_depth", "Depth-breadth with hypervolume as the fitness: T*(C)"),
)


# Printed under a table whose fitted numbers came out NaN, so a reader learns why the
# fit is undefined instead of guessing (JSON keeps null and the documented conditions).
NAN_NOTES: dict[str, tuple[str, str]] = {
    "bilinear": (
        "r2",
        "NaN = Eq. 2 cannot be fitted: it needs >= 5 sub-ceiling cells (V < --ceiling) over"
        " at least two budgets (with one budget log N = log C - log T); R^2 and p-values"
        " are NaN when every cell has the same fitness",
    ),
    "collapse": ("slope", "NaN = the pooled line needs >= 3 budgets/models with distinct FLOPs"),
    "flops_fit": ("slope", "NaN = the line needs >= 3 cells with at least two depths"),
    "optimal_depth": ("t_star_fit", "NaN t_star_fit = no bilinear fit for this task and model"),
}


def _thresholds(text: str) -> tuple[float, ...]:
    try:
        values = tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--thresholds must be comma-separated numbers like 0.8,0.9, got {text!r}"
        ) from None
    if not values:
        raise argparse.ArgumentTypeError("--thresholds needs at least one number, e.g. 0.8,0.9")
    return values


def _add_common(p: argparse.ArgumentParser) -> None:
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--store", metavar="FILE", help="basevolve run store (SQLite)")
    src.add_argument("--input", metavar="RUNS", help="runs table, CSV or Parquet (one row per run)")
    p.add_argument(
        "--trajectories",
        metavar="FILE",
        help="trajectory table (run_id, step, calls, best_fitness, cumulative_flops)",
    )
    p.add_argument(
        "--children",
        metavar="FILE",
        help="children table (run_id, step, fitness) for the T=1 histogram",
    )
    p.add_argument(
        "--per-model",
        metavar="FILE",
        help="per-model table (run_id, model, calls, tokens, flops, cost_usd, improvements, "
             "gain) of runs with several models, as `export` writes it",
    )
    p.add_argument(
        "--fronts",
        metavar="FILE",
        help="fronts table (run_id, step, program_id, k, objective, direction, reference, "
             "value) of runs with several objectives, as `export --for-analysis` writes it",
    )
    p.add_argument("--resamples", type=int, default=None,
                   help="bootstrap resamples (default: the sweep's own, as it stored them, "
                        "else 1000)")
    p.add_argument(
        "--shuffles",
        type=int,
        default=10_000,
        help="permutation shuffles for the bilinear c (default 10000)",
    )
    p.add_argument(
        "--gate-shuffles",
        type=int,
        default=20_000,
        help="permutation shuffles for the capability gate (default 20000)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of every resampling (default 0)")
    p.add_argument(
        "--ceiling", type=float, default=0.97, help="sub-ceiling cutoff for Eq. 2 (default 0.97)"
    )
    p.add_argument(
        "--budget-axis", choices=("calls", "flops", "tokens"), default="calls",
        help="the cost axis: runs with a call budget C (default), or runs made with "
             "--budget-flops / --budget-tokens compared at equal budgets (depth-breadth "
             "analyses need C = T x N and are left empty on those axes)",
    )
    p.add_argument(
        "--thresholds",
        type=_thresholds,
        default=None,
        metavar="T1,T2",
        help="fitness thresholds tau for Table 3 (default: for the runs of a sweep, the "
             "sweep file's own thresholds, else 0.5,0.8,0.9,0.95,0.99)",
    )


ANALYZE_DESCRIPTION = (
    "The paper's statistics (per-configuration fitness with bootstrap CIs, the "
    "fitness-compute envelope, the depth-breadth fit, the capability gate, thresholds) "
    "from a run store (--store FILE) or from tidy tables (--input runs.csv "
    "[--trajectories trajectories.csv] [--children children.csv] [--per-model "
    "per_model.csv] [--fronts fronts.csv], e.g. written by `basevolve export "
    "--for-analysis`). Runs with several models add a per-model table; runs with several "
    "objectives their fronts, hypervolume curves and the depth-breadth analysis on "
    "hypervolume. Prints readable tables, or one JSON document "
    "with --json (NaN as null)."
)
REPORT_DESCRIPTION = (
    "The same statistics as `basevolve analyze`, written to --out as Markdown and LaTeX "
    "tables, PNG/PDF figures and an index.html. Input: --store FILE or --input runs.csv "
    "[--trajectories ...] [--children ...]."
)


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "analyze", help="statistics of the paper from a store or runs table",
        description=ANALYZE_DESCRIPTION,
    )
    _add_common(p)
    p.add_argument("--json", action="store_true", help="print one JSON document instead of tables")
    p.set_defaults(func=run_analyze)
    r = subparsers.add_parser(
        "report", help="Markdown/LaTeX tables and figures into a folder",
        description=REPORT_DESCRIPTION,
    )
    _add_common(r)
    r.add_argument("--out", required=True, metavar="DIR", help="output folder (created if missing)")
    r.add_argument("--json", action="store_true",
                   help='print {"index": ..., "files": [...]} instead of a sentence')
    r.set_defaults(func=run_report)


def _load_and_analyze(args: argparse.Namespace):
    from basevolve.analysis.tables import load_tables

    tables = load_tables(
        input=args.input, trajectories=args.trajectories, store=args.store, children=args.children,
        budget_axis=args.budget_axis, per_model=args.per_model, fronts=args.fronts,
    )
    # after the tables: a wrong --store is one line without statsmodels' ~1 s (issue 24, item 8)
    from basevolve.analysis.pipeline import DEFAULT_THRESHOLDS, AnalysisConfig, analyze

    cfg = AnalysisConfig(
        resamples=1000 if args.resamples is None else args.resamples,
        shuffles=args.shuffles,
        gate_shuffles=args.gate_shuffles,
        seed=args.seed,
        ceiling=args.ceiling,
        thresholds=args.thresholds or DEFAULT_THRESHOLDS,
    )
    if args.store:  # a sweep's runs: its own thresholds and resamples (issue 24, item 5)
        from basevolve.analysis.sweep_settings import with_sweep_settings

        cfg = with_sweep_settings(cfg, tables.runs, args.store,
                                  thresholds=args.thresholds is None,
                                  resamples=args.resamples is None)
    return tables, analyze(tables, cfg)


def run_analyze(args: argparse.Namespace) -> int:
    _, result = _load_and_analyze(args)
    if args.json:
        from basevolve.analysis.pipeline import to_jsonable

        json.dump(to_jsonable(result), sys.stdout, allow_nan=False)
        sys.stdout.write("\n")
        return 0
    import pandas as pd

    with pd.option_context(
        "display.width",
        160,
        "display.max_columns",
        40,
        "display.max_rows",
        400,
        "display.float_format",
        "{:.4g}".format,
    ):
        from basevolve.terminal import clean  # task and model names from the store

        extra = tuple((k, t) for k, t in PRINTED_IF_PRESENT if k in result.tables)
        for key, title in (*PRINTED, *extra):
            df = result.tables[key].map(lambda v: clean(v) if isinstance(v, str) else v)
            df.columns = [clean(c) for c in df.columns]  # objective names (issue 36)
            print(f"== {title} ==")
            print(
                df.to_string(index=False)
                if len(df)
                else "(no rows: input has no data for this analysis)"
            )
            column, note = NAN_NOTES.get(key, ("", ""))
            if column in df and df[column].isna().any():
                print(f"  note: {note}")
            print()
    return 0


def run_report(args: argparse.Namespace) -> int:
    tables, result = _load_and_analyze(args)
    from basevolve.report import write_report

    try:
        index = write_report(result, tables, args.out)
    except OSError as exc:
        raise ConfigError(
            f"cannot write the report to {args.out!r} ({exc}); fix: choose a writable --out folder"
        ) from None
    if args.json:
        from pathlib import Path

        files = sorted(str(p) for p in Path(args.out).rglob("*") if p.is_file())
        print(json.dumps({"index": str(index), "files": files}))
    else:
        print(f"report written: {index}")
    return 0
