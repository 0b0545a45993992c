"""The analysis input contract: tidy tables, their validation and loading.

The analysis never talks to the engine; it reads three tidy tables (docs/design.md: the
store exports them, users may bring their own logs as CSV/Parquet).

**Runs table** -- one row per run (required columns, dtype):

==========  =======  ===========================================================
column      dtype    meaning
==========  =======  ===========================================================
task        str      task name (``circle_packing`` ...)
model       str      model name (``qwen3-8b`` ...)
protocol    str      within-trajectory protocol (``greedy``, ``openevolve`` ...)
allocator   str      across-trajectory allocator; ``single`` (or empty) = no BaSE
arms        int      K, number of trajectories (1 for ``single``)
budget      int      C, LLM calls of the run
depth       int      T, generations (greedy); islands protocols: any int
breadth     int      N, children per generation (greedy ``C = T * N``)
seed        int      replicate index
fitness     float    final best fitness, normalised (1.0 = best published), finite
flops       float    effective FLOPs of the run (Appendix A); NaN = unknown
run_id      any      optional; needed to join the trajectory table
params      any      optional; free-form (JSON text) allocator/protocol parameters
==========  =======  ===========================================================

**Trajectory table** (optional, long format): ``run_id, step, calls, best_fitness,
cumulative_flops`` -- the running best after each completed call (``step`` = call
index 1..C in a basevolve store; any increasing index works) -- and optionally
``generation``, the run's generation index at that step (Table 3's "Gen."; a basevolve
store writes it; without it Table 3 shows the call index only), and ``arm``, the
trajectory (0..K-1) the step's call went to (the report's pulls-per-arm figure; a
basevolve store writes it).  ``cumulative_flops``
counts every call up to the step, failed ones included (Appendix "Effective FLOPs").

**Children table** (optional): ``run_id, step, fitness`` -- every child's score; used
only for the T = 1 child-fitness histogram (Appendix "Distribution").

**Per-model table** (optional; runs with several models, issue 25): one row per (run,
model), see :mod:`basevolve.analysis.per_model`.

**Method names** (summary rows, Tables 1/3): derived by :func:`method_name` --
``greedy T=8`` for a plain greedy run, ``openevolve`` for another protocol without
BaSE, ``base-ucb K=10`` for BaSE over greedy trajectories and
``openevolve+base-ucb K=10`` for BaSE over another protocol.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from basevolve.analysis.front_input import load_fronts
from basevolve.analysis.per_model import load_per_model
from basevolve.analysis.table_files import read_table
from basevolve.errors import ConfigError

STRING_COLUMNS: tuple[str, ...] = ("task", "model", "protocol", "allocator")
INT_COLUMNS: tuple[str, ...] = ("arms", "budget", "depth", "breadth", "seed")
FLOAT_COLUMNS: tuple[str, ...] = ("fitness", "flops")
RUN_COLUMNS: tuple[str, ...] = STRING_COLUMNS + INT_COLUMNS + FLOAT_COLUMNS
TRAJECTORY_COLUMNS: tuple[str, ...] = (
    "run_id",
    "step",
    "calls",
    "best_fitness",
    "cumulative_flops",
)
#: optional trajectory column: the run's generation index at each step (Table 3 "Gen.")
GENERATION_COLUMN = "generation"
#: optional trajectory column: the trajectory (arm) each step's call went to (issue 24)
ARM_COLUMN = "arm"
CHILDREN_COLUMNS: tuple[str, ...] = ("run_id", "step", "fitness")
#: allocator values that mean "no bandit": one trajectory gets every call.
FINISHED = "finished"  # the store's status of a run that spent its whole budget
NO_ALLOCATOR: frozenset[str] = frozenset({"", "single", "none", "nan"})


#: The cost axis of an analysis: C LLM calls (the paper's), or the FLOPs/token budgets of
#: runs made with ``--budget-flops`` / ``--budget-tokens`` (issue 16).
BUDGET_AXES: tuple[str, ...] = ("calls", "flops", "tokens")


@dataclass(frozen=True)
class Tables:
    """The validated inputs of one analysis (trajectories/children may be absent).

    ``budget_axis``: what the ``budget`` column counts (:data:`BUDGET_AXES`).  On a FLOPs
    or token axis the number of generations is not fixed in advance, so the depth-breadth
    analyses (cells, envelope, Eq. 2, T*, gate) have no rows; summaries, Table 1 and
    thresholds compare methods at equal FLOPs/token budgets.
    """

    runs: pd.DataFrame
    trajectories: pd.DataFrame | None = None
    children: pd.DataFrame | None = None
    budget_axis: str = "calls"
    #: rows of the analysed runs that used several models (None: no such run; issue 25)
    per_model: pd.DataFrame | None = None
    #: objective vectors of the analysed multi-objective runs (None: every run has one
    #: score; issue 36): :mod:`basevolve.analysis.front_input`
    fronts: pd.DataFrame | None = None


def on_budget_axis(runs: pd.DataFrame, axis: str) -> tuple[pd.DataFrame, str]:
    """The runs whose budget is of kind ``axis``, with ``budget`` set to that budget, and
    a note naming the runs left out ("" when none).

    A runs table without a ``budget_kind`` column (written before issue 16, or by hand)
    holds call budgets only.
    """
    if axis not in BUDGET_AXES:
        raise ConfigError(f"--budget-axis must be one of {', '.join(BUDGET_AXES)}, got {axis!r}")
    if len(runs) == 0:  # validate_runs says what is wrong with an empty table
        return runs, ""
    if "budget_kind" in runs.columns:
        kinds = runs["budget_kind"].astype(object).where(runs["budget_kind"].notna(), "calls")
    else:
        kinds = pd.Series("calls", index=runs.index)
    keep = kinds.eq(axis).to_numpy()
    left = kinds[~keep].value_counts()
    note = ", ".join(f"{n} run(s) with a {k} budget" for k, n in left.items())
    if not keep.any():
        present = ", ".join(sorted(set(kinds))) or "none"
        raise ConfigError(f"no run has a {axis} budget (budgets present: {present}); fix: "
                          f"choose --budget-axis {kinds.iloc[0] if len(kinds) else 'calls'}")
    out = runs[keep].copy()
    if axis != "calls":
        out["budget"] = pd.to_numeric(out[f"budget_{axis}"], errors="coerce").round()
    return out, note


def method_name(protocol: str, allocator: str, depth: int, arms: int,
                breadth: int | None = None) -> str:
    """Human-readable method label of a run (see the module docstring); with a FLOPs or
    token budget (``depth`` None) a greedy run is named by its breadth, ``greedy N=4``."""
    protocol = str(protocol)
    if str(allocator).strip().lower() in NO_ALLOCATOR:
        if protocol != "greedy":
            return protocol
        return f"greedy T={int(depth)}" if depth is not None else f"greedy N={breadth}"
    base = f"base-{allocator} K={int(arms)}"
    return base if protocol == "greedy" else f"{protocol}+{base}"


def _fail(what: str, column: str, problem: str, fix: str) -> ConfigError:
    return ConfigError(f"{what}: column {column!r} {problem}; fix: {fix}")


def _numeric(df: pd.DataFrame, column: str, what: str, *, integer: bool, allow_nan: bool) -> None:
    converted = pd.to_numeric(df[column], errors="coerce")
    bad = converted.isna() & df[column].notna()
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0])
        raise _fail(
            what,
            column,
            f"must be numeric, found {df[column].iloc[row]!r} in row {row}",
            "write plain numbers (no units or text) in that column",
        )
    if not allow_nan and converted.isna().any():
        row = int(np.flatnonzero(converted.isna().to_numpy())[0])
        raise _fail(
            what,
            column,
            f"has a missing value in row {row}",
            "fill it in or drop the row (a failed run scores 0.0)",
        )
    values = converted.to_numpy(dtype=float)
    if np.isinf(values).any():
        raise _fail(what, column, "contains an infinite value", "use finite numbers")
    if integer:
        finite = values[np.isfinite(values)]
        if (finite != np.round(finite)).any():
            raise _fail(what, column, "must hold whole numbers", "round or correct the values")
        df[column] = converted.astype("int64")
    else:
        df[column] = values


def _require(df: pd.DataFrame, columns: Sequence[str], what: str) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ConfigError(
            f"{what}: missing column(s) {', '.join(missing)}; "
            f"fix: the table needs columns {', '.join(columns)} (see basevolve.analysis.tables)"
        )
    if len(df) == 0:
        raise ConfigError(f"{what}: the table is empty; fix: give it at least one row")


def validate_runs(df: pd.DataFrame, budget_axis: str = "calls") -> pd.DataFrame:
    """Check and normalise a runs table; returns a copy with clean dtypes + ``method``."""
    what = "runs table"
    _require(df, RUN_COLUMNS, what)
    out = df.copy()
    for col in STRING_COLUMNS:
        out[col] = out[col].astype(object).where(out[col].notna(), "").astype(str).str.strip()
    out["allocator"] = out["allocator"].where(
        ~out["allocator"].str.lower().isin(NO_ALLOCATOR), "single"
    )
    for col in INT_COLUMNS:
        _numeric(out, col, what, integer=True, allow_nan=False)
    _numeric(out, "fitness", what, integer=False, allow_nan=False)
    _numeric(out, "flops", what, integer=False, allow_nan=True)
    for col in ("budget", "depth", "breadth", "arms"):
        if (out[col] < 1).any():
            raise _fail(
                what, col, "must be >= 1", "budgets, depths, breadths and arm counts are positive"
            )
    if "run_id" not in out.columns:
        out["run_id"] = np.arange(len(out))
    elif out["run_id"].isna().any() or out["run_id"].duplicated().any():
        dup = out["run_id"][out["run_id"].duplicated()].head(1).tolist()
        raise _fail(
            what,
            "run_id",
            f"must be unique and non-empty (repeated: {dup})",
            "give every run its own id, or drop the column",
        )
    on_calls = budget_axis == "calls"
    out["method"] = [
        method_name(p, a, d if on_calls else None, k, n)
        for p, a, d, k, n in zip(
            out["protocol"], out["allocator"], out["depth"], out["arms"], out["breadth"],
            strict=True,
        )
    ]
    return out.reset_index(drop=True)


def _validate_long(
    df: pd.DataFrame,
    columns: Sequence[str],
    what: str,
    floats: Sequence[str],
    nan_ok: Sequence[str] = (),
) -> pd.DataFrame:
    _require(df, columns, what)
    out = df[list(columns)].copy()
    for col in columns[1:]:
        _numeric(out, col, what, integer=col not in floats, allow_nan=col in nan_ok)
    return out


def validate_trajectories(df: pd.DataFrame) -> pd.DataFrame:
    """Check a trajectory table (see the module docstring); sorted by run and step.

    The optional ``generation`` and ``arm`` columns are kept (as float: NaN = unknown);
    when one is absent it is added as NaN so every consumer sees the same columns.
    """
    optional = tuple(c for c in (GENERATION_COLUMN, ARM_COLUMN) if c in df.columns)
    out = _validate_long(
        df,
        (*TRAJECTORY_COLUMNS, *optional),
        "trajectory table",
        floats=("best_fitness", "cumulative_flops", GENERATION_COLUMN, ARM_COLUMN),
        nan_ok=("cumulative_flops", GENERATION_COLUMN, ARM_COLUMN),
    )
    for column in (GENERATION_COLUMN, ARM_COLUMN):
        if column not in optional:
            out[column] = np.nan
    return out.sort_values(["run_id", "step"], kind="stable").reset_index(drop=True)


def validate_children(df: pd.DataFrame) -> pd.DataFrame:
    """Check a children table (see the module docstring)."""
    return _validate_long(df, CHILDREN_COLUMNS, "children table", floats=("fitness",))


def _from_store(store: str | Path) -> tuple[pd.DataFrame, pd.DataFrame | None, pd.DataFrame | None]:
    if not Path(store).is_file():
        raise ConfigError(f"store {str(store)!r} does not exist; fix: check the --store path")
    try:  # the store is written by another module; import lazily so analysis stands alone
        from basevolve.store import export
    except ImportError as exc:
        raise ConfigError(
            f"reading --store needs basevolve.store.export, which is not available ({exc}); "
            "fix: export the runs to CSV and use --input"
        ) from None
    runs = export.runs_table(store)
    # Only finished runs are fixed-budget samples.  A run that is still running, was
    # interrupted or failed has a "best so far" after fewer than C calls; counting it as
    # a budget-C run would bias every statistic, so it is left out (and said so).
    status = export.raw_table(store, "runs").set_index("run_id")["status"]
    done = runs["run_id"].map(status).eq(FINISHED).to_numpy(dtype=bool, copy=True)
    if "fitness" in runs:
        done &= pd.to_numeric(runs["fitness"], errors="coerce").notna().to_numpy()
    left_out = ""
    if not done.all():
        counts = runs.loc[~done, "run_id"].map(status).fillna("unknown").value_counts()
        kinds = ", ".join(f"{n} {k}" for k, n in counts.items())
        left_out = f"{int((~done).sum())} unfinished run(s) ({kinds})"
    runs = runs[done]
    if len(runs) == 0:
        raise ConfigError(
            f"store {str(store)!r} has no finished run with a scored program yet"
            f"{' (only ' + left_out + ')' if left_out else ''};"
            " fix: finish a run (`basevolve run`, or `--resume RUN_ID`) first"
        )
    if left_out:  # one line on stderr, so a --json document on stdout stays clean
        print(
            f"basevolve: note: left out {left_out} of {str(store)!r};"
            " finish them with `basevolve run --resume RUN_ID`",
            file=sys.stderr,
        )
    kept = set(runs["run_id"])
    traj = export.trajectories_table(store)
    traj = traj[traj["run_id"].isin(kept)]
    children_fn = getattr(export, "children_table", None)
    children = children_fn(store) if children_fn is not None else None
    if children is not None:
        children = children[children["run_id"].isin(kept)]
    return runs, traj, children


def load_tables(
    input: str | Path | pd.DataFrame | None = None,
    trajectories: str | Path | pd.DataFrame | None = None,
    store: str | Path | None = None,
    children: str | Path | pd.DataFrame | None = None,
    budget_axis: str = "calls",
    per_model: str | Path | pd.DataFrame | None = None,
    fronts: str | Path | pd.DataFrame | None = None,
) -> Tables:
    """Load and validate the analysis inputs from files, DataFrames or a store.

    Exactly one of ``input`` (runs table) and ``store`` must be given.  Empty
    trajectory/children tables are treated as absent.  Only runs whose budget is of kind
    ``budget_axis`` are analysed (:func:`on_budget_axis`; the others are named on stderr).
    ``per_model`` (else a store's per-model breakdown) is kept for the analysed runs that
    used several models (:mod:`basevolve.analysis.per_model`).  ``fronts`` (else a
    store's) holds the objective vectors of the analysed multi-objective runs
    (:mod:`basevolve.analysis.front_input`, issue 36).
    """
    if (input is None) == (store is None):
        raise ConfigError("give exactly one of --input RUNS (CSV/Parquet) or --store FILE")
    if store is not None:
        runs, traj, kids = _from_store(store)
        trajectories = traj if trajectories is None else trajectories
        children = kids if children is None else children
    else:
        runs = input if isinstance(input, pd.DataFrame) else read_table(input, "runs table")
    runs, left_out = on_budget_axis(runs, budget_axis)
    if left_out:  # stderr, so a --json document on stdout stays clean
        print(f"basevolve: note: left out {left_out} (analysing {budget_axis} budgets; "
              "see --budget-axis)", file=sys.stderr)
    if trajectories is not None and not isinstance(trajectories, pd.DataFrame):
        trajectories = read_table(trajectories, "trajectory table")
    if children is not None and not isinstance(children, pd.DataFrame):
        children = read_table(children, "children table")
    traj_v = (
        validate_trajectories(trajectories)
        if trajectories is not None and len(trajectories)
        else None
    )
    kids_v = validate_children(children) if children is not None and len(children) else None
    runs_v = validate_runs(runs, budget_axis)
    return Tables(runs=runs_v, trajectories=traj_v, children=kids_v, budget_axis=budget_axis,
                  per_model=load_per_model(per_model, store, runs_v["run_id"]),
                  fronts=load_fronts(fronts, store, runs_v["run_id"]))


__all__ = [
    "ARM_COLUMN",
    "BUDGET_AXES",
    "CHILDREN_COLUMNS",
    "GENERATION_COLUMN",
    "RUN_COLUMNS",
    "TRAJECTORY_COLUMNS",
    "Tables",
    "load_tables",
    "method_name",
    "on_budget_axis",
    "read_table",
    "validate_children",
    "validate_runs",
    "validate_trajectories",
]
