"""Tidy tables from a store: the analysis input contract and ``basevolve export``.

The three ``*_table`` functions are the contract the analysis layer codes against
(one row per observation, documented columns).  ``fitness`` is the run's final best
normalised score *including the initial program*, because the greedy protocol keeps
the parent unless a child is strictly better (paper Section 3), so the best-so-far
never drops below the starting point.  ``flops`` are effective FLOPs (paper,
Appendix "Effective FLOPs"): the sum over all stored calls and their attempts.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from pathlib import Path

import numpy as np
import pandas as pd

from basevolve.errors import ConfigError
from basevolve.store.fronts_export import export_fronts
from basevolve.store.program_files_export import export_program_files
from basevolve.store.sqlite import RunStore

RUNS_COLUMNS = ["run_id", "task", "model", "protocol", "allocator", "arms", "budget",
                "depth", "breadth", "seed", "fitness", "flops", "params", "budget_kind",
                "budget_flops", "budget_tokens"]
TRAJECTORY_COLUMNS = ["run_id", "step", "calls", "generation", "best_fitness", "cumulative_flops",
                      "arm"]
CHILDREN_COLUMNS = ["run_id", "step", "fitness"]
RAW_TABLES = ("runs", "calls", "attempts", "programs", "allocations", "trajectories",
              "eval_calls",  # eval_calls: a text task's answering-LLM calls (issue 15)
              "model_events")  # the model bandit's ask/tell/cancel rows (issue 25)
#: the per-model breakdown of every run (issue 25): :func:`models_table`, written by
#: ``export`` as ``models``; the same numbers as the summary's ``models`` and ``runs --json``
MODEL_COLUMNS = ["run_id", "model", "calls", "calls_sent", "calls_failed", "calls_lost",
                 "calls_truncated",
                 "prompt_tokens", "cached_tokens", "completion_tokens", "flops", "cost_usd",
                 "children", "valid_children", "improvements", "gain"]
#: file names of the raw tables whose names the tidy tables of ``export --for-analysis``
#: (runs, trajectories, children: what ``analyze --input`` reads) already use.  Both
#: exports wrote a ``runs.csv`` and a ``trajectories.csv`` with different contents, and
#: into the same default folder one overwrote the other (issue 24, item 13).
RAW_FILE_NAMES: dict[str, str] = {"runs": "runs_raw", "trajectories": "trajectories_raw"}


def _read(store_path: str | Path, sql: str, params: tuple = ()) -> pd.DataFrame:
    with RunStore(store_path, create=False) as store:
        cur = store.db.execute(sql, params)
        cols = [d[0] for d in cur.description or []]
        rows = cur.fetchall()
    return pd.DataFrame([tuple(r) for r in rows], columns=cols)


def runs_table(store_path: str | Path) -> pd.DataFrame:
    """One row per run: ``run_id, task, model, protocol, allocator, arms, budget, depth,
    breadth, seed, fitness, flops, params`` (params = active parameter count), and the
    budget's kind (``calls``, ``flops``, ``tokens``) with ``budget_flops`` /
    ``budget_tokens`` for runs given ``--budget-flops`` / ``--budget-tokens`` (their
    ``budget`` and ``depth`` columns then hold only the engine's call cap)."""
    df = _read(store_path, """
        SELECT r.run_id, r.task, r.model, r.protocol, r.allocator, r.arms, r.budget,
               r.depth, r.breadth, r.seed,
               (SELECT max(score) FROM programs p WHERE p.run_id = r.run_id) AS fitness,
               (SELECT coalesce(sum(flops), 0) FROM calls c WHERE c.run_id = r.run_id) AS flops,
               r.active_params AS params,
               CASE WHEN json_extract(r.config_json, '$.budget_flops') IS NOT NULL THEN 'flops'
                    WHEN json_extract(r.config_json, '$.budget_tokens') IS NOT NULL THEN 'tokens'
                    WHEN json_extract(r.config_json, '$.budget_usd') IS NOT NULL THEN 'usd'
                    ELSE 'calls' END AS budget_kind,
               json_extract(r.config_json, '$.budget_flops') AS budget_flops,
               json_extract(r.config_json, '$.budget_tokens') AS budget_tokens
        FROM runs r ORDER BY r.created_at""")
    return df.reindex(columns=RUNS_COLUMNS)


def trajectories_table(store_path: str | Path) -> pd.DataFrame:
    """Running best after each charged call: ``run_id, step, calls, generation,
    best_fitness, cumulative_flops``; step = 1..C in the order the engine told the results.

    ``cumulative_flops`` sums *every* call up to that step, including calls that failed
    outright and were not charged to C (paper, Appendix "Effective FLOPs": FLOPs are
    summed over all attempts), so the last row equals the run's ``flops`` in
    :func:`runs_table`.  An uncharged call's FLOPs enter at its re-issue's ask (the
    engine knew it had failed by then; ``calls.seq`` and ``programs.seq`` share one
    per-run counter), or at the last step when it was never re-issued.

    ``generation`` is the run's generation index at that step (Table 3's "Gen."): the
    number of distinct (trajectory, generation) pairs among the charged calls so far --
    ``ceil(step / N)`` for greedy T x N, the number of pulls for BaSE with one generation
    per pull (with N = 1 it equals the call index).  ``arm`` is the trajectory that call
    went to (0 for a single trajectory): the report's pulls-per-arm figure counts it
    (issue 24, item 16).
    """
    calls = _read(store_path, """
        SELECT c.run_id, c.counted, c.flops, c.trajectory, c.generation,
               coalesce(p.score, 0.0) AS score,
               CASE WHEN c.counted = 1 THEN coalesce(p.seq, c.seq)
                    ELSE (SELECT r.seq FROM calls r WHERE r.reissue_of = c.call_id) END AS ord
        FROM calls c LEFT JOIN programs p ON p.call_id = c.call_id
        ORDER BY c.run_id""")
    init = _read(store_path, "SELECT run_id, score FROM programs WHERE is_initial = 1")
    start = dict(zip(init["run_id"], init["score"], strict=True))
    parts = []
    for run_id, g in calls.groupby("run_id", sort=False):
        # never re-issued uncharged calls go last (NaN ord sorts after every number)
        g = g.sort_values("ord", kind="stable", na_position="last")
        counted = g["counted"].to_numpy(int) == 1
        if not counted.any():
            continue
        flops = np.cumsum(g["flops"].fillna(0.0).to_numpy(float))
        cum = flops[counted]
        cum[-1] = flops[-1]  # trailing uncharged calls belong to the last step
        c = g[counted]
        n = len(c)
        best = np.maximum.accumulate(np.maximum(c["score"].to_numpy(float), start.get(run_id, 0.0)))
        pairs = list(zip(c["trajectory"], c["generation"], strict=True))
        seen: set[tuple[int, int]] = set()
        gen = np.empty(n, dtype=np.int64)
        for i, pair in enumerate(pairs):
            seen.add(pair)
            gen[i] = len(seen)
        parts.append(pd.DataFrame({
            "run_id": run_id, "step": np.arange(1, n + 1), "calls": np.arange(1, n + 1),
            "generation": gen, "best_fitness": best, "cumulative_flops": cum,
            "arm": c["trajectory"].to_numpy(np.int64),
        }))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=TRAJECTORY_COLUMNS)


def children_table(store_path: str | Path) -> pd.DataFrame:
    """Every child's score: ``run_id, step, fitness`` with step = generation."""
    df = _read(store_path, """
        SELECT run_id, generation AS step, score AS fitness FROM programs
        WHERE is_initial = 0 ORDER BY run_id, seq""")
    return df.reindex(columns=CHILDREN_COLUMNS)


def raw_table(store_path: str | Path, table: str, run_id: str | None = None) -> pd.DataFrame:
    """A stored table as-is (JSON columns left as text), optionally one run only."""
    if table not in RAW_TABLES:
        raise ConfigError(f"unknown table {table!r}; known: {', '.join(RAW_TABLES)}")
    if table == "attempts":
        sql = "SELECT c.run_id, a.* FROM attempts a JOIN calls c USING (call_id)"
        where = " WHERE c.run_id = ?"
    else:
        sql, where = f"SELECT * FROM {table}", " WHERE run_id = ?"
    df = _read(store_path, sql) if run_id is None else _read(store_path, sql + where, (run_id,))
    if table == "calls" and len(df):  # a call of an older run: the run's one model (issue 25)
        names = _read(store_path, "SELECT run_id, model FROM runs")
        run_model = df["run_id"].map(dict(zip(names["run_id"], names["model"], strict=True)))
        df["model"] = df["model"].astype(object).where(df["model"].notna(), run_model)
    return df


def several_model_runs(store_path: str | Path) -> list[str]:
    """The runs whose calls name two or more models (one cheap query; issue 25)."""
    df = _read(store_path, "SELECT run_id FROM calls GROUP BY run_id "
                           "HAVING count(DISTINCT model) >= 2")
    return [str(r) for r in df["run_id"]]


def models_table(store_path: str | Path, run_id: str | None = None,
                 only: Collection[str] | None = None) -> pd.DataFrame:
    """One row per (run, model): :data:`MODEL_COLUMNS`, from
    :func:`~basevolve.store.per_model.model_breakdown` (issue 25), so the export shows
    the numbers of the run's summary and ``runs --json``.  A run from before several
    models existed has one row, its model; ``cost_usd`` is empty for an unpriced model.
    ``only``: just these runs."""
    from basevolve.store.per_model import model_breakdown

    rows = []
    with RunStore(store_path, create=False) as store:
        runs = store.query("SELECT run_id, model FROM runs ORDER BY created_at")
        for r in runs:
            if (run_id is None or r["run_id"] == run_id) and (only is None
                                                             or r["run_id"] in only):
                rows += [{"run_id": r["run_id"], **m}
                         for m in model_breakdown(store.query, r["run_id"], r["model"])]
    return pd.DataFrame(rows, columns=MODEL_COLUMNS)


def export_tables(store_path: str | Path, out_dir: str | Path, fmt: str,
                  run_id: str | None = None) -> list[Path]:
    """Write every raw table as ``<table>.csv`` or ``<table>.parquet`` (``runs`` and
    ``trajectories`` as ``runs_raw`` and ``trajectories_raw``: :data:`RAW_FILE_NAMES`),
    and the per-model breakdown as ``models`` (:func:`models_table`), and each program of
    several files as a folder of its files (``program_files/RUN/PROGRAM_ID/``, issue 31),
    and each multi-objective run's front as ``fronts/RUN.<fmt>`` + ``.json`` (issue 36);
    return the paths."""
    writers = {"csv": lambda df, p: df.to_csv(p, index=False),
               "parquet": lambda df, p: df.to_parquet(p, index=False)}
    if fmt not in writers:
        raise ConfigError(f"unknown export format {fmt!r}; use csv or parquet")
    if run_id is not None:
        with RunStore(store_path, create=False) as store:
            if store.get_run(run_id) is None:
                known = ", ".join(r["run_id"] for r in store.list_runs()) or "(none)"
                raise ConfigError(f"run {run_id!r} is not in {str(store_path)!r}; known: {known}")
    if fmt == "parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise ConfigError("--format parquet needs pyarrow (pip install pyarrow); "
                              "or export with --format csv") from None
    out = Path(out_dir)
    paths = []
    # Why catch OSError: an unwritable --out is a user mistake (one line, exit 2), not a
    # traceback; the store is only read, so nothing stored is at risk.
    try:
        out.mkdir(parents=True, exist_ok=True)
        for table in RAW_TABLES:
            path = out / f"{RAW_FILE_NAMES.get(table, table)}.{fmt}"
            writers[fmt](raw_table(store_path, table, run_id), path)
            paths.append(path)
        path = out / f"models.{fmt}"  # the per-model breakdown (issue 25)
        writers[fmt](models_table(store_path, run_id), path)
        paths.append(path)
        paths += export_program_files(store_path, out, run_id)  # folders (issue 31)
        paths += export_fronts(store_path, out, run_id, fmt)  # fronts (issue 36)
    except OSError as exc:
        where = exc.filename or out
        raise ConfigError(f"cannot write the export to {str(out)!r}: "
                          f"{exc.strerror or exc} ({where}); choose another --out") from None
    return paths


def summary_of(store_path: str | Path, run_id: str) -> dict:
    """The stored JSON summary of a run (empty dict if the run never finished)."""
    df = _read(store_path, "SELECT summary_json FROM run_summary WHERE run_id = ?", (run_id,))
    return {} if df.empty else json.loads(df.iloc[0, 0])
